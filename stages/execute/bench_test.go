package execute

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/sandbox"
	"github.com/murphy-rl/murphy/topics"
)

// BenchmarkHumanEvalThroughput evaluates the 164 canonical HumanEval
// solutions (a) in the warm pool, (b) in a fresh bubblewrap sandbox per
// solution with the same isolation and harness, and (c) with a fresh plain
// python3 per solution, the way the reference HumanEval harness runs them.
// All three run as many solutions at once as the machine has CPUs, in the
// same run, and report executions/s and the ratios a/b and a/c.
//
//	go test ./stages/execute -run '^$' -bench HumanEvalThroughput -benchtime 1x
func BenchmarkHumanEvalThroughput(b *testing.B) {
	ts := humanEval(b)
	pool := testPool(b, 0)
	workers := pool.Size()
	fresh, err := sandbox.NewFresh(sandbox.DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	defer fresh.Close()
	refs := make([]string, len(ts))
	for i := range ts {
		refs[i] = ts[i].Reference
	}
	dir := b.TempDir()
	var poolRate, freshRate, plainRate float64
	for b.Loop() {
		poolRate = rate(b, len(ts), func() { mustPass(b, "pool", evalAll(b, &Evaluator{Runner: pool}, workers, ts, refs)) })
		freshRate = rate(b, len(ts), func() { mustPass(b, "fresh", evalAll(b, &Evaluator{Runner: fresh}, workers, ts, refs)) })
		plainRate = rate(b, len(ts), func() { plainPython(b, dir, workers, ts) })
	}
	b.ReportMetric(poolRate, "pool_execs/s")
	b.ReportMetric(freshRate, "fresh_bwrap_execs/s")
	b.ReportMetric(plainRate, "plain_python_execs/s")
	b.ReportMetric(poolRate/freshRate, "pool/fresh_bwrap")
	b.ReportMetric(poolRate/plainRate, "pool/plain_python")
}

func rate(b *testing.B, n int, fn func()) float64 {
	b.Helper()
	start := time.Now()
	fn()
	return float64(n) / time.Since(start).Seconds()
}

func mustPass(b *testing.B, name string, outs []Outcome) {
	b.Helper()
	for _, o := range outs {
		if o.Status != topics.StatusPassed {
			b.Fatalf("%s: a canonical solution got %s:\n%s", name, o.Status, o.Feedback)
		}
	}
}

// plainPython runs prompt+solution+test+check(entry_point) in a fresh
// python3 per task, with a timeout and nothing else.
func plainPython(b *testing.B, dir string, workers int, ts []topics.Task) {
	b.Helper()
	files := make([]string, len(ts))
	for i, t := range ts {
		test := t.Check
		if test == "" {
			test = reassembleCheck(&t)
		}
		prog := t.Reference + "\n\n" + test + "\n\ncheck(" + t.EntryPoint + ")\n"
		files[i] = filepath.Join(dir, fmt.Sprintf("t%d.py", i))
		if err := os.WriteFile(files[i], []byte(prog), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(files) {
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				out, err := exec.CommandContext(ctx, "/usr/bin/python3", files[i]).CombinedOutput()
				cancel()
				if err != nil {
					b.Errorf("%s: %v\n%s", ts[i].TaskID, err, out)
				}
			}
		}()
	}
	wg.Wait()
}

// reassembleCheck turns split tests back into a check function.
func reassembleCheck(t *topics.Task) string {
	s := t.Setup + "\n\ndef check(candidate):\n"
	for _, tc := range t.Tests {
		if tc.Assert != "" {
			s += "    assert " + tc.Assert + "\n"
		} else {
			s += "    assert candidate(" + tc.Args + ") == " + tc.Expected + "\n"
		}
	}
	return s
}
