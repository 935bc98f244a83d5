package generate

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/murphy-rl/murphy/compilefix/patch"
	"github.com/murphy-rl/murphy/compilefix/workspace"
	"github.com/murphy-rl/murphy/sandbox"
	"github.com/murphy-rl/murphy/stages/generate/episode"
	"github.com/murphy-rl/murphy/tasks"
	"github.com/murphy-rl/murphy/tasks/builtin"
	"github.com/murphy-rl/murphy/tasks/submit"
	"github.com/murphy-rl/murphy/topics"
)

// episodeTaskID is the built-in compile-fix task the episode tests run: a
// small C project (make, two target diagnostics), quick to build.
const episodeTaskID = "murphy/cf-c-ini"

// compileFixTask is a built-in compile-fix task by id.
func compileFixTask(t *testing.T, id string) topics.Task {
	t.Helper()
	ts, err := builtin.CompileFixTasks()
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range ts {
		if task.TaskID == id {
			return task
		}
	}
	t.Fatalf("no built-in compile-fix task %s", id)
	return topics.Task{}
}

// snapshotCache is a cache over a mem:// store holding the built-in
// compile-fix snapshots.
func snapshotCache(t *testing.T) *workspace.Cache {
	t.Helper()
	ctx := context.Background()
	store, err := workspace.OpenStore(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	snaps, err := builtin.CompileFixSnapshots()
	if err != nil {
		t.Fatal(err)
	}
	for digest, tarball := range snaps {
		if err := store.Put(ctx, digest, tarball); err != nil {
			t.Fatal(err)
		}
	}
	cache, err := workspace.NewCache(t.TempDir(), 64<<20, store)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cache.Close() })
	return cache
}

// realBuilder is the build sandbox on the episodes' default uids; the test
// is skipped where it cannot run.
func realBuilder(t *testing.T) *sandbox.Builder {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the build sandbox needs root")
	}
	cfg := DefaultEpisodesConfig().Builder
	if _, err := os.Stat(cfg.Bwrap); err != nil {
		t.Skip("bubblewrap is not installed")
	}
	cfg.Workers = 2
	b, err := sandbox.NewBuilder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// episodeStage is a stage with episodes on the given runtime over ts.
func episodeStage(t *testing.T, eps *Episodes, ts []topics.Task, mut func(*Config)) *Stage {
	t.Helper()
	cfg := DefaultConfig()
	cfg.InstanceID = "test"
	cfg.Concurrency = 4
	cfg.Episodes.Enabled = true
	if mut != nil {
		mut(&cfg)
	}
	s, err := NewStage(cfg, tasks.NewMemory(ts), testCatalog(), prometheus.NewRegistry(), WithEpisodes(eps))
	if err != nil {
		t.Fatal(err)
	}
	s.now = func() time.Time { return time.Unix(100, 0) }
	return s
}

// generateGroup handles the root prompt of tree 0 with g children and
// decodes what the stage emitted.
func generateGroup(t *testing.T, s *Stage, task topics.Task, g int) []topics.Candidate {
	t.Helper()
	rec, _ := rootRecord(t, testCatalog(), task, g, 0)
	outs, err := s.HandlePrompt(context.Background(), rec)
	if err != nil {
		t.Fatal(err)
	}
	cs := decodeOuts(t, outs)
	if len(cs) != g {
		t.Fatalf("%d candidates for a group of %d", len(cs), g)
	}
	for i := range cs {
		if err := cs[i].Validate(); err != nil {
			t.Fatalf("candidate %d: %v", i, err)
		}
	}
	return cs
}

func TestEpisodeConfig(t *testing.T) {
	d := DefaultConfig()
	if d.Episodes.Enabled {
		t.Fatal("episodes are on by default")
	}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	if d.Episodes.Builder.UIDBase == 63000 || d.Episodes.Builder.UIDBase == sandbox.DefaultConfig().UIDBase {
		t.Fatalf("episode builder uids %d overlap execute's", d.Episodes.Builder.UIDBase)
	}
	for name, mut := range map[string]func(*EpisodesConfig){
		"max_steps":             func(c *EpisodesConfig) { c.MaxSteps = 0 },
		"max_tokens":            func(c *EpisodesConfig) { c.MaxTokens = -1 },
		"max_tool_output_bytes": func(c *EpisodesConfig) { c.MaxToolOutputBytes = 10 },
		"cache_mb":              func(c *EpisodesConfig) { c.CacheMB = 0 },
		"builder":               func(c *EpisodesConfig) { c.Builder.UIDBase = 0 },
		"p_repair":              func(c *EpisodesConfig) { c.Simulated.PRepair = 2 },
	} {
		c := DefaultConfig()
		mut(&c.Episodes)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: error %v", name, err)
		}
	}
	c := DefaultConfig()
	c.Episodes.Enabled = true
	c.Policy.Kind = PolicyOpenAI
	c.Policy.OpenAI.Client.BaseURL, c.Policy.OpenAI.Client.Model = "http://127.0.0.1:1/v1", "m"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "tokenize_path") {
		t.Fatalf("openai episodes without a tokenize endpoint: %v", err)
	}
	// Enabled without a runtime, or without a store to open one.
	c = DefaultConfig()
	c.Episodes.Enabled = true
	if _, err := NewStage(c, tasks.NewMemory(nil), testCatalog(), nil); err == nil {
		t.Fatal("episodes enabled without WithEpisodes")
	}
	if _, _, err := OpenEpisodes(context.Background(), c.Episodes); err == nil || !strings.Contains(err.Error(), "store") {
		t.Fatalf("OpenEpisodes without a store: %v", err)
	}
}

// TestEpisodeGenerateSimulated runs a group of simulated-agent episodes on
// a built-in compile-fix task with the real build sandbox.
func TestEpisodeGenerateSimulated(t *testing.T) {
	cache := snapshotCache(t)
	builder := realBuilder(t)
	task := compileFixTask(t, episodeTaskID)
	// More degenerate episodes than the default, and a short step budget:
	// an episode that never submits builds on every other step.
	mut := func(c *Config) {
		c.Episodes.MaxSteps = 8
		c.Episodes.Simulated.Seed = 3
		c.Episodes.Simulated.PNoSubmit, c.Episodes.Simulated.PNoToolCall = 0.15, 0.1
	}
	eps := &Episodes{Cache: cache, Builder: builder, Dir: t.TempDir()}
	s := episodeStage(t, eps, []topics.Task{task}, mut)
	const g = 16
	cs := generateGroup(t, s, task, g)

	tree, err := cache.Get(context.Background(), task.CompileFix.Workspace)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Release()
	ends := map[string]int{}
	var buildOK, buildFailed, diffs int
	for i, c := range cs {
		if c.InfraCause != "" {
			t.Fatalf("candidate %d: infra %s: %s", i, c.InfraCause, c.InfraError)
		}
		if !strings.Contains(c.Policy, "not a model") || c.PolicyVersion != s.pol.Version() {
			t.Fatalf("candidate %d: policy %q version %d", i, c.Policy, c.PolicyVersion)
		}
		if len(c.ToolSteps) == 0 || len(c.StepEnds) != len(c.ToolSteps) {
			t.Fatalf("candidate %d: %d steps, %d step ends", i, len(c.ToolSteps), len(c.StepEnds))
		}
		if len(c.PromptTokenIDs) == 0 || len(c.ResponseLogprobs) != len(c.ResponseTokenIDs) {
			t.Fatalf("candidate %d: %d prompt tokens, %d logprobs for %d tokens", i, len(c.PromptTokenIDs),
				len(c.ResponseLogprobs), len(c.ResponseTokenIDs))
		}
		prev := 0
		for k, st := range c.ToolSteps {
			if c.StepEnds[k] != st.End || st.ActionStart != prev || st.ActionEnd <= st.ActionStart {
				t.Fatalf("candidate %d step %d: spans [%d,%d,%d) end %d after %d", i, k, st.ActionStart, st.ActionEnd, st.End, c.StepEnds[k], prev)
			}
			for j := st.ActionEnd; j < st.End; j++ {
				if c.ResponseLogprobs[j] != 0 {
					t.Fatalf("candidate %d step %d: tool output token %d has logprob %v", i, k, j, c.ResponseLogprobs[j])
				}
			}
			prev = st.End
			if st.Tool == episode.ToolBuild {
				switch {
				case strings.HasPrefix(st.Output, "build succeeded"):
					buildOK++
				case strings.HasPrefix(st.Output, "build failed"):
					buildFailed++
					if !strings.Contains(st.Output, "error") {
						t.Fatalf("candidate %d step %d: a failed build without its diagnostics: %q", i, k, st.Output)
					}
				case st.Output != "":
					t.Fatalf("candidate %d step %d: build answered %q", i, k, st.Output)
				}
			}
		}
		switch c.EpisodeEnd {
		case episode.EndSubmitted, episode.EndStepBudget, episode.EndNoToolCall, episode.EndContext:
		default:
			t.Fatalf("candidate %d: episode end %q", i, c.EpisodeEnd)
		}
		ends[c.EpisodeEnd]++
		if last := c.ToolSteps[len(c.ToolSteps)-1]; (c.EpisodeEnd == episode.EndSubmitted) != (last.Tool == episode.ToolSubmit) {
			t.Fatalf("candidate %d: end %s, last step %s", i, c.EpisodeEnd, last.Tool)
		}
		if c.Code != "" {
			diffs++
			if !strings.HasPrefix(c.Code, "diff --git ") {
				t.Fatalf("candidate %d: code is not a diff: %q", i, c.Code)
			}
			if _, err := patch.Apply(tree.Dir(), c.Code, patch.Options{Protected: patch.DefaultProtected(task.CompileFix.Build)}); err != nil {
				t.Fatalf("candidate %d: its diff does not apply: %v\n%s", i, err, c.Code)
			}
		}
	}
	t.Logf("ends %v; builds ok %d, failed %d; %d diffs", ends, buildOK, buildFailed, diffs)
	if ends[episode.EndSubmitted] == 0 || ends[episode.EndStepBudget]+ends[episode.EndNoToolCall] == 0 {
		t.Fatalf("ends %v: want submitted and degenerate episodes", ends)
	}
	if buildOK == 0 || buildFailed == 0 || diffs == 0 {
		t.Fatalf("builds ok %d, failed %d, diffs %d: want both kinds of build and some diffs", buildOK, buildFailed, diffs)
	}

	// Determinism: a fresh stage with the same seed gives the same
	// children (the first ones of a smaller group have the same node ids).
	s2 := episodeStage(t, &Episodes{Cache: cache, Builder: builder, Dir: t.TempDir()}, []topics.Task{task}, mut)
	const g2 = 5
	again := generateGroup(t, s2, task, g2)
	for i := range again {
		a, b := cs[i], again[i]
		b.GroupSize, b.TreeSpec = a.GroupSize, a.TreeSpec
		if !reflect.DeepEqual(a, b) {
			ja, _ := json.Marshal(a)
			jb, _ := json.Marshal(b)
			t.Fatalf("child %d differs between runs:\n%s\n%s", i, ja, jb)
		}
	}
}

// fakeBuilder answers every build with build; Warm records its jobs and
// makes the key's seed.
type fakeBuilder struct {
	build func(job *sandbox.BuildJob) (*sandbox.BuildResult, error)
	warms []sandbox.BuildJob
	seeds map[string]string
}

func (f *fakeBuilder) Build(_ context.Context, job *sandbox.BuildJob) (*sandbox.BuildResult, error) {
	return f.build(job)
}

func (f *fakeBuilder) Warm(_ context.Context, key string, job *sandbox.BuildJob) (*sandbox.BuildResult, error) {
	f.warms = append(f.warms, *job)
	if f.seeds == nil {
		f.seeds = map[string]string{}
	}
	f.seeds[key] = "/seed/" + key
	return f.build(job)
}

func (f *fakeBuilder) Seed(key string) string { return f.seeds[key] }

// TestEpisodeInfraFailures: a build sandbox that fails, a snapshot the
// store lacks and an inference server that is down each mark the
// children as infrastructure failures, never as empty responses; tasks of
// other kinds keep their single responses.
func TestEpisodeInfraFailures(t *testing.T) {
	cache := snapshotCache(t)
	task := compileFixTask(t, episodeTaskID)
	broken := &fakeBuilder{build: func(job *sandbox.BuildJob) (*sandbox.BuildResult, error) {
		return &sandbox.BuildResult{Commands: make([]sandbox.CommandResult, len(job.Commands)),
			SandboxError: "build driver did not start", SandboxErrorKind: topics.SandboxErrorHarness}, nil
	}}
	lost := task
	lost.TaskID = "murphy/cf-lost"
	lost.CompileFix = &topics.CompileFix{}
	*lost.CompileFix = *task.CompileFix
	lost.CompileFix.Workspace = "sha256:" + strings.Repeat("0", 64)
	py := testTasks()[0]
	ts := []topics.Task{task, lost, py}

	s := episodeStage(t, &Episodes{Cache: cache, Builder: broken}, ts, func(c *Config) {
		c.Episodes.Simulated.PBuild = 1 // every episode builds
	})
	check := func(cs []topics.Candidate, cause string) {
		t.Helper()
		for i, c := range cs {
			if c.InfraCause != cause || c.InfraError == "" || c.EpisodeEnd != episode.EndError ||
				len(c.ResponseTokenIDs) != 0 || len(c.ToolSteps) != 0 || c.Code != "" {
				t.Fatalf("candidate %d: infra %q (%s), end %q, %d tokens, %d steps; want %s",
					i, c.InfraCause, c.InfraError, c.EpisodeEnd, len(c.ResponseTokenIDs), len(c.ToolSteps), cause)
			}
		}
	}
	cs := generateGroup(t, s, task, 4)
	check(cs, InfraSandbox)
	if !strings.Contains(cs[0].InfraError, "build driver did not start") {
		t.Fatalf("infra error %q", cs[0].InfraError)
	}
	check(generateGroup(t, s, lost, 2), InfraWorkspace)
	for i, c := range generateGroup(t, s, py, 3) {
		if c.InfraCause != "" || c.EpisodeEnd != "" || len(c.ToolSteps) != 0 || c.ResponseText == "" {
			t.Fatalf("python candidate %d: infra %q, end %q, %d steps", i, c.InfraCause, c.EpisodeEnd, len(c.ToolSteps))
		}
	}

	// The OpenAI policy with its server down.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	s = episodeStage(t, &Episodes{Cache: cache, Builder: broken}, ts, func(c *Config) {
		c.Policy.Kind = PolicyOpenAI
		oc := &c.Policy.OpenAI.Client
		oc.BaseURL, oc.Model, oc.TokenizePath = "http://"+addr+"/v1", "m", "/tokenize"
		oc.MaxRetries, oc.Timeout = 0, 5*time.Second
	})
	cs = generateGroup(t, s, task, 3)
	check(cs, topics.InfraInference)
	if cs[0].Policy != s.pol.Name() {
		t.Fatalf("policy %q, want %q", cs[0].Policy, s.pol.Name())
	}
}

// TestEpisodeBuildRefusesBuildConfiguration: the build tool does not build
// edits of the build configuration.
func TestEpisodeBuildRefusesBuildConfiguration(t *testing.T) {
	task := compileFixTask(t, episodeTaskID)
	built := false
	s := episodeStage(t, &Episodes{Cache: snapshotCache(t), Builder: &fakeBuilder{build: func(*sandbox.BuildJob) (*sandbox.BuildResult, error) {
		built = true
		return nil, errors.New("unexpected build")
	}}}, []topics.Task{task}, nil)
	ok, out, err := s.buildFunc(&task, t.TempDir())(context.Background(), map[string][]byte{"Makefile": []byte("all:\n\ttrue\n")}, nil)
	if err != nil || ok || built || !strings.Contains(out, "Makefile is build configuration") {
		t.Fatalf("ok %v, built %v, err %v, output %q", ok, built, err, out)
	}
}

// TestEpisodeBuildSeed: a Go task's builds are seeded by key from one
// warm-up (Builder.Warm) of the snapshot with the reference patch.
func TestEpisodeBuildSeed(t *testing.T) {
	cache := snapshotCache(t)
	task := compileFixTask(t, "murphy/cf-go-lru")
	var jobs []sandbox.BuildJob
	fb := &fakeBuilder{build: func(job *sandbox.BuildJob) (*sandbox.BuildResult, error) {
		jobs = append(jobs, *job)
		return &sandbox.BuildResult{Commands: []sandbox.CommandResult{{Argv: job.Commands[0], Ran: true}}}, nil
	}}
	s := episodeStage(t, &Episodes{Cache: cache, Builder: fb, Dir: t.TempDir()}, []topics.Task{task}, nil)
	tree, err := cache.Get(context.Background(), task.CompileFix.Workspace)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Release()
	build := s.buildFunc(&task, tree.Dir())
	for range 2 {
		if ok, _, err := build(context.Background(), map[string][]byte{"lru/new.go": []byte("package lru\n")}, nil); !ok || err != nil {
			t.Fatalf("build: %v %v", ok, err)
		}
	}
	if len(fb.warms) != 1 || fb.warms[0].Overlay == "" || len(jobs) != 3 {
		t.Fatalf("%d warm-ups (%+v), %d jobs: want one warm-up of the reference and two builds", len(fb.warms), fb.warms, len(jobs))
	}
	for _, j := range jobs[1:] {
		if j.SeedKey != "go" || j.Overlay == "" {
			t.Fatalf("build job %+v: want seeded by key go", j)
		}
	}
}

// TestEpisodePrompt: an episode is told to use its tools (never to reply
// with one diff block), sees the whole task, and a refinement sees the
// failed attempt and its feedback.
func TestEpisodePrompt(t *testing.T) {
	task := compileFixTask(t, episodeTaskID)
	root := &topics.Prompt{Text: submit.RootPromptText(&task)}
	got := EpisodePrompt(root, &task)
	if !strings.Contains(got, "Use the tools") || !strings.Contains(got, task.Prompt[:40]) || strings.Contains(got, "```diff code block") {
		t.Fatalf("root episode prompt:\n%s", got)
	}
	ref := &topics.Prompt{Text: "refine", Feedback: "Status: compile_error\nini.c:53:19: error: expected ';'", ParentCode: "--- a/ini.c\n+++ b/ini.c\n"}
	got = EpisodePrompt(ref, &task)
	if !strings.Contains(got, "ini.c:53:19") || !strings.Contains(got, "```diff\n--- a/ini.c") || !strings.Contains(got, "original files") {
		t.Fatalf("refinement episode prompt:\n%s", got)
	}
}

// TestEpisodesFollowVersions: agent episodes are generated at the version
// a root prompt is admitted at, as single responses are (they used to stay
// on the configured version, and under the bound their rows were dropped
// as stale).
func TestEpisodesFollowVersions(t *testing.T) {
	cache := snapshotCache(t)
	task := compileFixTask(t, episodeTaskID)
	ok := &fakeBuilder{build: func(job *sandbox.BuildJob) (*sandbox.BuildResult, error) {
		return &sandbox.BuildResult{Commands: make([]sandbox.CommandResult, len(job.Commands))}, nil
	}}
	s := episodeStage(t, &Episodes{Cache: cache, Builder: ok}, []topics.Task{task}, func(c *Config) { c.Versions.Follow = true })
	if err := s.ObserveVersion(context.Background(), &topics.PolicyVersion{SchemaVersion: topics.SchemaVersion, Version: 3, Model: "run-v3"}); err != nil {
		t.Fatal(err)
	}
	for i, c := range generateGroup(t, s, task, 2) {
		if c.PolicyVersion != 3 || c.EpisodeEnd == "" {
			t.Fatalf("episode %d: version %d, end %q: want version 3", i, c.PolicyVersion, c.EpisodeEnd)
		}
	}
}
