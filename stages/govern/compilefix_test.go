package govern

import (
	"context"
	"strings"
	"testing"

	"github.com/murphy-rl/murphy/topics"
)

const cfOriginal = "int f(void)\n{\n    int x = 1\n    return x;\n}\n"

// cfReference adds the missing semicolon.
const cfReference = `--- a/f.c
+++ b/f.c
@@ -1,5 +1,5 @@
 int f(void)
 {
-    int x = 1
+    int x = 1;
     return x;
 }
`

func cfTask() *topics.Task {
	return &topics.Task{
		SchemaVersion: topics.SchemaVersion, TaskID: "t1", Kind: topics.KindCompileFix, Language: "c",
		Prompt: "Fix the build.\n--- f.c ---\n" + cfOriginal, RewardPolicy: topics.RewardTiered,
		ReferencePatch: cfReference,
		CompileFix: &topics.CompileFix{Workspace: "sha256:" + strings.Repeat("a", 64), Build: []string{"make"},
			Targets: []topics.Diagnostic{{Tool: "gcc", Severity: "error", File: "f.c", Line: 4, Column: 5, Message: "expected ‘,’ or ‘;’ before ‘return’"}}},
	}
}

func cfExecution(status, code string) *topics.Execution {
	return execution(func(ex *topics.Execution) {
		ex.Status, ex.Code, ex.TestsTotal = status, code, 1
		ex.TestsPassed = 0
		if status == topics.StatusPassed {
			ex.TestsPassed = 1
		}
		ex.PassRate = float64(ex.TestsPassed)
		ex.ResponseText = "```diff\n" + code + "```"
	})
}

// TestCompileFixTiers: 0 when the patch does not apply or the build fails,
// 1 for a build consistent with the reference, 0.5 for any other build (a
// reformatted equivalent counts as consistent; a deletion does not), and a
// failing tests command caps at 0.5.
func TestCompileFixTiers(t *testing.T) {
	g := newGovernor(t, DefaultConfig())
	task := cfTask()
	reformatted := strings.Replace(cfReference, "+    int x = 1;", "+    int x=1 ;", 1)
	deletion := "--- a/f.c\n+++ b/f.c\n@@ -1,5 +1,4 @@\n int f(void)\n {\n-    int x = 1\n     return x;\n }\n"
	cases := []struct {
		name, status, code string
		reward             float64
		solved             bool
	}{
		{"patch failed", topics.StatusPatchFailed, "garbage", 0, false},
		{"still fails", topics.StatusCompileError, deletion, 0, false},
		{"build timeout", topics.StatusTimeout, cfReference, 0, false},
		{"reference", topics.StatusPassed, cfReference, 1, true},
		{"reformatted reference", topics.StatusPassed, reformatted, 1, true},
		{"deletion that builds", topics.StatusPassed, deletion, 0.5, false},
		{"tests fail", topics.StatusWrongAnswer, cfReference, 0.5, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := g.Govern(context.Background(), cfExecution(c.status, c.code), tasksWith(task))
			if err != nil {
				t.Fatal(err)
			}
			s := res.Sample
			if s.Route != topics.RouteTrain || s.Reward != c.reward || s.FailureCause != c.status {
				t.Fatalf("route %s cause %s reward %v, want train %s %v", s.Route, s.FailureCause, s.Reward, c.status, c.reward)
			}
			if solved := res.Refinement == nil; solved != c.solved {
				t.Fatalf("solved %v, want %v", solved, c.solved)
			}
			if res.Refinement != nil && !strings.Contains(res.Refinement.Text, "```diff") {
				t.Fatalf("a repair refinement fences the failed patch as diff:\n%s", res.Refinement.Text)
			}
			if s.PatchSimilarity == nil || *s.PatchSimilarity < 0 || *s.PatchSimilarity > 1 {
				t.Fatalf("patch similarity %v", s.PatchSimilarity)
			}
			if c.name == "reference" && *s.PatchSimilarity != 1 {
				t.Fatalf("reference similarity %v", *s.PatchSimilarity)
			}
		})
	}
}

type fakeChat struct {
	answer string
	seen   []topics.Message
}

func (f *fakeChat) Chat(_ context.Context, m []topics.Message) (string, error) {
	f.seen = m
	return f.answer, nil
}

// TestCompileFixLLMJudge: what the deterministic judge leaves undecided goes
// to the LLM judge, which sees the targets and both diffs in an order that
// does not give the reference away, and answers equivalent|different|unsure.
func TestCompileFixLLMJudge(t *testing.T) {
	cfg := DefaultConfig()
	cfg.CompileFixJudges = []string{JudgeReferencePatch, JudgeLLM}
	other := "--- a/f.c\n+++ b/f.c\n@@ -1,5 +1,5 @@\n int f(void)\n {\n-    int x = 1\n+    const int x = 1;\n     return x;\n }\n"
	for answer, want := range map[string]float64{
		`{"verdict": "equivalent", "reason": "same fix"}`: 1,
		`{"verdict": "different", "reason": "no"}`:        0.5,
		`{"verdict": "unsure", "reason": "?"}`:            0.5,
	} {
		chat := &fakeChat{answer: answer}
		g, err := NewGovernor(cfg, chat, WithClock(clock))
		if err != nil {
			t.Fatal(err)
		}
		res, err := g.Govern(context.Background(), cfExecution(topics.StatusPassed, other), tasksWith(cfTask()))
		if err != nil {
			t.Fatal(err)
		}
		if res.Sample.Reward != want || res.Judge != JudgeLLM {
			t.Fatalf("%s: reward %v judge %s, want %v llm", answer, res.Sample.Reward, res.Judge, want)
		}
		user := chat.seen[len(chat.seen)-1].Content
		if !strings.Contains(user, "expected ‘,’ or ‘;’") || !strings.Contains(user, "Patch A") || !strings.Contains(user, "Patch B") ||
			strings.Contains(strings.ToLower(user), "reference") || strings.Contains(strings.ToLower(user), "candidate") {
			t.Fatalf("judge prompt:\n%s", user)
		}
	}
	// The order of the two diffs depends on the candidate, not on which is
	// the reference: over many candidates both orders occur.
	j := &LLMJudge{cfg: cfg.LLMJudge}
	first := map[bool]int{}
	for i := range 64 {
		code := other + strings.Repeat("\n", i)
		msgs := j.RepairMessages(cfTask(), cfExecution(topics.StatusPassed, code))
		u := msgs[len(msgs)-1].Content
		first[strings.Index(u, "const int") < strings.Index(u, "int x = 1;")]++
	}
	if first[true] == 0 || first[false] == 0 {
		t.Fatalf("blind order never varies: %v", first)
	}
	if _, err := ParseRepairAnswer(`{"verdict": "correct"}`); err == nil {
		t.Fatal("accepted a verdict outside equivalent|different|unsure")
	}
}

// TestEpisodeToolOutputsMasked: an agent episode's tool-output tokens get
// loss weight 0 whatever the route; a degenerate episode keeps only its
// last step's action as the penalty.
func TestEpisodeToolOutputsMasked(t *testing.T) {
	g := newGovernor(t, DefaultConfig())
	mk := func(muts ...func(*topics.Execution)) *topics.Execution {
		ex := cfExecution(topics.StatusPassed, cfReference)
		ex.ResponseTokenIDs, ex.ResponseLogprobs = seq(30), make([]float32, 30)
		ex.ToolSteps = []topics.ToolStep{
			{Tool: "read_file", ActionStart: 0, ActionEnd: 5, End: 15},
			{Tool: "edit", ActionStart: 15, ActionEnd: 20, End: 25},
			{Tool: "submit", ActionStart: 25, ActionEnd: 30, End: 30},
		}
		ex.StepEnds = []int{15, 25, 30}
		ex.EpisodeEnd = "submitted"
		for _, m := range muts {
			m(ex)
		}
		return ex
	}
	res, err := g.Govern(context.Background(), mk(), tasksWith(cfTask()))
	if err != nil {
		t.Fatal(err)
	}
	w := res.Sample.LossWeights
	for i, v := range w {
		tool := (i >= 5 && i < 15) || (i >= 20 && i < 25)
		if tool != (v == 0) {
			t.Fatalf("token %d (tool output %v) has weight %v: %v", i, tool, v, w)
		}
	}
	cfg := DefaultConfig()
	cfg.MaxSteps = 2
	g = newGovernor(t, cfg)
	res, err = g.Govern(context.Background(), mk(), tasksWith(cfTask()))
	if err != nil {
		t.Fatal(err)
	}
	if res.Sample.Route != topics.RouteLastStepPenalty {
		t.Fatalf("route %s", res.Sample.Route)
	}
	for i, v := range res.Sample.LossWeights {
		if (i >= 25) != (v != 0) {
			t.Fatalf("penalty weights %v", res.Sample.LossWeights)
		}
	}
}
