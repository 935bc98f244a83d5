package openai

import (
	"container/heap"
	"strings"
	"testing"
	"time"
)

// simServer is a discrete-event continuous-batching server: at most n
// sequences decode at once (its KV cache), the rest wait first come first
// served; a sequence takes tokens steps of step + perSeq × the batch (a
// fixed-batch server when perSeq is 0). The batch is the one when a
// sequence is admitted (a simplification: the step time of a running
// sequence does not change with later admissions).
type simServer struct {
	n            int
	tokens       int
	step, perSeq time.Duration
	active       int
	queue        []time.Time // send times of the waiting requests
	events       eventHeap
}

type event struct{ done, start time.Time }

type eventHeap []event

func (h eventHeap) Len() int           { return len(h) }
func (h eventHeap) Less(i, j int) bool { return h[i].done.Before(h[j].done) }
func (h eventHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)        { *h = append(*h, x.(event)) }
func (h *eventHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (s *simServer) latency() time.Duration {
	return time.Duration(s.tokens) * (s.step + time.Duration(s.active)*s.perSeq)
}

func (s *simServer) submit(now time.Time) {
	if s.active < s.n {
		s.active++
		heap.Push(&s.events, event{done: now.Add(s.latency()), start: now})
		return
	}
	s.queue = append(s.queue, now)
}

// next completes the earliest request and admits a waiting one.
func (s *simServer) next() event {
	e := heap.Pop(&s.events).(event)
	if len(s.queue) > 0 {
		st := s.queue[0]
		s.queue = s.queue[1:]
		heap.Push(&s.events, event{done: e.done.Add(s.latency()), start: st})
	} else {
		s.active--
	}
	return e
}

// load is what the server's metrics would say.
func (s *simServer) load() ServerLoad {
	return ServerLoad{Running: float64(s.active), Waiting: float64(len(s.queue)), KVUsage: float64(s.active) / float64(s.n)}
}

// peak is the server's greatest throughput, sequences/s: its KV cache
// full.
func (s *simServer) peak() float64 {
	return float64(s.n) / (time.Duration(s.tokens) * (s.step + time.Duration(s.n)*s.perSeq)).Seconds()
}

// simulate keeps the limit in flight on s (scraping its metrics every
// 250 ms when metrics is set) for d and returns the limit's mean and the
// server's throughput over the second half, and the largest waiting queue
// in it.
func simulate(t *testing.T, cfg LimitConfig, s *simServer, metrics bool, d time.Duration) (meanLimit, rate float64, maxQueue int) {
	t.Helper()
	now := time.Unix(0, 0)
	l := newServerLimit(cfg, now)
	inflight := 0
	end, half := now.Add(d), now.Add(d/2)
	nextScrape := now
	var sum float64
	var samples, done int
	for now.Before(end) {
		for inflight < l.Limit() {
			s.submit(now)
			inflight++
			l.inFlight(now, inflight)
		}
		e := s.next()
		for metrics && !nextScrape.After(e.done) {
			l.observe(s.load(), inflight)
			nextScrape = nextScrape.Add(250 * time.Millisecond)
		}
		now = e.done
		inflight--
		l.success(now, e.start, 1, inflight)
		if now.After(half) {
			sum += float64(l.Limit())
			samples++
			done++
			maxQueue = max(maxQueue, len(s.queue))
		}
	}
	return sum / float64(samples), float64(done) / (d / 2).Seconds(), maxQueue
}

// servers are batching servers of very different sizes, and fixed-batch
// ones.
func simServers() map[string]func() *simServer {
	return map[string]func() *simServer{
		"batching, KV for 130": func() *simServer {
			return &simServer{n: 130, tokens: 64, step: 5 * time.Millisecond, perSeq: 100 * time.Microsecond}
		},
		"batching, KV for 1000": func() *simServer {
			return &simServer{n: 1000, tokens: 64, step: 10 * time.Millisecond, perSeq: 20 * time.Microsecond}
		},
		"batching, KV for 16": func() *simServer {
			return &simServer{n: 16, tokens: 256, step: 20 * time.Millisecond, perSeq: time.Millisecond}
		},
		"fixed batch of 3":  func() *simServer { return &simServer{n: 3, tokens: 10, step: 10 * time.Millisecond} },
		"fixed batch of 64": func() *simServer { return &simServer{n: 64, tokens: 10, step: 10 * time.Millisecond} },
	}
}

// TestLimitFromMetricsKeepsServerFull: driven by the server's running and
// waiting sequences, the limit keeps the KV cache full and a small queue
// (the target) waiting, on servers of any size, batching or not.
func TestLimitFromMetricsKeepsServerFull(t *testing.T) {
	cfg := DefaultLimitConfig()
	for name, mk := range simServers() {
		s := mk()
		mean, rate, maxQ := simulate(t, cfg, s, true, 120*time.Second)
		t.Logf("%-22s limit %.1f, %.1f of %.1f sequences/s (%.3f), at most %d waiting", name, mean, rate, s.peak(), rate/s.peak(), maxQ)
		if rate < 0.97*s.peak() {
			t.Errorf("%s: %.1f sequences/s, the server does %.1f", name, rate, s.peak())
		}
		target := max(float64(cfg.QueueMin), cfg.QueueRatio*float64(s.n))
		if float64(maxQ) > 3*target+2 || mean < float64(s.n) || mean > float64(s.n)+3*target+8 {
			t.Errorf("%s: limit %.1f, %d sequences waited on the server (target %.0f)", name, mean, maxQ, target)
		}
	}
}

// TestLimitThroughputClimb: without metrics the limit climbs the
// throughput curve: it reaches the peak of a batching server whose
// latency grows with its batch (where a latency limit stops early) and of
// a fixed-batch server, and settles within 1.6 × their batch.
func TestLimitThroughputClimb(t *testing.T) {
	cfg := DefaultLimitConfig()
	cfg.ProbeInterval = 10 * time.Second
	for name, mk := range simServers() {
		s := mk()
		mean, rate, _ := simulate(t, cfg, s, false, 240*time.Second)
		t.Logf("%-22s limit %.1f, %.1f of %.1f sequences/s (%.3f)", name, mean, rate, s.peak(), rate/s.peak())
		if rate < 0.95*s.peak() {
			t.Errorf("%s: %.1f sequences/s, the server does %.1f", name, rate, s.peak())
		}
		if mean < float64(s.n) || mean > 1.6*float64(s.n)+8 {
			t.Errorf("%s: mean limit %.1f", name, mean)
		}
	}
}

// TestLimitMetricsQueueShared: a queue above the target shrinks the limit
// whoever sent it; a limit the pool does not fill does not grow.
func TestLimitMetricsQueueShared(t *testing.T) {
	l := newServerLimit(DefaultLimitConfig(), time.Unix(0, 0))
	l.limit = 100
	l.inFlight(time.Unix(0, 0), 100)
	if !l.observe(ServerLoad{Running: 80, Waiting: 44, KVUsage: 1}, 100) || l.Limit() != 80 {
		t.Fatalf("limit %d after 44 waiting (target 4), want 80", l.Limit())
	}
	l.peak = 10
	if l.observe(ServerLoad{Running: 10, Waiting: 0, KVUsage: 0.1}, 10) || l.Limit() != 80 {
		t.Fatalf("limit %d: grew while the pool used 10 of it", l.Limit())
	}
	l.inFlight(time.Unix(0, 0), 80)
	l.observe(ServerLoad{Running: 80, Waiting: 0, KVUsage: 0.5}, 80)
	if l.Limit() != 160 {
		t.Fatalf("limit %d with the KV cache half empty, want 160 (doubled)", l.Limit())
	}
	if l.Mode() != "metrics" {
		t.Fatalf("mode %s", l.Mode())
	}
	l.noMetrics(time.Unix(1, 0))
	if l.Mode() != "throughput" || l.Limit() != 160 {
		t.Fatalf("mode %s, limit %d after the metrics went away", l.Mode(), l.Limit())
	}
}

// TestLimitErrors: errors halve the limit once per round trip.
func TestLimitErrors(t *testing.T) {
	now := time.Unix(100, 0)
	l := newServerLimit(DefaultLimitConfig(), now)
	l.limit = 64
	start := now.Add(-time.Second)
	l.overload(now, start)
	if l.Limit() != 32 {
		t.Fatalf("limit %d after an error, want 32", l.Limit())
	}
	// Requests sent before the decrease do not decrease it again.
	l.overload(now.Add(time.Millisecond), start)
	if l.Limit() != 32 {
		t.Fatalf("limit %d after an error of the same round trip", l.Limit())
	}
	l.overload(now.Add(2*time.Second), now.Add(time.Second))
	if l.Limit() != 16 {
		t.Fatalf("limit %d after an error of the next round trip, want 16", l.Limit())
	}
}

// TestParseLoad reads vLLM's and SGLang's scheduler gauges.
func TestParseLoad(t *testing.T) {
	vllm := `# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="Qwen/Qwen3-8B"} 12.0
vllm:num_requests_running{engine="1",model_name="Qwen/Qwen3-8B"} 10.0
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="Qwen/Qwen3-8B"} 3.0
vllm:num_requests_waiting{engine="1",model_name="Qwen/Qwen3-8B"} 0.0
vllm:gpu_cache_usage_perc{engine="0",model_name="Qwen/Qwen3-8B"} 0.1
vllm:kv_cache_usage_perc{engine="0",model_name="Qwen/Qwen3-8B"} 0.5
vllm:kv_cache_usage_perc{engine="1",model_name="Qwen/Qwen3-8B"} 0.75
vllm:e2e_request_latency_seconds_bucket{le="0.3",model_name="Qwen/Qwen3-8B"} 4.0
`
	l, err := ParseLoad(strings.NewReader(vllm))
	if err != nil || l != (ServerLoad{Running: 22, Waiting: 3, KVUsage: 0.75}) {
		t.Fatalf("vLLM: %+v, %v", l, err)
	}
	sglang := `sglang:num_running_reqs{model_name="m",tp_rank="0"} 7
sglang:num_running_reqs{model_name="m",tp_rank="1"} 7
sglang:num_queue_reqs{model_name="m",tp_rank="0"} 2 1712345678000
sglang:token_usage{model_name="m",tp_rank="0"} 0.28
`
	l, err = ParseLoad(strings.NewReader(sglang))
	if err != nil || l != (ServerLoad{Running: 7, Waiting: 2, KVUsage: 0.28}) {
		t.Fatalf("SGLang: %+v, %v", l, err)
	}
	if _, err := ParseLoad(strings.NewReader("go_goroutines 12\n")); err != errNoMetrics {
		t.Fatalf("no scheduler gauges: %v", err)
	}
	if got := serverRoot("http://h:8000/v1/"); got != "http://h:8000" {
		t.Fatalf("root %q", got)
	}
}
