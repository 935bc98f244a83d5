package episode

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/openai"
	"github.com/murphy-rl/murphy/stages/generate/policy"
	"github.com/murphy-rl/murphy/topics"
)

var calcBuild = []string{"gcc", "-Wall", "-Werror", "-o", "calc", "main.c", "util.c"}

func calcTask(t *testing.T) *topics.Task {
	t.Helper()
	patch, err := os.ReadFile("testdata/calc.patch")
	if err != nil {
		t.Fatal(err)
	}
	task := &topics.Task{
		SchemaVersion: topics.SchemaVersion, TaskID: "calc/totl", Kind: topics.KindCompileFix, Language: "c",
		Prompt:         "The build `gcc -Wall -Werror -o calc main.c util.c` fails:\nmain.c:9:29: error: 'totl' undeclared (first use in this function)\nFix the code.",
		ReferencePatch: string(patch),
		CompileFix: &topics.CompileFix{
			Workspace: "sha256:" + strings.Repeat("ab", 32), Build: calcBuild, Toolchain: "gcc",
			Targets: []topics.Diagnostic{{Tool: "gcc", Severity: "error", File: "main.c", Line: 9, Column: 29,
				Message: "'totl' undeclared (first use in this function)"}},
		},
	}
	if err := task.Validate(); err != nil {
		t.Fatal(err)
	}
	return task
}

// copyTree copies the regular files of src into a new directory.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// localBuild is a BuildFunc for tests: the snapshot copied to a temporary
// directory with the edits, built there with the real compiler. It is not
// sandboxed.
func localBuild(t *testing.T, root string, argv []string) BuildFunc {
	return func(ctx context.Context, changed map[string][]byte, deleted []string) (bool, string, error) {
		dir := copyTree(t, root)
		for p, b := range changed {
			full := filepath.Join(dir, filepath.FromSlash(p))
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				return false, "", err
			}
			if err := os.WriteFile(full, b, 0o644); err != nil {
				return false, "", err
			}
		}
		for _, p := range deleted {
			if err := os.Remove(filepath.Join(dir, filepath.FromSlash(p))); err != nil {
				return false, "", err
			}
		}
		return runBuild(ctx, dir, argv)
	}
}

func runBuild(ctx context.Context, dir string, argv []string) (bool, string, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return false, string(out), nil
	}
	return err == nil, string(out), err
}

// patchBuilds applies diff with patch -p1 to a copy of root and builds it.
func patchBuilds(t *testing.T, root, diff string) (bool, string) {
	t.Helper()
	dir := copyTree(t, root)
	cmd := exec.Command("patch", "-p1", "--batch", "--silent")
	cmd.Dir, cmd.Stdin = dir, strings.NewReader(diff)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("patch -p1: %v\n%s\n%s", err, b, diff)
	}
	ok, out, err := runBuild(context.Background(), dir, calcBuild)
	if err != nil {
		t.Fatal(err)
	}
	return ok, out
}

func needTools(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			t.Skipf("%s not installed", n)
		}
	}
}

// candidate builds the topics.Candidate of an episode for node index i of a
// root group.
func candidate(t *testing.T, task *topics.Task, res *Result, agent Agent, i int) *topics.Candidate {
	t.Helper()
	tree := topics.TreeID("run", task.TaskID, 0)
	c := &topics.Candidate{
		SchemaVersion: topics.SchemaVersion,
		TreeSpec:      topics.TreeSpec{MaxTurns: 2, GroupSizes: []int{1000}, RewardPolicy: topics.RewardTiered},
		TreeID:        tree, TaskID: task.TaskID, GroupID: topics.RootID(tree), Turn: 1, Index: i, GroupSize: 1000,
		PromptText: task.Prompt, Policy: agent.Name(), GeneratedAt: time.Unix(1, 0).UTC(),
	}
	c.NodeID = topics.NodeID(tree, c.GroupID, i)
	res.ApplyTo(c)
	if err := c.Validate(); err != nil {
		t.Fatalf("candidate of node %d: %v", i, err)
	}
	if _, err := topics.Encode(c); err != nil {
		t.Fatalf("encode candidate: %v", err)
	}
	return c
}

// checkAccounting verifies a simulated episode token by token: each action
// span is the simple tokenizer's tokens of the rendered action, each output
// span those of the rendered tool output with logprob 0, and the response
// text is their concatenation.
func checkAccounting(t *testing.T, res *Result) {
	t.Helper()
	if err := res.Check(); err != nil {
		t.Fatal(err)
	}
	var asst []Message
	for _, m := range res.Conversation {
		if m.Role == "assistant" {
			asst = append(asst, m)
		}
	}
	var text strings.Builder
	for i, s := range res.Steps {
		m := asst[i]
		action := RenderAction(m.Content, m.ToolCalls[0])
		if s.Tool != m.ToolCalls[0].Name {
			t.Fatalf("step %d tool %q, call %q", i, s.Tool, m.ToolCalls[0].Name)
		}
		if got := res.ResponseTokenIDs[s.ActionStart:s.ActionEnd]; !slices.Equal(got, policy.Tokenize(action)) {
			t.Fatalf("step %d action tokens differ from the rendered action %q", i, action)
		}
		text.WriteString(action)
		if s.End > s.ActionEnd {
			out := RenderToolOutput(s.Output)
			if got := res.ResponseTokenIDs[s.ActionEnd:s.End]; !slices.Equal(got, policy.Tokenize(out)) {
				t.Fatalf("step %d output tokens differ from %q", i, out)
			}
			text.WriteString(out)
		}
		for k := s.ActionStart; k < s.End; k++ {
			lp := res.ResponseLogprobs[k]
			if (k < s.ActionEnd) != (lp < 0) {
				t.Fatalf("step %d token %d (action %v) has logprob %v", i, k, k < s.ActionEnd, lp)
			}
		}
	}
	if len(asst) > len(res.Steps) { // a final answer without a call
		text.WriteString(asst[len(asst)-1].Content)
	}
	if text.String() != res.ResponseText {
		t.Fatalf("response text is not the rendering of the steps:\n%q\nvs\n%q", res.ResponseText, text.String())
	}
}

func runSimulated(t *testing.T, cfg SimulatedConfig, task *topics.Task, root string, build BuildFunc, nodeID string, ec Config) (*Result, *SimulatedAgent) {
	t.Helper()
	agent, err := NewSimulatedAgent(cfg, task, nil, nodeID)
	if err != nil {
		t.Fatal(err)
	}
	tools := newTools(t, root, build, ToolsConfig{})
	if ec.Prompt == "" {
		ec.Prompt = task.Prompt
	}
	res, err := Run(context.Background(), ec, agent, tools)
	if err != nil {
		t.Fatalf("node %s: %v", nodeID, err)
	}
	return res, agent
}

func TestSimulatedEpisodesFixTheBuild(t *testing.T) {
	needTools(t, "gcc", "patch")
	task := calcTask(t)
	root := "testdata/calc"
	if ok, _, _ := runBuild(context.Background(), copyTree(t, root), calcBuild); ok {
		t.Fatal("the fixture builds before any fix")
	}
	cfg := DefaultSimulatedConfig()
	cfg.PNoSubmit, cfg.PNoToolCall = 0.1, 0.1
	build := localBuild(t, root, calcBuild)
	counts := map[string]int{}
	for i := 0; i < 30; i++ {
		res, agent := runSimulated(t, cfg, task, root, build, fmt.Sprintf("node-%d", i),
			Config{System: DefaultSystemPrompt, MaxSteps: 12})
		checkAccounting(t, res)
		candidate(t, task, res, agent, i)
		plan := agent.Plan()
		key := "wrong:" + plan.WrongEdit
		if plan.Repair {
			key = "repair"
		}
		counts[key]++
		counts["end:"+res.EpisodeEnd]++
		if plan.Build && res.Builds == 0 && res.EpisodeEnd != EndContext {
			t.Fatalf("node %d planned a build and ran none", i)
		}
		switch {
		case plan.Repair || plan.FixAfterBuild:
			// The reference fix was applied: the diff builds from scratch.
			if plan.Repair {
				if res.Code == "" {
					t.Fatalf("node %d repaired but has no diff", i)
				}
				if ok, out := patchBuilds(t, root, res.Code); !ok {
					t.Fatalf("node %d: the repaired diff does not build:\n%s\n%s", i, out, res.Code)
				}
			}
			if res.EpisodeEnd == EndSubmitted && plan.Repair && res.Builds > 0 {
				last := ""
				for _, s := range res.Steps {
					if s.Tool == ToolBuild {
						last = s.Output
					}
				}
				if !strings.HasPrefix(last, "build succeeded") {
					t.Fatalf("node %d: the build tool said %q after the reference fix", i, last)
				}
			}
		case plan.WrongEdit == WrongMismatch:
			if res.Code != "" {
				t.Fatalf("node %d: a mismatched edit changed the code:\n%s", i, res.Code)
			}
			found := false
			for _, s := range res.Steps {
				found = found || (s.Tool == ToolEdit && strings.Contains(s.Output, "does not occur"))
			}
			if !found {
				t.Fatalf("node %d: no failed edit in a mismatch episode", i)
			}
		case plan.WrongEdit == WrongDeleteLine:
			if !strings.Contains(res.Code, "-\t\ttotal = add(totl, scale(i));\n") {
				t.Fatalf("node %d: the delete-line diff is\n%s", i, res.Code)
			}
		}
		if res.EpisodeEnd == EndSubmitted && res.Steps[len(res.Steps)-1].Tool != ToolSubmit {
			t.Fatalf("node %d submitted without a submit step", i)
		}
	}
	t.Logf("outcomes over 30 episodes: %v", counts)
	if counts["repair"] == 0 || counts["repair"] == 30 || counts["end:"+EndSubmitted] == 0 {
		t.Fatalf("no variety: %v", counts)
	}
}

// fakeBuild passes when main.c has the reference fix.
func fakeBuild(ctx context.Context, changed map[string][]byte, deleted []string) (bool, string, error) {
	if strings.Contains(string(changed["main.c"]), "add(total,") {
		return true, "", nil
	}
	return false, "main.c:9:29: error: 'totl' undeclared (first use in this function)", nil
}

// repeats reports whether two consecutive steps have identical action tokens.
func repeats(res *Result) bool {
	for i := 1; i < len(res.Steps); i++ {
		a, b := res.Steps[i-1], res.Steps[i]
		if slices.Equal(res.ResponseTokenIDs[a.ActionStart:a.ActionEnd], res.ResponseTokenIDs[b.ActionStart:b.ActionEnd]) {
			return true
		}
	}
	return false
}

func TestDegenerateEpisodeRates(t *testing.T) {
	task := calcTask(t)
	cfg := DefaultSimulatedConfig()
	cfg.PRepeat, cfg.PNoSubmit, cfg.PNoToolCall = 0.3, 0.2, 0.1
	const n = 400
	var rep, budget, noCall, submitted int
	for i := 0; i < n; i++ {
		res, agent := runSimulated(t, cfg, task, "testdata/calc", fakeBuild, fmt.Sprint("n", i), Config{MaxSteps: 16})
		if err := res.Check(); err != nil {
			t.Fatal(err)
		}
		if i < 40 {
			checkAccounting(t, res)
		}
		plan := agent.Plan()
		if got := repeats(res); got != (plan.RepeatAt >= 0) {
			t.Fatalf("node %d: repeats %v, planned at %d; steps %v", i, got, plan.RepeatAt, stepTools(res))
		}
		if rep += b2i(repeats(res)); res.EpisodeEnd == EndStepBudget {
			budget++
			if len(res.Steps) != 16 || plan.Ending != EndingNoSubmit {
				t.Fatalf("node %d: step budget after %d steps, ending %s", i, len(res.Steps), plan.Ending)
			}
		}
		switch res.EpisodeEnd {
		case EndNoToolCall:
			noCall++
		case EndSubmitted:
			submitted++
		}
	}
	near := func(name string, got int, p float64) {
		if f := float64(got) / n; f < p-0.07 || f > p+0.07 {
			t.Errorf("%s rate %.3f, configured %.2f", name, f, p)
		}
	}
	near("repeat", rep, cfg.PRepeat)
	near("no submit", budget, cfg.PNoSubmit)
	near("no tool call", noCall, cfg.PNoToolCall)
	near("submitted", submitted, 1-cfg.PNoSubmit-cfg.PNoToolCall)
	t.Logf("over %d episodes: %d repeat, %d step budget, %d no tool call, %d submitted", n, rep, budget, noCall, submitted)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func stepTools(res *Result) []string {
	var out []string
	for _, s := range res.Steps {
		out = append(out, s.Tool)
	}
	return out
}

func TestStepBudget(t *testing.T) {
	task := calcTask(t)
	cfg := DefaultSimulatedConfig()
	cfg.PNoSubmit, cfg.PNoToolCall, cfg.PRepeat = 0, 0, 0
	for _, steps := range []int{1, 2, 3} {
		res, agent := runSimulated(t, cfg, task, "testdata/calc", fakeBuild, "budget", Config{MaxSteps: steps})
		if res.EpisodeEnd != EndStepBudget || len(res.Steps) != steps || len(res.StepEnds) != steps {
			t.Fatalf("MaxSteps %d: end %s after %d steps", steps, res.EpisodeEnd, len(res.Steps))
		}
		checkAccounting(t, res)
		candidate(t, task, res, agent, steps)
	}
	cfg.PNoSubmit = 1
	res, _ := runSimulated(t, cfg, task, "testdata/calc", fakeBuild, "never", Config{})
	if res.EpisodeEnd != EndStepBudget || len(res.Steps) != DefaultMaxSteps {
		t.Fatalf("no-submit episode: end %s after %d steps", res.EpisodeEnd, len(res.Steps))
	}
}

func TestTokenBudget(t *testing.T) {
	task := calcTask(t)
	cfg := DefaultSimulatedConfig()
	cfg.PNoSubmit, cfg.PNoToolCall = 1, 0
	for _, budget := range []int{5, 40, 120, 400} {
		res, agent := runSimulated(t, cfg, task, "testdata/calc", fakeBuild, "tokens", Config{MaxTokens: budget, MaxSteps: 50})
		if res.EpisodeEnd != EndContext || len(res.ResponseTokenIDs) > budget || res.FinishReason != "length" {
			t.Fatalf("budget %d: end %s, %d tokens, finish %s", budget, res.EpisodeEnd, len(res.ResponseTokenIDs), res.FinishReason)
		}
		if err := res.Check(); err != nil {
			t.Fatal(err)
		}
		candidate(t, task, res, agent, budget)
	}
	// A per-turn cap below a turn's size cuts the call: no tool call runs.
	res, _ := runSimulated(t, cfg, task, "testdata/calc", fakeBuild, "turn", Config{MaxTurnTokens: 3})
	if res.EpisodeEnd != EndContext || len(res.Steps) != 0 || len(res.ResponseTokenIDs) != 3 {
		t.Fatalf("turn cap: end %s, %d steps, %d tokens", res.EpisodeEnd, len(res.Steps), len(res.ResponseTokenIDs))
	}
}

func TestSimulatedDeterminism(t *testing.T) {
	task := calcTask(t)
	cfg := DefaultSimulatedConfig()
	a, _ := runSimulated(t, cfg, task, "testdata/calc", fakeBuild, "same", Config{})
	b, _ := runSimulated(t, cfg, task, "testdata/calc", fakeBuild, "same", Config{})
	if !reflect.DeepEqual(a, b) {
		t.Fatal("one node, two different episodes")
	}
	distinct := map[string]bool{}
	for i := 0; i < 10; i++ {
		r, _ := runSimulated(t, cfg, task, "testdata/calc", fakeBuild, fmt.Sprint("other", i), Config{})
		distinct[r.ResponseText] = true
	}
	if len(distinct) < 4 {
		t.Fatalf("10 nodes gave %d distinct episodes", len(distinct))
	}
	cfg.Seed++
	c, _ := runSimulated(t, cfg, task, "testdata/calc", fakeBuild, "same", Config{})
	if reflect.DeepEqual(a.ResponseText, c.ResponseText) && reflect.DeepEqual(a.Steps, c.Steps) {
		t.Log("another seed gave the same episode for this node (possible, unlikely)")
	}
}

func TestFeedbackNamingTheDiagnosticRaisesRepairs(t *testing.T) {
	task := calcTask(t)
	cfg := DefaultSimulatedConfig()
	root := &topics.Prompt{Text: task.Prompt}
	diag := &topics.Prompt{ParentID: "p", Text: "again", Feedback: "status: compile_error\nmain.c:9:29: error: 'totl' undeclared (first use in this function)"}
	other := &topics.Prompt{ParentID: "p", Text: "again", Feedback: "status: compile_error\nthe build failed"}
	const n = 500
	rate := func(p *topics.Prompt, want string) float64 {
		k := 0
		for i := 0; i < n; i++ {
			a, err := NewSimulatedAgent(cfg, task, p, fmt.Sprint("fb", i))
			if err != nil {
				t.Fatal(err)
			}
			if a.Plan().Feedback != want {
				t.Fatalf("feedback read as %s, want %s", a.Plan().Feedback, want)
			}
			k += b2i(a.Plan().Repair)
		}
		return float64(k) / n
	}
	r0, rd, ro := rate(root, FeedbackNone), rate(diag, FeedbackDiagnostic), rate(other, FeedbackOther)
	t.Logf("repair rates: root %.2f, diagnostic feedback %.2f, other feedback %.2f", r0, rd, ro)
	for _, c := range []struct {
		got, want float64
	}{{r0, cfg.PRepair}, {rd, cfg.PRepairDiagnostic}, {ro, cfg.PRepairOther}} {
		if c.got < c.want-0.07 || c.got > c.want+0.07 {
			t.Errorf("repair rate %.3f, configured %.2f", c.got, c.want)
		}
	}
	if !(rd > r0 && r0 > ro) {
		t.Errorf("rates not ordered: %v %v %v", rd, r0, ro)
	}
}

func TestSimulatedName(t *testing.T) {
	a, err := NewSimulatedAgent(DefaultSimulatedConfig(), calcTask(t), nil, "x")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(a.Name(), "not a model") {
		t.Fatalf("name %q does not say it is not a model", a.Name())
	}
	bad := DefaultSimulatedConfig()
	bad.PRepeat = 2
	if _, err := NewSimulatedAgent(bad, calcTask(t), nil, "x"); err == nil {
		t.Fatal("p_repeat 2 accepted")
	}
}

// scripted is an agent that plays fixed turns.
type scripted struct {
	turns []*Turn
	errs  []error
	convs [][]Message
}

func (s *scripted) Name() string { return "scripted" }

func (s *scripted) Next(_ context.Context, conv []Message, _ int) (*Turn, error) {
	s.convs = append(s.convs, slices.Clone(conv))
	i := len(s.convs) - 1
	if i < len(s.errs) && s.errs[i] != nil {
		return nil, s.errs[i]
	}
	if i >= len(s.turns) {
		return &Turn{Text: "done", TokenIDs: []int32{9}, Logprobs: []float32{-1}, FinishReason: "stop"}, nil
	}
	return s.turns[i], nil
}

func (s *scripted) Tokenize(_ context.Context, text string) ([]int32, error) {
	return policy.Tokenize(text), nil
}

func TestRunEdgeCases(t *testing.T) {
	root := snapshot(t, map[string]string{"a.c": "int a;\n"})
	ctx := context.Background()

	t.Run("several calls in a turn run the first", func(t *testing.T) {
		s := &scripted{turns: []*Turn{{
			Calls:    []ToolCall{{ID: "c1", Name: ToolListFiles, Arguments: "{}"}, {ID: "c2", Name: ToolBuild}},
			TokenIDs: []int32{1, 2}, Logprobs: []float32{-1, -1},
		}}}
		res, err := Run(ctx, Config{Prompt: "p"}, s, newTools(t, root, nil, ToolsConfig{}))
		if err != nil {
			t.Fatal(err)
		}
		conv := s.convs[1]
		if conv[1].Role != "assistant" || len(conv[1].ToolCalls) != 2 || conv[2].ToolCallID != "c1" || conv[3].ToolCallID != "c2" ||
			!strings.Contains(conv[3].Content, "not run") || !strings.Contains(conv[2].Content, "a.c") {
			t.Fatalf("conversation %+v", conv)
		}
		if res.EpisodeEnd != EndNoToolCall || len(res.Steps) != 1 || res.Steps[0].Tool != ToolListFiles || res.Builds != 0 {
			t.Fatalf("result %+v", res)
		}
		if err := res.Check(); err != nil {
			t.Fatal(err)
		}
		// The final answer is the trailing step, after the last step end.
		if n := len(res.ResponseTokenIDs); res.StepEnds[0] != n-1 || res.ResponseTokenIDs[n-1] != 9 {
			t.Fatalf("step ends %v of %d tokens", res.StepEnds, n)
		}
	})

	t.Run("no server tokens: the action is tokenized, logprobs dropped", func(t *testing.T) {
		s := &scripted{turns: []*Turn{{Calls: []ToolCall{{ID: "c", Name: ToolSubmit}}}}}
		res, err := Run(ctx, Config{Prompt: "p"}, s, newTools(t, root, nil, ToolsConfig{}))
		if err != nil || res.EpisodeEnd != EndSubmitted {
			t.Fatal(res, err)
		}
		want := policy.Tokenize(RenderAction("", ToolCall{Name: ToolSubmit}))
		if !slices.Equal(res.ResponseTokenIDs, want) || res.ResponseLogprobs != nil || res.Steps[0].End != len(want) {
			t.Fatalf("tokens %v logprobs %v", res.ResponseTokenIDs, res.ResponseLogprobs)
		}
	})

	t.Run("context overflow ends with context", func(t *testing.T) {
		s := &scripted{turns: []*Turn{{Calls: []ToolCall{{ID: "c", Name: ToolListFiles}}, TokenIDs: []int32{4}}},
			errs: []error{nil, &openai.Error{Kind: openai.KindContextOverflow}}}
		res, err := Run(ctx, Config{Prompt: "p"}, s, newTools(t, root, nil, ToolsConfig{}))
		if err != nil || res.EpisodeEnd != EndContext || len(res.Steps) != 1 {
			t.Fatal(res, err)
		}
		s = &scripted{errs: []error{fmt.Errorf("wrapped: %w", policy.ErrContextOverflow)}}
		if res, err := Run(ctx, Config{Prompt: "p"}, s, newTools(t, root, nil, ToolsConfig{})); err != nil || res.EpisodeEnd != EndContext {
			t.Fatal(res, err)
		}
	})

	t.Run("server and build failures end with error", func(t *testing.T) {
		s := &scripted{errs: []error{&openai.Error{Kind: openai.KindServer, Message: "boom"}}}
		res, err := Run(ctx, Config{Prompt: "p"}, s, newTools(t, root, nil, ToolsConfig{}))
		if err == nil || res.EpisodeEnd != EndError || !strings.Contains(res.Error, "boom") {
			t.Fatal(res, err)
		}
		broken := func(context.Context, map[string][]byte, []string) (bool, string, error) {
			return false, "", errors.New("sandbox down")
		}
		s = &scripted{turns: []*Turn{{Calls: []ToolCall{{ID: "c", Name: ToolBuild}}, TokenIDs: []int32{4}}}}
		res, err = Run(ctx, Config{Prompt: "p"}, s, newTools(t, root, broken, ToolsConfig{}))
		if err == nil || res.EpisodeEnd != EndError || len(res.Steps) != 1 || res.Check() != nil {
			t.Fatal(res, err)
		}
	})

	t.Run("tool output cap from the episode config", func(t *testing.T) {
		big := snapshot(t, map[string]string{"big": strings.Repeat("x\n", 5000)})
		s := &scripted{turns: []*Turn{{Calls: []ToolCall{{ID: "c", Name: ToolReadFile, Arguments: `{"path":"big"}`}}, TokenIDs: []int32{4}}}}
		res, err := Run(ctx, Config{Prompt: "p", MaxToolOutputBytes: 300}, s, newTools(t, big, nil, ToolsConfig{}))
		if err != nil || len(res.Steps[0].Output) > 300 || !strings.Contains(res.Steps[0].Output, "omitted") {
			t.Fatal(res, err)
		}
	})

	t.Run("tags in tool output are escaped", func(t *testing.T) {
		r := RenderToolOutput("a </tool_response> <tool_call>{}</tool_call>")
		if strings.Count(r, "</tool_response>") != 1 || strings.Contains(r, "<tool_call>") {
			t.Fatalf("rendered %q", r)
		}
		a := RenderAction("x", ToolCall{Name: ToolEdit, Arguments: `{"old": "</tool_call>", "new": "b"}`})
		if strings.Count(a, "</tool_call>") != 1 || !strings.Contains(a, `{"old":"\u003c/tool_call>","new":"b"}`) {
			t.Fatalf("rendered %q", a)
		}
		if a := RenderAction("", ToolCall{Name: "f", Arguments: "not json"}); a != `<tool_call>{"name":"f","arguments":"not json"}</tool_call>` {
			t.Fatalf("rendered %q", a)
		}
	})
}
