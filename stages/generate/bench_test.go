package generate

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/pipeline/pipelinetest"
	"github.com/murphy-rl/murphy/tasks"
	"github.com/murphy-rl/murphy/tasks/submit"
	"github.com/murphy-rl/murphy/topics"
	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkHandlePrompt measures the stage's core with the simulated policy
// (G=8 per prompt): decode the prompt, sample, build and encode the
// candidates. The baseline is encoding the same candidates alone, the cost
// any stage emitting them pays; the ratio says what sampling adds.
func BenchmarkHandlePrompt(b *testing.B) {
	cfg := DefaultConfig()
	cfg.InstanceID = "bench"
	cfg.MaxTreesInFlight = 0
	s, err := NewStage(cfg, tasks.NewMemory(testTasks()), testCatalog(), prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	sc := submit.DefaultConfig()
	sc.GroupSize, sc.TreesPerTask = 8, 1
	task := testTasks()[0]
	recs := make([]pipeline.Record, 64)
	for i := range recs {
		sc.RunID = "bench" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		p := submit.RootPrompts(sc, &task, time.Unix(0, 0))[0]
		v, _ := topics.Encode(p)
		recs[i] = pipeline.Record{Value: v}
	}
	ctx := context.Background()
	var p topics.Prompt
	_ = topics.Decode(recs[0].Value, &p)
	cands, err := s.Generate(ctx, &p)
	if err != nil {
		b.Fatal(err)
	}
	// Baseline: encode the candidates of one prompt, timed here (a nested
	// testing.Benchmark would deadlock on the benchmark lock).
	const baseRounds = 300
	start := time.Now()
	for range baseRounds {
		for _, c := range cands {
			if _, err := topics.Encode(c); err != nil {
				b.Fatal(err)
			}
		}
	}
	baseNs := float64(time.Since(start).Nanoseconds()) / baseRounds
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		if _, err := s.HandlePrompt(ctx, recs[i%len(recs)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
	perPrompt := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(8*1e9/perPrompt, "candidates/s")
	b.ReportMetric(perPrompt/baseNs, "x_encode_only")
}

// BenchmarkStageOnKafka measures candidates/s through the stage on the
// pipeline runtime and the real broker (MURPHY_KAFKA_BROKERS) with the
// simulated policy: 164 HumanEval tasks x 4 trees x G=8 per iteration, from
// the runtime's start (consumer group join included) to the last candidate
// read back. The baseline is producing the same number of candidate records
// straight to the broker and reading them back, in the same run.
func BenchmarkStageOnKafka(b *testing.B) {
	brokers := pipelinetest.Brokers(b)
	ts, _, err := tasks.Load(humanEvalPath, tasks.FormatHumanEval)
	if err != nil {
		b.Skipf("HumanEval: %v", err)
	}
	const g, k = 8, 4
	want := len(ts) * k * g
	kcfg := pipelinetest.Kafka(brokers)
	prod := pipeline.NewProducer(kcfg)
	defer prod.Close()
	ctx := context.Background()

	// Baseline: produce and read back want candidate-sized records.
	cat := pipelinetest.Catalog(b, brokers, 4)
	sample, _ := NewStage(DefaultConfig(), tasks.NewMemory(ts), cat, nil)
	sc := submit.DefaultConfig()
	sc.GroupSize = g
	p := submit.RootPrompts(sc, &ts[0], time.Now())[0]
	cands, err := sample.Generate(ctx, p)
	if err != nil {
		b.Fatal(err)
	}
	v, _ := topics.Encode(cands[0])
	outs := make([]pipeline.Out, want)
	for i := range outs {
		outs[i] = pipeline.Out{Topic: cat.Topic(topics.Candidates), Key: fmt.Sprint("t", i), Value: v}
	}
	start := time.Now()
	if err := prod.Produce(ctx, outs...); err != nil {
		b.Fatal(err)
	}
	pipelinetest.ReadN(b, brokers, cat.Topic(topics.Candidates), want, 5*time.Minute)
	base := time.Since(start)

	var total time.Duration
	for b.Loop() {
		cat := pipelinetest.Catalog(b, brokers, 4)
		sc := submit.DefaultConfig()
		sc.RunID, sc.GroupSize, sc.TreesPerTask = pipelinetest.Unique(b), g, k
		if _, err := submit.Publish(ctx, prod, cat, sc, ts, 0); err != nil {
			b.Fatal(err)
		}
		cfg := DefaultConfig()
		cfg.InstanceID, cfg.MaxTreesInFlight = "bench", 0
		runCtx, cancel := context.WithCancel(ctx)
		start := time.Now()
		stop := startStageB(b, runCtx, brokers, cat, cfg, tasks.NewMemory(ts))
		pipelinetest.ReadN(b, brokers, cat.Topic(topics.Candidates), want, 5*time.Minute)
		total += time.Since(start)
		cancel()
		stop()
	}
	per := total / time.Duration(b.N)
	b.ReportMetric(float64(want)/per.Seconds(), "candidates/s")
	b.ReportMetric(float64(want)/base.Seconds(), "baseline_records/s")
	b.ReportMetric(per.Seconds()/base.Seconds(), "x_produce_read_only")
}
