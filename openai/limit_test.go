package openai

import (
	"container/heap"
	"testing"
	"time"
)

// simServer is a discrete-event continuous-batching server: n sequences at
// once, each taking base, the rest queued first come first served.
type simServer struct {
	n      int
	base   time.Duration
	active int
	queue  []time.Time // start times of queued requests
	events eventHeap
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

func (s *simServer) submit(now time.Time) {
	if s.active < s.n {
		s.active++
		heap.Push(&s.events, event{done: now.Add(s.base), start: now})
		return
	}
	s.queue = append(s.queue, now)
}

// next completes the earliest request and starts a queued one.
func (s *simServer) next() event {
	e := heap.Pop(&s.events).(event)
	if len(s.queue) > 0 {
		st := s.queue[0]
		s.queue = s.queue[1:]
		heap.Push(&s.events, event{done: e.done.Add(s.base), start: st})
	} else {
		s.active--
	}
	return e
}

// simulate keeps the limiter's limit in flight on a server of n sequences
// for rounds round trips and returns the limit's mean over the second half
// and the server's utilisation over it.
func simulate(t *testing.T, cfg LimitConfig, n, rounds int) (meanLimit, util float64) {
	t.Helper()
	base := 100 * time.Millisecond
	now := time.Unix(0, 0)
	g := newGradientLimit(cfg, now)
	s := &simServer{n: n, base: base}
	inflight := 0
	end := now.Add(time.Duration(rounds) * base)
	half := now.Add(time.Duration(rounds/2) * base)
	var sum, busy float64
	var samples int
	last := now
	for now.Before(end) {
		for inflight < g.Limit() {
			s.submit(now)
			inflight++
			g.inFlight(inflight)
		}
		e := s.next()
		if now.After(half) {
			busy += float64(min(s.active+1, n)) * e.done.Sub(last).Seconds()
		}
		last = e.done
		now = e.done
		inflight--
		g.success(now, e.start, now.Sub(e.start).Seconds(), 1)
		if now.After(half) {
			sum += float64(g.Limit())
			samples++
		}
	}
	return sum / float64(samples), busy / (float64(n) * end.Sub(half).Seconds())
}

// TestGradientLimitFindsServerBatch: on servers of very different batch
// sizes the limit settles a little above the batch (never at a fixed
// number) and keeps the server busy.
func TestGradientLimitFindsServerBatch(t *testing.T) {
	cfg := DefaultLimitConfig()
	cfg.ProbeInterval = 0
	for _, n := range []int{3, 16, 64, 256, 1000} {
		mean, util := simulate(t, cfg, n, 400)
		t.Logf("server of %4d sequences: limit %.1f, utilisation %.3f", n, mean, util)
		if mean < float64(n) || mean > 1.5*float64(n)+8 {
			t.Errorf("server of %d sequences: mean limit %.1f, want in [%d, %.0f]", n, mean, n, 1.5*float64(n)+8)
		}
		if util < 0.97 {
			t.Errorf("server of %d sequences: utilisation %.3f", n, util)
		}
	}
}

// TestGradientLimitProbeFollowsDrift: when the no-load latency rises (the
// server got slower), the probe relearns it and the limit comes back
// instead of collapsing.
func TestGradientLimitProbeFollowsDrift(t *testing.T) {
	cfg := DefaultLimitConfig()
	cfg.ProbeInterval = 2 * time.Second
	now := time.Unix(0, 0)
	g := newGradientLimit(cfg, now)
	g.limit, g.slowStart, g.noLoad = 40, false, 0.010
	// The server now answers in 0.03 s per token at any load below 40.
	for i := 0; i < 2000; i++ {
		now = now.Add(5 * time.Millisecond)
		g.inFlight(g.Limit())
		g.success(now, now.Add(-30*time.Millisecond), 0.030, 1)
	}
	if g.Limit() < 30 {
		t.Fatalf("limit %d after the drift: it collapsed", g.Limit())
	}
}

// TestGradientLimitErrors: errors halve the limit once per round trip.
func TestGradientLimitErrors(t *testing.T) {
	now := time.Unix(100, 0)
	g := newGradientLimit(DefaultLimitConfig(), now)
	g.limit = 64
	start := now.Add(-time.Second)
	g.overload(now, start)
	if g.Limit() != 32 {
		t.Fatalf("limit %d after an error, want 32", g.Limit())
	}
	// Requests sent before the decrease do not decrease it again.
	g.overload(now.Add(time.Millisecond), start)
	if g.Limit() != 32 {
		t.Fatalf("limit %d after an error of the same round trip", g.Limit())
	}
	g.overload(now.Add(2*time.Second), now.Add(time.Second))
	if g.Limit() != 16 {
		t.Fatalf("limit %d after an error of the next round trip, want 16", g.Limit())
	}
}
