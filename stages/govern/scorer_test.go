package govern

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/murphy-rl/murphy/topics"
)

// trajectory builds a multi-step repair response: one <tool_call> per step,
// each step 10 tokens long.
func trajectory(calls ...map[string]any) func(*topics.Execution) {
	return func(e *topics.Execution) {
		var sb strings.Builder
		e.StepEnds = nil
		for i, c := range calls {
			b, _ := json.Marshal(c)
			fmt.Fprintf(&sb, "Step %d: let me act.\n<tool_call>\n%s\n</tool_call>\n", i+1, b)
			e.StepEnds = append(e.StepEnds, 10*(i+1))
		}
		e.ResponseText = sb.String()
		e.ResponseTokenIDs = seq(10 * len(calls))
		for i := range e.ResponseTokenIDs {
			e.ResponseTokenIDs[i] += int32(1000 * (i / 10)) // steps differ in tokens
		}
		e.ResponseLogprobs = make([]float32, len(e.ResponseTokenIDs))
	}
}

func toolCall(tool string, args map[string]any) map[string]any {
	return map[string]any{"name": tool, "arguments": args}
}

func TestHeuristicScorer(t *testing.T) {
	h := DefaultConfig().Heuristic
	read := func(p string) map[string]any { return toolCall("read_file", map[string]any{"path": p}) }
	cases := []struct {
		name  string
		calls []map[string]any
		want  []float32
	}{
		{"re-reading an unchanged file is wasted", []map[string]any{read("src/a.py"), read("./src/a.py"), read("src/b.py")},
			[]float32{1, 0.2, 1}},
		{"re-reading after an edit is not", []map[string]any{
			read("a.py"),
			toolCall("str_replace", map[string]any{"path": "a.py", "old_str": "a - b", "new_str": "a + b"}),
			read("a.py"),
		}, []float32{1, 1, 1}},
		{"no-op edit", []map[string]any{
			read("a.py"),
			toolCall("str_replace", map[string]any{"path": "a.py", "old_str": "return  a - b", "new_str": "return a - b"}),
		}, []float32{1, 0}},
		{"rewriting a file with the same content", []map[string]any{
			toolCall("write_file", map[string]any{"path": "a.py", "content": "x = 1\n"}),
			toolCall("run", map[string]any{"command": "pytest -q"}),
			toolCall("write_file", map[string]any{"path": "a.py", "content": "x = 1\n"}),
		}, []float32{1, 1, 0}},
		{"empty patch", []map[string]any{
			toolCall("apply_patch", map[string]any{"patch": "--- a/x.c\n+++ b/x.c\n@@ -1 +1 @@\n-int x;\n+int  x;\n"}),
		}, []float32{0}},
		{"running the tests twice without a change", []map[string]any{
			toolCall("bash", map[string]any{"command": "pytest -q"}),
			toolCall("bash", map[string]any{"command": "pytest -q"}),
			toolCall("edit_file", map[string]any{"path": "a.py", "old": "-", "new": "+"}),
			toolCall("bash", map[string]any{"command": "pytest -q"}),
		}, []float32{1, 0.1, 1, 1}},
		{"shell inspections", []map[string]any{
			toolCall("bash", map[string]any{"command": "cat src/a.py"}),
			toolCall("bash", map[string]any{"command": "sed -n '1,40p' src/a.py"}),
			toolCall("bash", map[string]any{"command": "cat ./src/a.py | head"}),
			toolCall("bash", map[string]any{"command": "sed -i 's/-/+/' src/a.py"}),
			toolCall("bash", map[string]any{"command": "cat src/a.py"}),
		}, []float32{1, 1, 0.2, 1, 1}},
		{"viewing another range is new", []map[string]any{
			toolCall("str_replace_editor", map[string]any{"command": "view", "path": "a.py", "view_range": []int{1, 50}}),
			toolCall("str_replace_editor", map[string]any{"command": "view", "path": "a.py", "view_range": []int{51, 100}}),
			toolCall("str_replace_editor", map[string]any{"command": "view", "path": "a.py", "view_range": []int{1, 50}}),
		}, []float32{1, 1, 0.2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ex := execution(trajectory(tc.calls...))
			steps, aligned := alignSteps(&ex.Candidate)
			if !aligned || len(steps) != len(tc.calls) {
				t.Fatalf("aligned %v, %d steps", aligned, len(steps))
			}
			got, err := NewHeuristicScorer(h).Score(context.Background(), testTask(), ex, steps, aligned)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("scores %v, want %v", got, tc.want)
			}
		})
	}
}

func TestHeuristicScorerWithoutToolCalls(t *testing.T) {
	// Steps without recognisable calls: identical token sequences repeat.
	ex := execution(func(e *topics.Execution) {
		e.ResponseText = "free text the scorer cannot read"
		e.ResponseTokenIDs = []int32{1, 2, 3, 4, 1, 2, 3, 4, 5, 6, 1, 2, 3, 4}
		e.ResponseLogprobs = make([]float32, 14)
		e.StepEnds = []int{4, 8, 10, 14}
	})
	steps, aligned := alignSteps(&ex.Candidate)
	if aligned {
		t.Fatal("free text cannot be aligned with 4 steps")
	}
	got, _ := NewHeuristicScorer(DefaultConfig().Heuristic).Score(context.Background(), testTask(), ex, steps, aligned)
	if want := []float32{1, 0.1, 1, 0.1}; !slices.Equal(got, want) {
		t.Fatalf("scores %v, want %v", got, want)
	}
}

// TestProcessScoresBecomeWeights: scores weight their steps' tokens, are
// carried on the sample, and never change the reward.
func TestProcessScoresBecomeWeights(t *testing.T) {
	calls := []map[string]any{
		toolCall("read_file", map[string]any{"path": "a.py"}),
		toolCall("read_file", map[string]any{"path": "a.py"}),
		toolCall("str_replace", map[string]any{"path": "a.py", "old_str": "a - b", "new_str": "a + b"}),
	}
	for _, scorer := range []string{ScorerNone, ScorerHeuristic} {
		cfg := DefaultConfig()
		cfg.Scorer = scorer
		cfg.RewardPolicy = topics.RewardTiered
		res, err := newGovernor(t, cfg).Govern(context.Background(), execution(failing(1), trajectory(calls...)), tasksWith(testTask()))
		if err != nil {
			t.Fatal(err)
		}
		s := res.Sample
		if s.Reward != 0.5 || s.Route != topics.RouteTrain {
			t.Fatalf("%s: reward %g route %s", scorer, s.Reward, s.Route)
		}
		want := slices.Repeat([]float32{1}, 30)
		if scorer == ScorerHeuristic {
			for i := 10; i < 20; i++ {
				want[i] = 0.2
			}
			if !slices.Equal(s.StepScores, []float32{1, 0.2, 1}) {
				t.Fatalf("step scores %v", s.StepScores)
			}
		} else if s.StepScores != nil {
			t.Fatalf("none scorer produced scores %v", s.StepScores)
		}
		if !slices.Equal(s.LossWeights, want) {
			t.Fatalf("%s: weights %v", scorer, s.LossWeights)
		}
	}
}

// failingScorer always fails.
type failingScorer struct{}

func (failingScorer) Name() string { return "failing" }
func (failingScorer) Score(context.Context, *topics.Task, *topics.Execution, []Step, bool) ([]float32, error) {
	return nil, &ScorerError{Scorer: "failing", Err: fmt.Errorf("model unavailable")}
}

func TestScorerFailure(t *testing.T) {
	for _, mode := range []string{ScorerFailureMask, ScorerFailureUnscored} {
		cfg := DefaultConfig()
		cfg.ScorerFailure = mode
		multiStep := trajectory(toolCall("read_file", map[string]any{"path": "a.py"}), toolCall("run", map[string]any{"command": "pytest"}))
		res, err := newGovernor(t, cfg, WithScorer(failingScorer{})).Govern(context.Background(), execution(failing(1), multiStep), tasksWith(testTask()))
		if err != nil {
			t.Fatal(err)
		}
		s := res.Sample
		switch mode {
		case ScorerFailureMask:
			if s.FailureCause != CauseScorer || s.Route != topics.RouteMasked || res.Refinement != nil {
				t.Fatalf("mask: cause %s route %s", s.FailureCause, s.Route)
			}
		case ScorerFailureUnscored:
			if s.FailureCause != CauseWrongAnswer || s.StepScores != nil || s.LossWeights[0] != 1 || res.Refinement == nil {
				t.Fatalf("unscored: %+v", s)
			}
		}
	}
}

func TestLossWeights(t *testing.T) {
	spans := []Span{{0, 2}, {2, 5}, {5, 6}}
	cases := []struct {
		route  string
		scores []float32
		want   []float32
	}{
		{topics.RouteMasked, nil, []float32{0, 0, 0, 0, 0, 0}},
		{topics.RouteLastStepPenalty, nil, []float32{0, 0, 0, 0, 0, 1}},
		{topics.RouteTrain, nil, []float32{1, 1, 1, 1, 1, 1}},
		{topics.RouteTrain, []float32{0.5, 0, 1}, []float32{0.5, 0.5, 0, 0, 0, 1}},
	}
	for _, tc := range cases {
		if got := LossWeights(tc.route, spans, tc.scores, 6, 1); !slices.Equal(got, tc.want) {
			t.Errorf("%s %v: %v, want %v", tc.route, tc.scores, got, tc.want)
		}
	}
}

func TestStepSpans(t *testing.T) {
	mk := func(n int, ends ...int) *topics.Candidate {
		return &topics.Candidate{ResponseTokenIDs: seq(n), StepEnds: ends}
	}
	cases := []struct {
		c    *topics.Candidate
		want []Span
	}{
		{mk(5), []Span{{0, 5}}},
		{mk(0), []Span{{0, 0}}},
		{mk(6, 2, 6), []Span{{0, 2}, {2, 6}}},
		{mk(8, 2, 6), []Span{{0, 2}, {2, 6}, {6, 8}}},
	}
	for _, tc := range cases {
		if got := StepSpans(tc.c); !slices.Equal(got, tc.want) {
			t.Errorf("%v: %v, want %v", tc.c.StepEnds, got, tc.want)
		}
	}
}

func TestAlignSteps(t *testing.T) {
	// One call per step but the last (a final answer).
	ex := execution(func(e *topics.Execution) {
		e.ResponseText = "look\n<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.py\"}}</tool_call>\nfixed it: done"
		e.StepEnds = []int{10}
	})
	steps, ok := alignSteps(&ex.Candidate)
	if !ok || len(steps) != 2 || steps[0].Action == nil || steps[0].Action.Tool != "read_file" || steps[1].Text != "\nfixed it: done" {
		t.Fatalf("aligned %v steps %+v", ok, steps)
	}
	// OpenAI-style function objects with string arguments, in json fences.
	ex = execution(func(e *topics.Execution) {
		e.ResponseText = "```json\n{\"type\": \"function\", \"function\": {\"name\": \"view\", \"arguments\": \"{\\\"path\\\": \\\"b.py\\\"}\"}}\n```\n"
	})
	steps, ok = alignSteps(&ex.Candidate)
	if !ok || steps[0].Action == nil || steps[0].Action.Tool != "view" || steps[0].Action.Args["path"] != "b.py" {
		t.Fatalf("function call not parsed: %+v", steps[0].Action)
	}
}

// countingScorer gives every step the same score and counts its calls.
type countingScorer struct {
	score float32
	calls *int
}

func (countingScorer) Name() string { return "counting" }
func (s countingScorer) Score(_ context.Context, _ *topics.Task, _ *topics.Execution, steps []Step, _ bool) ([]float32, error) {
	*s.calls++
	return slices.Repeat([]float32{s.score}, len(steps)), nil
}

// TestScoresOnlyForCompiledTrajectories: process scores apply to train
// samples whose program compiled/parsed; a compile error keeps uniform
// weights and no scores, and its scorer is never asked (so it cannot fail
// either).
func TestScoresOnlyForCompiledTrajectories(t *testing.T) {
	calls := []map[string]any{
		toolCall("read_file", map[string]any{"path": "a.py"}),
		toolCall("read_file", map[string]any{"path": "a.py"}),
		toolCall("str_replace", map[string]any{"path": "a.py", "old_str": "a - b", "new_str": "a + b"}),
	}
	ones := slices.Repeat([]float32{1}, 30)
	cfg := DefaultConfig()
	cfg.Scorer = ScorerHeuristic
	g := newGovernor(t, cfg)
	res, err := g.Govern(context.Background(), execution(status(topics.StatusCompileError), trajectory(calls...)), tasksWith(testTask()))
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Sample; s.FailureCause != CauseCompileError || s.StepScores != nil || !slices.Equal(s.LossWeights, ones) {
		t.Fatalf("compile error: cause %s scores %v weights %v", s.FailureCause, s.StepScores, s.LossWeights)
	}
	// The same trajectory compiled (a runtime error) is scored.
	res, err = g.Govern(context.Background(), execution(status(topics.StatusRuntimeError), trajectory(calls...)), tasksWith(testTask()))
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Sample; !slices.Equal(s.StepScores, []float32{1, 0.2, 1}) || s.LossWeights[10] != 0.2 {
		t.Fatalf("runtime error: scores %v weights %v", s.StepScores, s.LossWeights)
	}
	// A failing scorer is not asked about a compile error.
	res, err = newGovernor(t, DefaultConfig(), WithScorer(failingScorer{})).Govern(context.Background(),
		execution(status(topics.StatusCompileError), trajectory(calls...)), tasksWith(testTask()))
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Sample; s.FailureCause != CauseCompileError || s.Route != topics.RouteTrain || !slices.Equal(s.LossWeights, ones) || res.Refinement == nil {
		t.Fatalf("compile error with a failing scorer: cause %s route %s", s.FailureCause, s.Route)
	}
}

// TestSingleStepResponsesUnscored: a response without step boundaries gets
// weight 1 everywhere and no scores; the scorer is not asked.
func TestSingleStepResponsesUnscored(t *testing.T) {
	n := 0
	res, err := newGovernor(t, DefaultConfig(), WithScorer(countingScorer{score: 0.3, calls: &n})).Govern(context.Background(),
		execution(failing(1)), tasksWith(testTask()))
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Sample; n != 0 || s.StepScores != nil || !slices.Equal(s.LossWeights, slices.Repeat([]float32{1}, 20)) {
		t.Fatalf("single step: %d scorer calls, scores %v, weights %v", n, s.StepScores, s.LossWeights)
	}
	// Nor can a failing scorer mask it.
	res, err = newGovernor(t, DefaultConfig(), WithScorer(failingScorer{})).Govern(context.Background(), execution(failing(1)), tasksWith(testTask()))
	if err != nil || res.Sample.FailureCause != CauseWrongAnswer || res.Sample.Route != topics.RouteTrain {
		t.Fatalf("single step with a failing scorer: %v cause %s", err, res.Sample.FailureCause)
	}
	// The heuristic scorer leaves it unscored too.
	cfg := DefaultConfig()
	cfg.Scorer = ScorerHeuristic
	res, err = newGovernor(t, cfg).Govern(context.Background(), execution(failing(1)), tasksWith(testTask()))
	if err != nil || res.Sample.StepScores != nil {
		t.Fatalf("heuristic, single step: %v scores %v", err, res.Sample.StepScores)
	}
}

// TestScorerWholeResponses: asked explicitly, the scorer rescales a
// single-step response too (but still not a compile error).
func TestScorerWholeResponses(t *testing.T) {
	cfg := DefaultConfig()
	if cfg.ScorerWholeResponses {
		t.Fatal("scorer_whole_responses is on by default")
	}
	cfg.ScorerWholeResponses = true
	n := 0
	g := newGovernor(t, cfg, WithScorer(countingScorer{score: 0.3, calls: &n}))
	res, err := g.Govern(context.Background(), execution(failing(1)), tasksWith(testTask()))
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Sample; n != 1 || !slices.Equal(s.StepScores, []float32{0.3}) || !slices.Equal(s.LossWeights, slices.Repeat([]float32{0.3}, 20)) {
		t.Fatalf("whole response: %d calls, scores %v, weights %v", n, s.StepScores, s.LossWeights)
	}
	res, err = g.Govern(context.Background(), execution(status(topics.StatusCompileError)), tasksWith(testTask()))
	if err != nil || n != 1 || res.Sample.StepScores != nil || res.Sample.LossWeights[0] != 1 {
		t.Fatalf("compile error scored: %v calls %d scores %v", err, n, res.Sample.StepScores)
	}
}

func TestPatchIsNoOp(t *testing.T) {
	for _, tc := range []struct {
		patch string
		noop  bool
	}{
		{"", true},
		{"--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n-x = f(a,b)\n+x = f(a, b)\n y = 1\n", true},
		{"--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n", false},
		{"*** Begin Patch\n*** Update File: x.py\n-x = 1\n+x = 2\n*** End Patch\n", false}, // not a unified diff: unknown, not a no-op
	} {
		if got := patchIsNoOp(tc.patch); got != tc.noop {
			t.Errorf("patchIsNoOp(%q) = %v, want %v", tc.patch, got, tc.noop)
		}
	}
}
