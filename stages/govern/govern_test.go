package govern

import (
	"context"
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/murphy-rl/murphy/topics"
)

func loopingText(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("testdata/repetition/looping/return-line.txt")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestGovernCauses covers every cause: its route, reward, group-stat
// membership, loss weights and expansion.
func TestGovernCauses(t *testing.T) {
	loop := loopingText(t)
	type want struct {
		cause, route string
		reward       float64
		inStats      bool
		children     int
		weights      []float32 // nil: check only the class's rule
	}
	cases := []struct {
		name string
		ex   *topics.Execution
		cfg  func(*Config)
		want want
	}{
		{"inference failure", execution(func(e *topics.Execution) {
			e.InfraCause, e.InfraError, e.Status, e.Code, e.ResponseText = topics.InfraInference, "HTTP 503 after 5 attempts", topics.StatusNotRun, "", ""
			e.ResponseTokenIDs, e.ResponseLogprobs = nil, nil
		}), nil, want{CauseInference, topics.RouteMasked, 0, true, 0, []float32{}}},
		{"context overflow", execution(func(e *topics.Execution) {
			e.InfraCause, e.Status = topics.InfraContextOverflow, topics.StatusNotRun
		}), nil, want{CauseContextOverflow, topics.RouteMasked, 0, true, 0, nil}},
		{"context overflow excluded from group stats", execution(func(e *topics.Execution) {
			e.InfraCause, e.Status = topics.InfraContextOverflow, topics.StatusNotRun
		}), func(c *Config) { c.GroupStats = map[string]bool{CauseContextOverflow: false} },
			want{CauseContextOverflow, topics.RouteMasked, 0, false, 0, nil}},
		{"sandbox error", execution(func(e *topics.Execution) {
			e.Status, e.SandboxError, e.TestsPassed = topics.StatusSandboxError, "bwrap: setting up uid map: Permission denied", 0
		}), nil, want{CauseSandbox, topics.RouteMasked, 0, true, 0, nil}},
		{"harness timeout", execution(func(e *topics.Execution) {
			e.Status, e.SandboxError, e.TestsPassed = topics.StatusSandboxError, "Harness timeout: worker did not answer within 60s", 0
		}), nil, want{CauseHarnessTimeout, topics.RouteMasked, 0, true, 0, nil}},
		{"harness deadline (the sandbox's own message)", execution(func(e *topics.Execution) {
			e.Status, e.SandboxError, e.TestsPassed = topics.StatusSandboxError, "canceled: context deadline exceeded", 0
		}), nil, want{CauseHarnessTimeout, topics.RouteMasked, 0, true, 0, nil}},
		{"sandbox error kind decides, not the message", execution(func(e *topics.Execution) {
			e.Status, e.SandboxError, e.SandboxErrorKind = topics.StatusSandboxError, "worker died: harness timeout in its log", topics.SandboxErrorWorker
		}), nil, want{CauseSandbox, topics.RouteMasked, 0, true, 0, nil}},
		{"harness timeout kind", execution(func(e *topics.Execution) {
			e.Status, e.SandboxError, e.SandboxErrorKind = topics.StatusSandboxError, "output pipes still open after the job ended", topics.SandboxErrorHarnessTimeout
		}), nil, want{CauseHarnessTimeout, topics.RouteMasked, 0, true, 0, nil}},
		{"not run without a cause", execution(status(topics.StatusNotRun)), nil,
			want{CauseNotRun, topics.RouteMasked, 0, true, 0, nil}},
		{"unknown infra cause kept", execution(func(e *topics.Execution) { e.InfraCause, e.Status = "infra.gpu_lost", topics.StatusNotRun }),
			func(c *Config) { c.GroupStats = map[string]bool{"infra.gpu_lost": false} },
			want{"infra.gpu_lost", topics.RouteMasked, 0, false, 0, nil}},
		{"malformed infra cause", execution(func(e *topics.Execution) { e.InfraCause, e.Status = "oops something", topics.StatusNotRun }),
			nil, want{CauseInfraOther, topics.RouteMasked, 0, true, 0, nil}},
		{"masked reward setting", execution(func(e *topics.Execution) { e.InfraCause, e.Status = topics.InfraInference, topics.StatusNotRun }),
			func(c *Config) { c.MaskedReward = 0.25 }, want{CauseInference, topics.RouteMasked, 0.25, true, 0, nil}},
		{"repetition loop, single step: whole response is the penalised step", execution(func(e *topics.Execution) {
			e.ResponseText, e.FinishReason = loop, "length"
		}), nil, want{CauseRepetition, topics.RouteLastStepPenalty, 0, true, 0, slices.Repeat([]float32{1}, 20)}},
		{"repetition loop although the tests passed", execution(func(e *topics.Execution) { e.ResponseText = loop }),
			nil, want{CauseRepetition, topics.RouteLastStepPenalty, 0, true, 0, nil}},
		{"repetition detector off: truncation", execution(func(e *topics.Execution) { e.ResponseText, e.FinishReason = loop, "length" }),
			func(c *Config) { c.Repetition.Enabled = false }, want{CauseTruncated, topics.RouteLastStepPenalty, 0, true, 0, nil}},
		{"truncated at max tokens", execution(failing(1), func(e *topics.Execution) { e.FinishReason = "length" }),
			nil, want{CauseTruncated, topics.RouteLastStepPenalty, 0, true, 0, nil}},
		{"truncated, excluded from group stats, custom penalty", execution(func(e *topics.Execution) { e.FinishReason = "length" }),
			func(c *Config) {
				c.GroupStats = map[string]bool{CauseTruncated: false}
				c.PenaltyReward = -1
				c.PenaltyWeight = 0.5
			}, want{CauseTruncated, topics.RouteLastStepPenalty, -1, false, 0, slices.Repeat([]float32{0.5}, 20)}},
		{"truncated multi-step: only the last step is kept", execution(func(e *topics.Execution) {
			e.FinishReason, e.StepEnds = "length", []int{5, 12}
		}), nil, want{CauseTruncated, topics.RouteLastStepPenalty, 0, true, 0,
			append(make([]float32, 12), slices.Repeat([]float32{1}, 8)...)}},
		{"excessive steps", execution(failing(0), func(e *topics.Execution) { e.StepEnds = []int{2, 4, 6, 8, 10, 20} }),
			func(c *Config) { c.MaxSteps = 5 }, want{CauseExcessiveSteps, topics.RouteLastStepPenalty, 0, true, 0,
				append(make([]float32, 10), slices.Repeat([]float32{1}, 10)...)}},
		{"steps at the limit are normal", execution(failing(0), func(e *topics.Execution) { e.StepEnds = []int{2, 4, 6, 8, 20} }),
			func(c *Config) { c.MaxSteps = 5 }, want{CauseWrongAnswer, topics.RouteTrain, 0, true, 2, nil}},
		{"passed: a solved leaf", execution(), nil,
			want{CausePassed, topics.RouteTrain, 1, true, 0, slices.Repeat([]float32{1}, 20)}},
		{"wrong answer expands", execution(failing(1)), nil, want{CauseWrongAnswer, topics.RouteTrain, 0.25, true, 2, nil}},
		{"compile error expands", execution(status(topics.StatusCompileError)), nil, want{CauseCompileError, topics.RouteTrain, 0, true, 2, nil}},
		{"runtime error", execution(status(topics.StatusRuntimeError)), nil, want{CauseRuntimeError, topics.RouteTrain, 0, true, 2, nil}},
		{"candidate's own timeout is normal", execution(status(topics.StatusTimeout)), nil, want{CauseTimeout, topics.RouteTrain, 0, true, 2, nil}},
		{"timeout not expanded when skipped", execution(status(topics.StatusTimeout)),
			func(c *Config) { c.Expansion.SkipCauses = []string{CauseTimeout} }, want{CauseTimeout, topics.RouteTrain, 0, true, 0, nil}},
		{"memory", execution(status(topics.StatusMemory)), nil, want{CauseMemory, topics.RouteTrain, 0, true, 2, nil}},
		{"output limit", execution(status(topics.StatusOutputLimit)), nil, want{CauseOutputLimit, topics.RouteTrain, 0, true, 2, nil}},
		{"expansion off", execution(failing(2)), func(c *Config) { c.Expansion.Enabled = false },
			want{CauseWrongAnswer, topics.RouteTrain, 0.5, true, 0, nil}},
		{"last turn is a leaf", execution(failing(2), atTurn(3, topics.NodeID(topics.TreeID("run", "t1", 0), "nX", 0))),
			nil, want{CauseWrongAnswer, topics.RouteTrain, 0.5, true, 0, nil}},
		{"node cap ends the tree early", execution(failing(2), func(e *topics.Execution) { e.MaxNodes = 4 }),
			nil, want{CauseWrongAnswer, topics.RouteTrain, 0.5, true, 0, nil}},
		{"node cap shrinks the child group", execution(failing(2), func(e *topics.Execution) { e.MaxNodes = 9 }),
			nil, want{CauseWrongAnswer, topics.RouteTrain, 0.5, true, 1, nil}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			g := newGovernor(t, cfg)
			tasks := tasksWith(testTask())
			res, err := g.Govern(context.Background(), tc.ex, tasks)
			if err != nil {
				t.Fatal(err)
			}
			s := res.Sample
			if s.FailureCause != tc.want.cause || s.Route != tc.want.route {
				t.Fatalf("cause/route = %s/%s, want %s/%s", s.FailureCause, s.Route, tc.want.cause, tc.want.route)
			}
			if s.Reward != tc.want.reward {
				t.Errorf("reward = %g, want %g", s.Reward, tc.want.reward)
			}
			if s.InGroupStats != tc.want.inStats {
				t.Errorf("in_group_stats = %v, want %v", s.InGroupStats, tc.want.inStats)
			}
			if s.ChildrenRequested != tc.want.children || (res.Refinement != nil) != (tc.want.children > 0) {
				t.Errorf("children = %d (prompt %v), want %d", s.ChildrenRequested, res.Refinement != nil, tc.want.children)
			}
			if res.Refinement != nil && res.Refinement.GroupSize != s.ChildrenRequested {
				t.Errorf("prompt asks for %d children, sample says %d", res.Refinement.GroupSize, s.ChildrenRequested)
			}
			if len(s.LossWeights) != len(s.ResponseTokenIDs) {
				t.Fatalf("%d weights for %d tokens", len(s.LossWeights), len(s.ResponseTokenIDs))
			}
			switch s.Route {
			case topics.RouteMasked:
				for i, w := range s.LossWeights {
					if w != 0 {
						t.Fatalf("masked weight[%d] = %g", i, w)
					}
				}
				if tc.want.children != 0 || res.Refinement != nil {
					t.Fatal("masked sample expanded")
				}
			case topics.RouteLastStepPenalty:
				if res.Refinement != nil {
					t.Fatal("penalised sample expanded")
				}
			}
			if tc.want.weights != nil && !slices.Equal(s.LossWeights, tc.want.weights) {
				t.Errorf("weights = %v\nwant      %v", s.LossWeights, tc.want.weights)
			}
			if _, err := topics.Encode(s); err != nil {
				t.Fatalf("sample does not encode: %v", err)
			}
			if (classOf(s.FailureCause) == ClassNormal) != (tasks.calls == 1) {
				t.Errorf("task looked up %d times for a %s sample", tasks.calls, classOf(s.FailureCause))
			}
		})
	}
}

// TestRewardPolicies covers each policy on each kind of outcome, and where
// the policy comes from (tree, task, run default).
func TestRewardPolicies(t *testing.T) {
	type outcome struct {
		name string
		mut  func(*topics.Execution)
	}
	outcomes := []outcome{
		{"passed", func(*topics.Execution) {}},
		{"wrong 3/4", failing(3)},
		{"runtime error", status(topics.StatusRuntimeError)},
		{"own timeout", status(topics.StatusTimeout)},
		{"compile error", status(topics.StatusCompileError)},
	}
	want := map[string][]float64{
		topics.RewardPassRate: {1, 0.75, 0, 0, 0},
		topics.RewardBinary:   {1, 0, 0, 0, 0},
		topics.RewardTiered:   {1, 0.5, 0.5, 0.5, 0},
	}
	for policy, rewards := range want {
		for i, o := range outcomes {
			for _, source := range []string{"tree", "task", "run"} {
				t.Run(policy+"/"+o.name+"/"+source, func(t *testing.T) {
					cfg := DefaultConfig()
					task := testTask()
					ex := execution(o.mut)
					// The other levels hold a different policy, which must lose.
					other := topics.RewardBinary
					if policy == topics.RewardBinary {
						other = topics.RewardPassRate
					}
					switch source {
					case "tree":
						ex.RewardPolicy, task.RewardPolicy, cfg.RewardPolicy = policy, other, other
					case "task":
						task.RewardPolicy, cfg.RewardPolicy = policy, other
					case "run":
						cfg.RewardPolicy = policy
					}
					res, err := newGovernor(t, cfg).Govern(context.Background(), ex, tasksWith(task))
					if err != nil {
						t.Fatal(err)
					}
					if res.Sample.Reward != rewards[i] {
						t.Fatalf("reward = %g, want %g", res.Sample.Reward, rewards[i])
					}
				})
			}
		}
	}
}

func TestTieredCustomValues(t *testing.T) {
	cfg := DefaultConfig()
	cfg.RewardPolicy = topics.RewardTiered
	cfg.Tiers = Tiers{NoCompile: 0.1, Wrong: 0.3, Unsure: 0.3, Correct: 0.9}
	g := newGovernor(t, cfg)
	for _, tc := range []struct {
		ex   *topics.Execution
		want float64
	}{{execution(), 0.9}, {execution(failing(1)), 0.3}, {execution(status(topics.StatusCompileError)), 0.1}} {
		res, err := g.Govern(context.Background(), tc.ex, tasksWith(testTask()))
		if err != nil {
			t.Fatal(err)
		}
		if res.Sample.Reward != tc.want {
			t.Errorf("%s: reward %g, want %g", tc.ex.Status, res.Sample.Reward, tc.want)
		}
	}
}

// staticJudge is a Judge with a fixed answer, counting its calls.
type staticJudge struct {
	v     Verdict
	err   error
	calls int
}

func (j *staticJudge) Name() string { return "static" }
func (j *staticJudge) Judge(context.Context, *topics.Task, *topics.Execution) (Verdict, error) {
	j.calls++
	return j.v, j.err
}

func TestJudgeChain(t *testing.T) {
	const refPatch = "--- a/add.py\n+++ b/add.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n"
	const samePatch = "diff --git a/add.py b/add.py\nindex 1..2\n--- a/add.py\n+++ b/add.py\n@@ -7,2 +7,2 @@ def add(a, b):\n-    return a  -  b\n+    return a + b\n"
	const otherPatch = "--- a/add.py\n+++ b/add.py\n@@ -1,2 +1,2 @@\n-    return a - b\n+    return sum([a, b])\n"
	cases := []struct {
		name      string
		judges    []string
		gate      bool
		policy    string
		mut       func(*topics.Execution)
		taskPatch string
		strict    bool // reference_patch.mismatch_abstains off
		wantCause string
		wantRew   float64
		wantJudge string
		expands   bool
	}{
		{"tests only, passing", []string{JudgeTests}, true, topics.RewardTiered, nil, "", false, CausePassed, 1, JudgeTests, false},
		{"reference patch match", []string{JudgeReferencePatch}, true, topics.RewardTiered,
			func(e *topics.Execution) { e.Code = samePatch }, refPatch, false, CausePassed, 1, JudgeReferencePatch, false},
		{"reference patch mismatch: abstains, the tests decide", []string{JudgeReferencePatch}, true, topics.RewardTiered,
			func(e *topics.Execution) { e.Code = otherPatch }, refPatch, false, CausePassed, 1, JudgeTests, false},
		{"reference patch mismatch, strict: compiles but wrong", []string{JudgeReferencePatch}, true, topics.RewardTiered,
			func(e *topics.Execution) { e.Code = otherPatch }, refPatch, true, CausePassed, 0.5, JudgeReferencePatch, true},
		{"reference patch absent: tests decide", []string{JudgeReferencePatch}, true, topics.RewardTiered,
			nil, "", true, CausePassed, 1, JudgeTests, false},
		{"gate: failing tests never reach the judge", []string{JudgeReferencePatch}, true, topics.RewardBinary,
			func(e *topics.Execution) { failing(3)(e); e.Code = samePatch }, refPatch, false, CauseWrongAnswer, 0, JudgeTests, true},
		{"no gate: judge may overrule weak tests", []string{JudgeReferencePatch}, false, topics.RewardBinary,
			func(e *topics.Execution) { failing(3)(e); e.Code = samePatch }, refPatch, false, CauseWrongAnswer, 1, JudgeReferencePatch, false},
		{"compile error is never judged", []string{JudgeReferencePatch}, false, topics.RewardTiered,
			func(e *topics.Execution) { status(topics.StatusCompileError)(e); e.Code = samePatch }, refPatch, false, CauseCompileError, 0, JudgeTests, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Judges, cfg.TestsGate, cfg.RewardPolicy = tc.judges, tc.gate, tc.policy
			cfg.ReferencePatch.MismatchAbstains = !tc.strict
			task := testTask()
			task.ReferencePatch = tc.taskPatch // the general chain; compile-fix tasks have their own (compilefix_test.go)
			var muts []func(*topics.Execution)
			if tc.mut != nil {
				muts = append(muts, tc.mut)
			}
			res, err := newGovernor(t, cfg).Govern(context.Background(), execution(muts...), tasksWith(task))
			if err != nil {
				t.Fatal(err)
			}
			if res.Sample.FailureCause != tc.wantCause || res.Sample.Reward != tc.wantRew || res.Judge != tc.wantJudge {
				t.Fatalf("cause %s reward %g judge %s, want %s %g %s", res.Sample.FailureCause, res.Sample.Reward, res.Judge,
					tc.wantCause, tc.wantRew, tc.wantJudge)
			}
			if (res.Refinement != nil) != tc.expands {
				t.Fatalf("expanded = %v, want %v", res.Refinement != nil, tc.expands)
			}
		})
	}
}

// TestJudgeFailureIsInfrastructure: a failing judge masks the sample as
// infra.judge, never blames the candidate and never expands.
func TestJudgeFailureIsInfrastructure(t *testing.T) {
	for _, stats := range []bool{true, false} {
		j := &staticJudge{err: errors.New("connection refused")}
		cfg := DefaultConfig()
		cfg.GroupStats = map[string]bool{CauseJudge: stats}
		// With the gate a failing candidate is wrong without asking the judge.
		res, err := newGovernor(t, cfg, WithJudges(j)).Govern(context.Background(), execution(failing(1)), tasksWith(testTask()))
		if err != nil || j.calls != 0 || res.Sample.FailureCause != CauseWrongAnswer {
			t.Fatalf("gate bypassed: err %v calls %d", err, j.calls)
		}
		res, err = newGovernor(t, cfg, WithJudges(j)).Govern(context.Background(), execution(), tasksWith(testTask()))
		if err != nil {
			t.Fatal(err)
		}
		s := res.Sample
		if s.FailureCause != CauseJudge || s.Route != topics.RouteMasked || res.Refinement != nil || s.InGroupStats != stats {
			t.Fatalf("judge failure: cause %s route %s expanded %v stats %v", s.FailureCause, s.Route, res.Refinement != nil, s.InGroupStats)
		}
	}
}

func TestGovernCancelledJudgeIsNotInfrastructure(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	j := &staticJudge{err: context.Canceled}
	_, err := newGovernor(t, DefaultConfig(), WithJudges(j)).Govern(ctx, execution(), tasksWith(testTask()))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled (the record must be retried, not masked)", err)
	}
}

func TestGovernTaskErrors(t *testing.T) {
	g := newGovernor(t, DefaultConfig())
	_, err := g.Govern(context.Background(), execution(failing(1)), tasksWith())
	var te *TaskError
	if !errors.As(err, &te) || !IsTaskNotFound(err) {
		t.Fatalf("missing task: %v", err)
	}
	down := &memTasks{err: errors.New("broker unavailable")}
	_, err = g.Govern(context.Background(), execution(failing(1)), down)
	if !errors.As(err, &te) || IsTaskNotFound(err) {
		t.Fatalf("transient lookup failure: %v", err)
	}
	// Masked and penalised samples need no task.
	res, err := g.Govern(context.Background(), execution(status(topics.StatusSandboxError)), down)
	if err != nil || res.Sample.Route != topics.RouteMasked {
		t.Fatalf("masked sample depends on the task: %v", err)
	}
}

// TestLastStepPenaltyMultiStep checks the weights of a penalised
// multi-step response with a trailing segment after the last step end.
func TestLastStepPenaltyMultiStep(t *testing.T) {
	ex := execution(func(e *topics.Execution) { e.StepEnds = []int{4, 9, 15}; e.FinishReason = "length" })
	res, err := newGovernor(t, DefaultConfig()).Govern(context.Background(), ex, tasksWith(testTask()))
	if err != nil {
		t.Fatal(err)
	}
	w := res.Sample.LossWeights
	for i, v := range w {
		want := float32(0)
		if i >= 15 { // tokens 15..19 follow the last step end: they are the last step
			want = 1
		}
		if v != want {
			t.Fatalf("weight[%d] = %g, want %g (%v)", i, v, want, w)
		}
	}
	if res.Sample.StepScores != nil {
		t.Fatal("penalised samples carry no process scores")
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		mut  func(*Config)
	}{
		{"policy", func(c *Config) { c.RewardPolicy = "accuracy" }},
		{"tier order", func(c *Config) { c.Tiers = Tiers{NoCompile: 0, Wrong: 1, Unsure: 0.5, Correct: 0.5} }},
		{"unsure above correct", func(c *Config) { c.Tiers = Tiers{NoCompile: 0, Wrong: 0.5, Unsure: 1, Correct: 0.9} }},
		{"unsure below no_compile", func(c *Config) { c.Tiers = Tiers{NoCompile: 0.2, Wrong: 0.5, Unsure: 0.1, Correct: 1} }},
		{"unsure outside [0,1]", func(c *Config) { c.Tiers.Unsure = -0.5 }},
		{"judge", func(c *Config) { c.Judges = []string{"oracle"} }},
		{"judge twice", func(c *Config) { c.Judges = []string{JudgeTests, JudgeTests} }},
		{"scorer", func(c *Config) { c.Scorer = "vibes" }},
		{"scorer failure", func(c *Config) { c.ScorerFailure = "ignore" }},
		{"group stats on a normal cause", func(c *Config) { c.GroupStats = map[string]bool{CausePassed: false} }},
		{"group stats on an unknown cause", func(c *Config) { c.GroupStats = map[string]bool{"degenerate.bored": false} }},
		{"template field", func(c *Config) { c.Expansion.Template = "{{.Nope}}" }},
		{"template syntax", func(c *Config) { c.Expansion.Template = "{{.Task" }},
		{"prompt cap", func(c *Config) { c.Expansion.MaxPromptBytes = 10 }},
		{"skip passed", func(c *Config) { c.Expansion.SkipCauses = []string{CausePassed} }},
		{"repetition", func(c *Config) { c.Repetition.MaxDuplicateNGrams = 2 }},
		{"llm without server", func(c *Config) { c.Judges = []string{JudgeLLM}; c.LLM.Client.BaseURL = "" }},
		{"penalty weight", func(c *Config) { c.PenaltyWeight = 2 }},
		{"concurrency", func(c *Config) { c.Concurrency = 0 }},
	}
	for _, tc := range cases {
		cfg := DefaultConfig()
		tc.mut(&cfg)
		if err := cfg.Validate(); err == nil {
			t.Errorf("%s: invalid config accepted", tc.name)
		}
	}
}
