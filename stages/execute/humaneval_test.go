package execute

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/sandbox"
	"github.com/murphy-rl/murphy/tasks"
	"github.com/murphy-rl/murphy/topics"
)

// humanEvalPath is the reference data, used by path and never copied.
const humanEvalPath = "../../../shared/data/humaneval/HumanEval.jsonl.gz"

func humanEval(t testing.TB) []topics.Task {
	t.Helper()
	if _, err := os.Stat(humanEvalPath); err != nil {
		t.Skipf("HumanEval data not found at %s", humanEvalPath)
	}
	ts, lerrs, err := tasks.Load(humanEvalPath, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(lerrs) != 0 || len(ts) != 164 {
		t.Fatalf("loaded %d tasks, line errors %v", len(ts), lerrs)
	}
	return ts
}

// testPool starts a pool sized to the machine, skipping where sandboxing
// is impossible (not root, no bubblewrap).
func testPool(t testing.TB, workers int) *sandbox.Pool {
	t.Helper()
	cfg := sandbox.DefaultConfig()
	cfg.Workers = workers
	// A small slot fence makes the fork-and-allocate case hit it quickly.
	cfg.SlotMemoryMB = 1024
	if os.Geteuid() != 0 {
		t.Skip("the sandbox pool needs root")
	}
	if _, err := exec.LookPath(cfg.Bwrap); err != nil {
		t.Skip("bubblewrap not installed (apt-get install -y bubblewrap)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := sandbox.NewPool(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// evalAll evaluates programs[i] against ts[i] with as many goroutines as
// the pool has sandboxes.
func evalAll(t testing.TB, ev *Evaluator, workers int, ts []topics.Task, programs []string) []Outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	outs := make([]Outcome, len(ts))
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				o, err := ev.Evaluate(ctx, &ts[i], programs[i])
				if err != nil {
					t.Error(err)
					return
				}
				outs[i] = o
			}
		}()
	}
	for i := range ts {
		next <- i
	}
	close(next)
	wg.Wait()
	return outs
}

var returnLine = regexp.MustCompile(`(?m)^(\s*)return\b.*$`)

// breakReturns replaces every return statement of a canonical solution
// with `return None`.
func breakReturns(solution string) string {
	return returnLine.ReplaceAllString(solution, "${1}return None")
}

func TestHumanEvalReference(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 164 tasks three times")
	}
	ts := humanEval(t)
	pool := testPool(t, 0)
	ev := &Evaluator{Runner: pool}
	refs := make([]string, len(ts))
	broken := make([]string, len(ts))
	for i := range ts {
		refs[i] = ts[i].Reference
		sol := strings.TrimPrefix(ts[i].Reference, ts[i].Prompt)
		broken[i] = ts[i].Prompt + breakReturns(sol)
		if broken[i] == refs[i] {
			t.Fatalf("%s: no return statement to break", ts[i].TaskID)
		}
	}
	first := evalAll(t, ev, pool.Size(), ts, refs)
	for i, o := range first {
		if o.Status != topics.StatusPassed || o.TestsPassed != o.TestsTotal {
			t.Errorf("%s: reference %s %d/%d\n%s", ts[i].TaskID, o.Status, o.TestsPassed, o.TestsTotal, o.Feedback)
		}
	}
	second := evalAll(t, ev, pool.Size(), ts, refs)
	for i := range first {
		if !sameOutcome(first[i], second[i]) {
			t.Errorf("%s: runs differ: %+v vs %+v", ts[i].TaskID, first[i], second[i])
		}
	}
	bad := evalAll(t, ev, pool.Size(), ts, broken)
	for i, o := range bad {
		if o.Status == topics.StatusPassed || o.Status == topics.StatusSandboxError {
			t.Errorf("%s: broken solution got %s %d/%d", ts[i].TaskID, o.Status, o.TestsPassed, o.TestsTotal)
		}
	}
	badAgain := evalAll(t, ev, pool.Size(), ts, broken)
	for i := range bad {
		if !sameOutcome(bad[i], badAgain[i]) {
			t.Errorf("%s: broken runs differ:\n%s\nvs\n%s", ts[i].TaskID, bad[i].Feedback, badAgain[i].Feedback)
		}
	}
	st := pool.Stats()
	if st.Restarts != 0 {
		t.Errorf("%d sandbox restarts during HumanEval", st.Restarts)
	}
}

// sameOutcome compares everything but the duration.
func sameOutcome(a, b Outcome) bool {
	if a.Status != b.Status || a.TestsPassed != b.TestsPassed || a.TestsTotal != b.TestsTotal ||
		a.Feedback != b.Feedback || len(a.Results) != len(b.Results) {
		return false
	}
	for i := range a.Results {
		if a.Results[i] != b.Results[i] {
			return false
		}
	}
	return true
}
