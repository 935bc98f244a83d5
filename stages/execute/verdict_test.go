package execute

import (
	"context"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/tasks/builtin"
	"github.com/murphy-rl/murphy/topics"
)

func TestOutputsMatch(t *testing.T) {
	for _, c := range []struct {
		actual, expected string
		tol              float64
		want             bool
	}{
		{"3\n", "3\n", 0, true},
		{"3  \n\n", "3", 0, true},
		{"4", "3", 0, false},
		{"2.0000001", "2.0", 0, true},
		{"2.1", "2.0", 0, false},
		{"2.000000000", "2", 0, false},   // an integer expected, no tolerance set
		{"2.000000000", "2", 1e-6, true}, // an integer expected: the same value as a decimal
		{"3.0000001", "3", 1e-6, false},  // an integer expected: no tolerance
		{"9007199254740993.0", "9007199254740993", 1e-6, true},
		{"9007199254740992", "9007199254740993", 1e-6, false},
		{"2.000000000", "2", 1e-6, true}, // the task sets one: numbers compare as numbers
		{"2.000000000 2.5", "2 2.5", 1e-6, true},
		{"1e0", "1", 1e-6, true},
		{"0x1.8p+0", "1.5", 1e-6, false}, // hex floats are not decimals
		{"0x1.8p+0", "1.5", 0, false},
		{"inf", "1e308", 1e-6, false},
		{"nan", "nan", 1e-6, true}, // equal as text
		{"nan", "1.0", 1e-6, false},
		{"1_000.0", "1000.0", 1e-6, false}, // digit separators are text
		{"+2.0", "2.0", 0, true},
		{".5", "0.5", 0, true},
		{"2", "2 3", 1e-6, false},
	} {
		if got := outputsMatch(c.actual, c.expected, c.tol); got != c.want {
			t.Errorf("outputsMatch(%q, %q, %g) = %v, want %v", c.actual, c.expected, c.tol, got, c.want)
		}
	}
}

// TestBuiltinReferencesInSandbox runs every built-in task's own reference
// through the hardened sandbox: hardening must never fail a correct program.
func TestBuiltinReferencesInSandbox(t *testing.T) {
	ts, err := builtin.Tasks()
	if err != nil {
		t.Fatal(err)
	}
	pool := testPool(t, 0)
	ev := &Evaluator{Runner: pool}
	kinds := map[string]int{}
	for i := range ts {
		task := &ts[i]
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		o, err := ev.Evaluate(ctx, task, task.Reference)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if o.Status != topics.StatusPassed {
			t.Errorf("%s (%s): reference got %s\n%s", task.TaskID, task.Kind, o.Status, o.Feedback)
		}
		kinds[task.Kind]++
	}
	if kinds[topics.KindPythonFunction] == 0 || kinds[topics.KindStdio] == 0 {
		t.Fatalf("built-in kinds %v: want both python-function and stdio", kinds)
	}
}
