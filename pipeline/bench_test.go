package pipeline_test

import (
	"context"
	"fmt"
	"runtime"
	"runtime/pprof"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/pipeline/pipelinetest"
	"github.com/murphy-rl/murphy/topics"
	dto "github.com/prometheus/client_model/go"
	"github.com/segmentio/kafka-go"
)

const benchRecords = 30000

func benchValues(n int) []kafka.Message {
	msgs := make([]kafka.Message, n)
	v := make([]byte, 1024)
	for i := range v {
		v[i] = byte('a' + i%26)
	}
	for i := range msgs {
		msgs[i] = kafka.Message{Key: []byte(fmt.Sprintf("tree-%d", i)), Value: v}
	}
	return msgs
}

func fill(b *testing.B, brokers []string, topic string, msgs []kafka.Message) {
	w := &kafka.Writer{Addr: kafka.TCP(brokers...), Topic: topic, Balancer: kafka.Murmur2Balancer{},
		RequiredAcks: kafka.RequireAll, BatchSize: 1000, BatchTimeout: 2 * time.Millisecond, AllowAutoTopicCreation: true}
	defer w.Close()
	for i := 0; i < len(msgs); i += 1000 {
		if err := w.WriteMessages(context.Background(), msgs[i:min(i+1000, len(msgs))]...); err != nil {
			b.Fatal(err)
		}
	}
}

// rawPassThrough is the baseline: a hand-written kafka-go loop that moves n
// records from in to out with a consumer group, batched writes (acks=all)
// and a commit per batch.
func rawPassThrough(b *testing.B, brokers []string, in, out, group string, n int) time.Duration {
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, GroupID: group, Topic: in, StartOffset: kafka.FirstOffset,
		MinBytes: 1, MaxBytes: 16 << 20, MaxWait: 50 * time.Millisecond, QueueCapacity: 1000})
	defer r.Close()
	w := &kafka.Writer{Addr: kafka.TCP(brokers...), Topic: out, Balancer: kafka.Murmur2Balancer{},
		RequiredAcks: kafka.RequireAll, BatchSize: 1000, BatchTimeout: 2 * time.Millisecond, AllowAutoTopicCreation: true}
	defer w.Close()
	ctx := context.Background()
	start := time.Now()
	batch := make([]kafka.Message, 0, 1000)
	flush := func() {
		outs := make([]kafka.Message, len(batch))
		for i, m := range batch {
			outs[i] = kafka.Message{Key: m.Key, Value: m.Value}
		}
		if err := w.WriteMessages(ctx, outs...); err != nil {
			b.Fatal(err)
		}
		if err := r.CommitMessages(ctx, batch...); err != nil {
			b.Fatal(err)
		}
	}
	for done := 0; done < n; {
		// Fill a batch until it is full or the reader has nothing for 2 ms.
		fctx, cancel := context.WithTimeout(ctx, 2*time.Millisecond)
		if len(batch) == 0 {
			cancel()
			fctx, cancel = ctx, func() {}
		}
		m, err := r.FetchMessage(fctx)
		cancel()
		if err == nil {
			batch = append(batch, m)
		}
		if len(batch) > 0 && (err != nil || len(batch) == cap(batch) || done+len(batch) == n) {
			flush()
			done += len(batch)
			batch = batch[:0]
		}
	}
	return time.Since(start)
}

// runtimePassThrough moves n records through a stage on the runtime and
// returns when the last one has been produced, after the runtime stopped.
func runtimePassThrough(b *testing.B, brokers []string, cat topics.Catalog, in, out string, n, conc int) time.Duration {
	kc := pipelinetest.Kafka(brokers)
	rt, err := pipeline.NewRuntime(pipeline.RuntimeConfig{Kafka: kc, Catalog: cat, Name: "bench", GroupPrefix: cat.Prefix + in + "."})
	if err != nil {
		b.Fatal(err)
	}
	err = rt.AddStage(pipeline.Stage{Name: "pass", Inputs: []string{in}, Concurrency: conc,
		Handler: func(_ context.Context, rec pipeline.Record) ([]pipeline.Out, error) {
			return []pipeline.Out{{Topic: out, Key: string(rec.Key), Value: rec.Value}}, nil
		}})
	if err != nil {
		b.Fatal(err)
	}
	// Outputs are counted once produced (acknowledged by the broker).
	produced := rt.Metrics().Out.WithLabelValues("pass", out)
	moved := func() int {
		var m dto.Metric
		if err := produced.Write(&m); err != nil {
			b.Fatal(err)
		}
		return int(m.GetCounter().GetValue())
	}
	ctx, cancel := context.WithCancel(context.Background())
	start := time.Now()
	stopped := make(chan error, 1)
	go func() { stopped <- rt.Run(ctx) }()
	for moved() < n {
		time.Sleep(2 * time.Millisecond)
	}
	took := time.Since(start)
	cancel()
	if err := <-stopped; err != nil {
		b.Fatal(err)
	}
	return took
}

// cpuTime is the process's CPU time so far (user + system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// passRound is one measurement: wall time, this process's CPU time, and
// its heap allocations (count and bytes).
type passRound struct {
	wall, cpu      time.Duration
	allocs, aBytes uint64
}

func measure(f func() time.Duration) passRound {
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	c := cpuTime()
	wall := f()
	r := passRound{wall: wall, cpu: cpuTime() - c}
	runtime.ReadMemStats(&m1)
	r.allocs, r.aBytes = m1.Mallocs-m0.Mallocs, m1.TotalAlloc-m0.TotalAlloc
	return r
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkPassThrough reports records/s through a pass-through stage on the
// runtime against raw kafka-go moving the same records through the same hop,
// measured in the same run on the real broker. Target ratio ≥ 0.7.
//
// The broker shares the machine, so one pass of each is noisy: after a
// warm-up pass of each (the broker's JIT, the offsets topic), every iteration
// runs passRounds rounds, alternating which goes first, and reports the
// medians, the median of the per-round ratios, and the CPU this process
// spent per record on each side.
func BenchmarkPassThrough(b *testing.B) {
	const passRounds = 3
	brokers := pipelinetest.Brokers(b)
	msgs := benchValues(benchRecords)
	// round moves n records both ways on fresh topics; rawFirst picks the order.
	round := func(n int, rawFirst bool) (raw, run passRound) {
		cat := pipelinetest.Catalog(b, brokers, 8)
		rawIn, rawOut := cat.Topic(topics.Prompts), cat.Topic(topics.Candidates)
		rtIn, rtOut := cat.Topic(topics.Executions), cat.Topic(topics.Samples)
		fill(b, brokers, rawIn, msgs[:n])
		fill(b, brokers, rtIn, msgs[:n])
		// Profile labels tell the two sides apart (go test -cpuprofile,
		// then pprof -tagfocus side=runtime).
		doRaw := func() {
			pprof.Do(context.Background(), pprof.Labels("side", "raw"), func(context.Context) {
				raw = measure(func() time.Duration { return rawPassThrough(b, brokers, rawIn, rawOut, cat.Prefix+"raw", n) })
			})
		}
		doRun := func() {
			pprof.Do(context.Background(), pprof.Labels("side", "runtime"), func(context.Context) {
				run = measure(func() time.Duration { return runtimePassThrough(b, brokers, cat, rtIn, rtOut, n, 2048) })
			})
		}
		if rawFirst {
			doRaw()
			doRun()
		} else {
			doRun()
			doRaw()
		}
		return raw, run
	}
	round(benchRecords/6, true) // warm-up, not measured
	b.ResetTimer()
	for b.Loop() {
		var rawRates, runRates, ratios, rawCPU, runCPU, rawAllocs, runAllocs, rawBytes, runBytes []float64
		for i := range passRounds {
			raw, run := round(benchRecords, i%2 == 0)
			rawRates = append(rawRates, benchRecords/raw.wall.Seconds())
			runRates = append(runRates, benchRecords/run.wall.Seconds())
			ratios = append(ratios, raw.wall.Seconds()/run.wall.Seconds())
			rawCPU = append(rawCPU, float64(raw.cpu.Microseconds())/benchRecords)
			runCPU = append(runCPU, float64(run.cpu.Microseconds())/benchRecords)
			rawAllocs = append(rawAllocs, float64(raw.allocs)/benchRecords)
			runAllocs = append(runAllocs, float64(run.allocs)/benchRecords)
			rawBytes = append(rawBytes, float64(raw.aBytes)/benchRecords)
			runBytes = append(runBytes, float64(run.aBytes)/benchRecords)
		}
		b.ReportMetric(median(rawRates), "raw_records/s")
		b.ReportMetric(median(runRates), "runtime_records/s")
		b.ReportMetric(median(ratios), "ratio")
		b.ReportMetric(median(rawCPU), "raw_cpu_µs/record")
		b.ReportMetric(median(runCPU), "runtime_cpu_µs/record")
		b.ReportMetric(median(rawAllocs), "raw_allocs/record")
		b.ReportMetric(median(runAllocs), "runtime_allocs/record")
		b.ReportMetric(median(rawBytes), "raw_B/record")
		b.ReportMetric(median(runBytes), "runtime_B/record")
	}
}
