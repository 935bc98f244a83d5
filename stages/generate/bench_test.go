package generate

import (
	"context"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/pipeline"
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
	s, err := New(cfg, StaticLookup(testTasks()), testCatalog(), prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	sc := DefaultSubmitConfig()
	sc.GroupSize, sc.TreesPerTask = 8, 1
	task := testTasks()[0]
	recs := make([]pipeline.Record, 64)
	for i := range recs {
		sc.RunID = "bench" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		p := RootPrompts(sc, &task, time.Unix(0, 0))[0]
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
