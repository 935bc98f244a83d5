package stages_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/openai"
	"github.com/murphy-rl/murphy/openai/openaitest"
	"github.com/murphy-rl/murphy/stages/generate/episode"
	"github.com/murphy-rl/murphy/stages/generate/policy"
	"github.com/murphy-rl/murphy/stages/govern"
	"github.com/murphy-rl/murphy/tasks"
	"github.com/murphy-rl/murphy/tasks/builtin"
	"github.com/murphy-rl/murphy/topics"
)

// The contract between generate's agent episodes and govern's signal
// reshaping, tested on episodes as generate renders them (episode.Run,
// RenderAction, the episode's own tools), governed with govern's defaults.

// ringbuf is a built-in compile-fix task and its source tree.
func ringbuf(t *testing.T) (*topics.Task, string) {
	t.Helper()
	ts, err := builtin.CompileFixTasks()
	if err != nil {
		t.Fatal(err)
	}
	for i := range ts {
		if ts[i].TaskID == "murphy/cf-c-ringbuf" {
			return &ts[i], filepath.Join("..", "tasks", "builtin", "compilefix", "c-ringbuf", "src")
		}
	}
	t.Fatal("no built-in task murphy/cf-c-ringbuf")
	return nil, ""
}

// scripted is an agent that makes the given calls in order, then submits.
type scripted struct{ calls []episode.ToolCall }

func (s *scripted) Name() string { return "scripted" }

func (s *scripted) Tokenize(_ context.Context, text string) ([]int32, error) {
	return policy.Tokenize(text), nil
}

func (s *scripted) Next(_ context.Context, conv []episode.Message, _ int) (*episode.Turn, error) {
	n := 0
	for _, m := range conv {
		if m.Role == "assistant" {
			n++
		}
	}
	c := episode.ToolCall{ID: fmt.Sprintf("call_%d", n), Name: episode.ToolSubmit, Arguments: "{}"}
	if n < len(s.calls) {
		c = s.calls[n]
		c.ID = fmt.Sprintf("call_%d", n)
	}
	return &episode.Turn{Calls: []episode.ToolCall{c}, FinishReason: "tool_calls"}, nil
}

func call(name string, args map[string]any) episode.ToolCall {
	b, _ := json.Marshal(args)
	return episode.ToolCall{Name: name, Arguments: string(b)}
}

func runEpisode(t *testing.T, root string, agent episode.Agent, build episode.BuildFunc) *topics.Candidate {
	t.Helper()
	tools, err := episode.NewTools(root, build, episode.ToolsConfig{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := episode.Run(context.Background(), episode.Config{System: episode.DefaultSystemPrompt, Prompt: "fix the build"}, agent, tools)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Check(); err != nil {
		t.Fatal(err)
	}
	c := &topics.Candidate{SchemaVersion: topics.SchemaVersion, TreeID: "tr", TaskID: "murphy/cf-c-ringbuf", NodeID: "n", Turn: 1,
		TreeSpec: topics.TreeSpec{MaxTurns: 1, RewardPolicy: topics.RewardTiered}, Policy: agent.Name()}
	res.ApplyTo(c)
	return c
}

func governed(t *testing.T, task *topics.Task, c *topics.Candidate, status string) *topics.Sample {
	t.Helper()
	g, err := govern.NewGovernor(govern.DefaultConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ex := &topics.Execution{Candidate: *c, Status: status, TestsTotal: 1}
	if status == topics.StatusPassed {
		ex.TestsPassed = 1
		ex.Results = []topics.TestResult{{Status: topics.StatusPassed}}
	}
	res, err := g.Govern(context.Background(), ex, tasks.NewMemory([]topics.Task{*task}))
	if err != nil {
		t.Fatal(err)
	}
	return res.Sample
}

// checkWeights asserts that every action token of a scored sample has its
// step's score and every tool-output token weight 0.
func checkWeights(t *testing.T, s *topics.Sample) {
	t.Helper()
	for i, st := range s.ToolSteps {
		for k := st.ActionStart; k < st.End; k++ {
			want := s.StepScores[i]
			if k >= st.ActionEnd {
				want = 0
			}
			if s.LossWeights[k] != want {
				t.Fatalf("step %d (%s) token %d: weight %v, want %v", i, st.Tool, k, s.LossWeights[k], want)
			}
		}
	}
}

// TestEpisodeProcessScores: the method's process rewards with govern's
// defaults. A repair episode (read, edit, build, edit, build, read, a no-op
// edit, submit) whose patch built is scored by what each step does: the
// build that verifies an edit and the read of a file just edited are
// useful (1), the no-op edit is not (0); the scores are the loss weights of
// the actions, tool outputs weigh 0. The same episode whose patch did not
// build (or apply) carries no scores.
func TestEpisodeProcessScores(t *testing.T) {
	task, root := ringbuf(t)
	builds := 0
	build := func(context.Context, map[string][]byte, []string) (bool, string, error) {
		builds++
		return builds > 1, fmt.Sprintf("build %d", builds), nil
	}
	read := map[string]any{"path": "ringbuf.c"}
	agent := &scripted{calls: []episode.ToolCall{
		call(episode.ToolReadFile, read),
		call(episode.ToolEdit, map[string]any{"path": "ringbuf.c", "old": "    if (n > rb->len) {\n", "new": "    size_t k;\n    if (n > rb->len) {\n"}),
		call(episode.ToolBuild, nil),
		call(episode.ToolEdit, map[string]any{"path": "ringbuf.c", "old": "    size_t k;\n", "new": "    size_t i;\n"}),
		call(episode.ToolBuild, nil),
		call(episode.ToolReadFile, read),
		call(episode.ToolEdit, map[string]any{"path": "ringbuf.c", "old": "    size_t i;\n", "new": "    size_t  i;\n"}),
	}}
	c := runEpisode(t, root, agent, build)
	if c.EpisodeEnd != episode.EndSubmitted || len(c.ToolSteps) != 8 {
		t.Fatalf("episode ended %s after %d steps", c.EpisodeEnd, len(c.ToolSteps))
	}
	for _, status := range []string{topics.StatusPassed, topics.StatusWrongAnswer} {
		s := governed(t, task, c, status)
		want := []float32{1, 1, 1, 1, 1, 1, 0, 1}
		if !slices.Equal(s.StepScores, want) {
			t.Fatalf("%s: step scores %v, want %v", status, s.StepScores, want)
		}
		checkWeights(t, s)
	}
	for _, status := range []string{topics.StatusCompileError, topics.StatusPatchFailed, topics.StatusTimeout} {
		s := governed(t, task, c, status)
		if s.StepScores != nil || s.Route != topics.RouteTrain {
			t.Fatalf("%s: route %s, scores %v: want train without scores", status, s.Route, s.StepScores)
		}
		if st := s.ToolSteps[0]; s.LossWeights[st.ActionStart] != 1 || s.LossWeights[st.ActionEnd] != 0 {
			t.Fatalf("%s: action weight %v, output weight %v", status, s.LossWeights[st.ActionStart], s.LossWeights[st.ActionEnd])
		}
	}
}

// TestSimulatedEpisodesRouted governs the simulated agent's episodes (the
// agent murphy run uses) with the defaults: compiled episodes that ended
// normally are scored, episodes that used up their step budget or ended
// without a tool call keep only their last step (penalty route), and
// episodes out of context are masked.
func TestSimulatedEpisodesRouted(t *testing.T) {
	task, root := ringbuf(t)
	cfg := episode.DefaultSimulatedConfig()
	cfg.PNoSubmit, cfg.PNoToolCall = 0.25, 0.25
	ends := map[string]int{}
	for i := range 40 {
		prompt := &topics.Prompt{TaskID: task.TaskID, Text: task.Prompt, Turn: 1}
		agent, err := episode.NewSimulatedAgent(cfg, task, prompt, fmt.Sprintf("node-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		c := runEpisode(t, root, agent, nil)
		ends[c.EpisodeEnd]++
		s := governed(t, task, c, topics.StatusPassed)
		switch c.EpisodeEnd {
		case episode.EndSubmitted:
			if s.Route != topics.RouteTrain || len(s.StepScores) != len(govern.StepSpans(c)) {
				t.Fatalf("submitted: route %s cause %s, %d scores", s.Route, s.FailureCause, len(s.StepScores))
			}
			checkWeights(t, s)
		case episode.EndStepBudget, episode.EndNoToolCall:
			want := govern.CauseExcessiveSteps
			if c.EpisodeEnd == episode.EndNoToolCall {
				want = govern.CauseNoToolCall
			}
			if s.Route != topics.RouteLastStepPenalty || s.FailureCause != want || s.Reward != 0 || s.ChildrenRequested != 0 {
				t.Fatalf("%s: route %s cause %s reward %g", c.EpisodeEnd, s.Route, s.FailureCause, s.Reward)
			}
			spans := govern.StepSpans(c)
			last := spans[len(spans)-1]
			for k, w := range s.LossWeights {
				if w != 0 && (k < last.Start || k >= last.End) {
					t.Fatalf("%s: token %d outside the last step weighs %v", c.EpisodeEnd, k, w)
				}
			}
		}
	}
	if ends[episode.EndSubmitted] == 0 || ends[episode.EndStepBudget] == 0 || ends[episode.EndNoToolCall] == 0 {
		t.Fatalf("the seeds do not cover every ending: %v", ends)
	}
	t.Logf("episode ends: %v", ends)
}

// TestEpisodeRepetitionOnActions: a submitted, passing episode that read a
// file full of repeated lines (a table of zeros) is not a repetition loop:
// tool outputs are the environment's, the detector reads the actions.
func TestEpisodeRepetitionOnActions(t *testing.T) {
	task, _ := ringbuf(t)
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "table.txt"), []byte(strings.Repeat("0 0 0 0 0 0 0 0\n", 300)), 0o644); err != nil {
		t.Fatal(err)
	}
	agent := &scripted{calls: []episode.ToolCall{call(episode.ToolReadFile, map[string]any{"path": "table.txt"})}}
	c := runEpisode(t, root, agent, nil)
	s := governed(t, task, c, topics.StatusPassed)
	if s.Route != topics.RouteTrain || s.Reward == 0 {
		t.Fatalf("route %s cause %s reward %g", s.Route, s.FailureCause, s.Reward)
	}
}

// TestRealServerEpisodeGoverned runs one tool-calling episode against
// llama.cpp's OpenAI server (llama-cpp-python, the tiny random-weight model
// of openaitest; skipped when it is not installed, unless CI=true), forcing
// list_files as the server's chatml format renders no tools, and governs
// it with the defaults: an episode that used up its step budget keeps only
// its last step (one out of the server's small context window is masked),
// and every step recorded its tool's role.
func TestRealServerEpisodeGoverned(t *testing.T) {
	srv := openaitest.StartLlama(t)
	cfg := openai.DefaultConfig()
	cfg.BaseURL, cfg.Model, cfg.TokenizePath = srv.BaseURL, srv.Model, srv.TokenizePath
	cfg.Timeout, cfg.MaxRetries = 30*time.Second, 1
	client, err := openai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	seed := int64(5)
	agent, err := episode.NewOpenAIAgent(client, episode.OpenAIAgentConfig{
		Temperature: 1, Seed: &seed, Logprobs: true, MaxTokens: 40, ToolChoice: openai.ForceTool(episode.ToolListFiles)})
	if err != nil {
		t.Fatal(err)
	}
	task, root := ringbuf(t)
	tools, err := episode.NewTools(root, nil, episode.ToolsConfig{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := episode.Run(context.Background(), episode.Config{System: "fix", Prompt: "build fails", MaxSteps: 2}, agent, tools)
	if err != nil {
		t.Fatal(err)
	}
	if res.EpisodeEnd != episode.EndStepBudget && res.EpisodeEnd != episode.EndContext {
		t.Fatalf("a forced tool call every turn ended %s after %d steps", res.EpisodeEnd, len(res.Steps))
	}
	c := &topics.Candidate{SchemaVersion: topics.SchemaVersion, TreeID: "tr", TaskID: task.TaskID, NodeID: "n", Turn: 1,
		TreeSpec: topics.TreeSpec{MaxTurns: 1}, Policy: agent.Name()}
	res.ApplyTo(c)
	for _, st := range c.ToolSteps {
		if st.Role != topics.ToolRoleList {
			t.Fatalf("step %s recorded role %q", st.Tool, st.Role)
		}
	}
	s := governed(t, task, c, topics.StatusPassed)
	if res.EpisodeEnd == episode.EndContext { // the server's 256-token window
		if s.Route != topics.RouteMasked || s.FailureCause != govern.CauseContextExhausted {
			t.Fatalf("out of context: route %s cause %s", s.Route, s.FailureCause)
		}
		return
	}
	if s.Route != topics.RouteLastStepPenalty || s.FailureCause != govern.CauseExcessiveSteps {
		t.Fatalf("route %s cause %s", s.Route, s.FailureCause)
	}
	last := c.ToolSteps[len(c.ToolSteps)-1]
	for k, w := range s.LossWeights {
		want := float32(0)
		if k >= last.ActionStart && k < last.ActionEnd {
			want = 1
		}
		if w != want {
			t.Fatalf("token %d weight %v, want %v (last action [%d,%d))", k, w, want, last.ActionStart, last.ActionEnd)
		}
	}
}
