package execute

import (
	"context"
	"os/exec"
	"testing"
)

// BenchmarkHumanEvalThroughput runs the sandbox throughput benchmark over
// the 164 canonical HumanEval solutions, each 5 times, as many at once as
// the pool has sandboxes (`murphy bench sandbox` prints the same).
//
//	go test ./stages/execute -run '^$' -bench HumanEvalThroughput -benchtime 1x
func BenchmarkHumanEvalThroughput(b *testing.B) {
	ts := humanEval(b)
	if _, err := exec.LookPath(FreshCommand()[0]); err != nil {
		b.Skip("bubblewrap not installed")
	}
	pool := testPool(b, 0)
	var r ThroughputResult
	for b.Loop() {
		var err error
		r, err = Throughput(context.Background(), &Evaluator{Runner: pool}, pool.Size(), 5, ts)
		if err != nil {
			b.Fatal(err)
		}
	}
	b.Log("\n" + r.String())
	b.ReportMetric(r.PoolRate(), "pool_execs/s")
	b.ReportMetric(r.FreshRate(), "fresh_execs/s")
	b.ReportMetric(r.Ratio(), "pool/fresh")
}
