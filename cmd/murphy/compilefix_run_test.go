package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/murphy-rl/murphy/internal/dataset"
)

// TestRunCompileFix runs the built-in compile-fix tasks through the whole
// pipeline (patch, build sandbox, diagnostics, tiered rewards, refinements
// from the build's feedback) and checks what reaches the Arrow files: every
// tree, rewards on the three tiers, and refinements at turn 2.
func TestRunCompileFix(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the pipeline")
	}
	if os.Geteuid() != 0 {
		t.Skip("the build sandbox needs root")
	}
	out := filepath.Join(t.TempDir(), "out")
	stdout, errOut, err := runMurphy(t, "run", "--out", out, "--tasks", "builtin", "--kinds", "compile-fix", "--turns", "2", "--group-sizes", "3,2",
		"--calibrate=false", "--progress", "0", "--execute.sandbox.workers", "1", "--execute.compile-fix.builder.workers", "2")
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, stdout, errOut)
	}
	t.Logf("\n%s", stdout)
	rows, err := dataset.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	tiers := map[float64]int{}
	turn2, tasks := 0, map[string]bool{}
	for _, r := range rows {
		if !strings.HasPrefix(r["task_id"].(string), "murphy/cf-") {
			t.Fatalf("row of task %v in a compile-fix run", r["task_id"])
		}
		tasks[r["task_id"].(string)] = true
		if r["route"] == "train" {
			tiers[num(t, r["reward"])]++
		}
		if num(t, r["turn"]) == 2 {
			turn2++
		}
	}
	if len(tasks) < 12 {
		t.Fatalf("rows of %d tasks, want every built-in compile-fix task", len(tasks))
	}
	for _, tier := range []float64{0, 0.5, 1} {
		if tiers[tier] == 0 {
			t.Errorf("no trained row with reward %v: %v", tier, tiers)
		}
	}
	if len(tiers) > 3 {
		t.Errorf("rewards outside the tiers: %v", tiers)
	}
	if turn2 == 0 {
		t.Error("no refinement (turn 2) rows")
	}
	// The method's process rewards act with the defaults: trained episodes
	// whose patch built carry step scores, the others none.
	scored := 0
	for _, r := range rows {
		steps, _ := r["step_scores"].([]any)
		compiled := r["status"] == "passed" || r["status"] == "wrong_answer"
		switch {
		case r["route"] != "train":
		case compiled && len(steps) > 0:
			scored++
		case !compiled && len(steps) > 0:
			t.Fatalf("a %v episode carries step scores %v", r["status"], steps)
		}
	}
	if scored == 0 {
		t.Error("no compiled episode carries step scores")
	}
	for _, metric := range []string{"strict accuracy (tier 1)", "degenerate share", "steps per episode"} {
		if !strings.Contains(stdout, metric) {
			t.Errorf("the summary does not show %q", metric)
		}
	}
}

// num reads a numeric column value.
func num(t *testing.T, v any) float64 {
	t.Helper()
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			t.Fatal(err)
		}
		return f
	case float64:
		return x
	case float32:
		return float64(x)
	case int32:
		return float64(x)
	case int64:
		return float64(x)
	case int:
		return float64(x)
	}
	t.Fatalf("not a number: %T %v", v, v)
	return 0
}
