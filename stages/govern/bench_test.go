package govern

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/topics"
)

// BenchmarkHandle measures the stage's handler on a realistic failed
// execution (2,000 response tokens with logprobs, 6 KB of code, expanded)
// and reports it against the codec work alone (decode the execution, encode
// a sample of it) measured in the same run.
func BenchmarkHandle(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	ex := execution(failing(1), func(e *topics.Execution) {
		e.ResponseTokenIDs = make([]int32, 2000)
		e.ResponseLogprobs = make([]float32, 2000)
		for i := range e.ResponseTokenIDs {
			e.ResponseTokenIDs[i] = int32(r.IntN(150000))
			e.ResponseLogprobs[i] = -r.Float32() * 5
		}
		var sb strings.Builder
		for i := range 150 {
			sb.WriteString("    total_" + string(rune('a'+i%26)) + " = compute(values[" + string(rune('0'+i%10)) + "], weight)\n")
		}
		e.Code = "def solve(values, weight):\n" + sb.String()
		e.ResponseText = "```python\n" + e.Code + "```"
	})
	st, err := NewStage(DefaultConfig(), tasksWith(testTask()), nil, topics.DefaultCatalog(), prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	value, err := topics.Encode(ex)
	if err != nil {
		b.Fatal(err)
	}
	rec := pipeline.Record{Topic: "murphy.executions", Value: value}
	b.SetBytes(int64(len(value)))
	b.ReportAllocs()
	start := b.Elapsed()
	for b.Loop() {
		outs, err := st.Handle(context.Background(), rec)
		if err != nil || len(outs) != 2 {
			b.Fatal(err, len(outs))
		}
	}
	handle := b.Elapsed() - start
	n := b.N
	t0 := time.Now()
	for range n {
		var in topics.Execution
		if err := topics.Decode(value, &in); err != nil {
			b.Fatal(err)
		}
		s := topics.Sample{Execution: in, Route: topics.RouteTrain, FailureCause: CauseWrongAnswer, InGroupStats: true,
			LossWeights: make([]float32, len(in.ResponseTokenIDs))}
		if _, err := topics.Encode(&s); err != nil {
			b.Fatal(err)
		}
	}
	codec := time.Since(t0)
	b.ReportMetric(float64(handle.Microseconds())/float64(n), "us/record")
	b.ReportMetric(float64(handle)/float64(codec), "x_codec")
}
