package generate

// Agent episodes (../../compilefix/README.md, "Agent episodes"). With
// episodes enabled, every child of a compile-fix prompt is one episode of
// package episode: the agent (the simulated one for the simulated policy,
// the OpenAI one for the OpenAI policy) reads, searches and edits a
// private view of the task's snapshot and runs the task's build in the
// build sandbox, then submits. The episode is one response; its diff is
// the candidate's code, which execute verifies from scratch.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"golang.org/x/sync/singleflight"

	"github.com/murphy-rl/murphy/compilefix/diag"
	"github.com/murphy-rl/murphy/compilefix/patch"
	"github.com/murphy-rl/murphy/compilefix/workspace"
	"github.com/murphy-rl/murphy/openai"
	"github.com/murphy-rl/murphy/sandbox"
	"github.com/murphy-rl/murphy/stages/generate/episode"
	"github.com/murphy-rl/murphy/stages/generate/policy"
	"github.com/murphy-rl/murphy/topics"
)

// Infrastructure causes of episode candidates beside topics.InfraInference
// (the server failed, or the agent could not be made) and
// topics.InfraContextOverflow (the prompt alone does not fit). Govern masks
// every "infra.*" cause.
const (
	// InfraSandbox: the build tool's sandbox failed (not the build).
	InfraSandbox = "infra.sandbox"
	// InfraWorkspace: the task's snapshot is missing or corrupt in the
	// workspace store, or the task has no compile-fix setting.
	InfraWorkspace = "infra.workspace"
)

// EpisodesConfig configures agent episodes for compile-fix tasks.
type EpisodesConfig struct {
	// Enabled makes every child of a compile-fix prompt an agent episode
	// (tools over the task's snapshot, the build run in the build sandbox)
	// instead of one sampled response. Other task kinds are not affected.
	Enabled bool `yaml:"enabled"`
	// MaxSteps bounds the model's turns of one episode; an episode that
	// has not submitted by then ends with step_budget.
	MaxSteps int `yaml:"max_steps"`
	// MaxTokens bounds an episode's response tokens, the model's and the
	// tools' outputs together (0 = no bound but the model's context).
	MaxTokens int `yaml:"max_tokens"`
	// MaxToolOutputBytes caps every tool answer, the build's diagnostics
	// included (head and tail kept around a note of what was cut).
	MaxToolOutputBytes int `yaml:"max_tool_output_bytes"`
	// SystemPrompt is the system message of every episode ("" = none).
	SystemPrompt string `yaml:"system_prompt"`
	// Store is the workspace store's URL (a directory, file://, s3://,
	// gs:// or mem://), the one execute reads; required when Enabled.
	Store string `yaml:"store"`
	// CacheDir holds the materialised snapshots ("" = a fresh temporary
	// directory, removed at shutdown). It must not be execute's cache
	// directory: a cache locks its directory.
	CacheDir string `yaml:"cache_dir"`
	// CacheMB bounds the materialised snapshots kept (least recently used
	// ones are evicted).
	CacheMB int `yaml:"cache_mb"`
	// Builder configures the build tool's sandbox. Keep its uid range
	// apart from execute's builder and the sandbox pool.
	Builder sandbox.BuilderConfig `yaml:"builder"`
	// Simulated configures the simulated agent (NOT a model), used with
	// the simulated policy.
	Simulated episode.SimulatedConfig `yaml:"simulated"`
	// ChatTemplate, with the OpenAI policy, takes the episodes' token ids
	// from the server's own chat-template tokenisation of every turn's
	// context: vllm (/tokenize with messages) or llama.cpp
	// (/apply-template, then /tokenize); "" renders tool turns in the
	// Hermes form (episode README "Token ids").
	ChatTemplate string `yaml:"chat_template"`
}

// DefaultEpisodesUIDBase is the first uid of the episodes' build slots:
// execute's builder starts at 63000, the sandbox pool at 61000.
const DefaultEpisodesUIDBase = 64000

// DefaultEpisodesConfig is off, 16 steps and 16384 tokens an episode, tool
// answers up to 4 KiB, 1 GiB of snapshots, the default builder on uids
// 64000 on, and the default simulated agent.
func DefaultEpisodesConfig() EpisodesConfig {
	b := sandbox.DefaultBuilderConfig()
	b.UIDBase = DefaultEpisodesUIDBase
	return EpisodesConfig{
		MaxSteps: episode.DefaultMaxSteps, MaxTokens: 16384, MaxToolOutputBytes: 4 << 10,
		SystemPrompt: episode.DefaultSystemPrompt, CacheMB: 1024, Builder: b,
		Simulated: episode.DefaultSimulatedConfig(),
	}
}

// Validate checks the configuration (the store is checked when the
// episodes are opened, OpenEpisodes).
func (c EpisodesConfig) Validate() error {
	var errs []error
	if c.MaxSteps < 1 {
		errs = append(errs, fmt.Errorf("max_steps must be >= 1, got %d", c.MaxSteps))
	}
	if c.MaxTokens < 0 {
		errs = append(errs, fmt.Errorf("max_tokens must be >= 0, got %d", c.MaxTokens))
	}
	if c.MaxToolOutputBytes < 256 {
		errs = append(errs, fmt.Errorf("max_tool_output_bytes must be >= 256, got %d", c.MaxToolOutputBytes))
	}
	if c.CacheMB < 1 {
		errs = append(errs, fmt.Errorf("cache_mb must be >= 1, got %d", c.CacheMB))
	}
	if err := c.Builder.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("builder: %w", err))
	}
	if err := c.Simulated.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.ChatTemplate != "" && !slices.Contains(openai.ChatTemplates(), c.ChatTemplate) {
		errs = append(errs, fmt.Errorf("chat_template %q: want one of %v", c.ChatTemplate, openai.ChatTemplates()))
	}
	if len(errs) > 0 {
		return fmt.Errorf("episodes: %w", errors.Join(errs...))
	}
	return nil
}

// Builder runs build jobs (a *sandbox.Builder in production); Warm runs a
// build of a trusted tree whose caches seed later jobs of its key.
type Builder interface {
	Build(ctx context.Context, job *sandbox.BuildJob) (*sandbox.BuildResult, error)
	Warm(ctx context.Context, key string, job *sandbox.BuildJob) (*sandbox.BuildResult, error)
	Seed(key string) string
}

// Episodes is what agent episodes run on.
type Episodes struct {
	// Cache materialises the tasks' snapshots (read-only trees).
	Cache *workspace.Cache
	// Builder runs the build tool.
	Builder Builder
	// Dir holds the build tool's per-build overlays ("" = os.TempDir()).
	Dir string
}

// OpenEpisodes opens what cfg names: the workspace store, a snapshot cache
// and a build sandbox. close releases them (after the stage has stopped).
func OpenEpisodes(ctx context.Context, cfg EpisodesConfig) (eps *Episodes, close func(), err error) {
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	if cfg.Store == "" {
		return nil, nil, errors.New("generate: episodes need a workspace store (episodes.store)")
	}
	var closers []func()
	// closeAll, not the named result: `return nil, nil, err` sets close to
	// nil before the deferred cleanup runs.
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	defer func() {
		if err != nil {
			closeAll()
		}
	}()
	cache, closeCache, err := workspace.OpenCache(ctx, cfg.Store, cfg.CacheDir, int64(cfg.CacheMB)<<20, "murphy-episode-workspaces-")
	if err != nil {
		return nil, nil, err
	}
	closers = append(closers, closeCache)
	work, err := os.MkdirTemp("", "murphy-episodes-")
	if err != nil {
		return nil, nil, err
	}
	closers = append(closers, func() { _ = os.RemoveAll(work) })
	b, err := sandbox.OpenBuilder(cfg.Builder) // shared with the process's other stages of an equal configuration
	if err != nil {
		return nil, nil, err
	}
	closers = append(closers, func() { _ = b.Close() })
	return &Episodes{Cache: cache, Builder: b, Dir: work}, closeAll, nil
}

// Option configures a Stage.
type Option func(*options)

type options struct {
	episodes *Episodes
	models   func(model string) (policy.Policy, error)
}

// WithModelPolicies gives the policy of each served model name when the
// stage follows policy versions (versions.follow); without it a stage
// built by NewStage with the openai policy builds one client per model and
// any other policy is used as is for every version.
func WithModelPolicies(f func(model string) (policy.Policy, error)) Option {
	return func(o *options) { o.models = f }
}

// WithEpisodes gives the stage what episodes run on; it is required when
// Config.Episodes.Enabled and ignored otherwise.
func WithEpisodes(e *Episodes) Option { return func(o *options) { o.episodes = e } }

// episodes is the stage's episode runtime.
type episodes struct {
	*Episodes
	cfg EpisodesConfig
	// sem bounds the episodes run at once (the stage's concurrency).
	sem chan struct{}
	m   *episodeMetrics

	// warmed are the toolchains whose one warm-up is over, whatever its
	// outcome (seedFor).
	mu     sync.Mutex
	warmed map[string]bool
	flight singleflight.Group
}

// episodeMetrics are the episodes' metrics.
type episodeMetrics struct {
	// Ends counts episodes by how they ended (episode.End*).
	Ends *prometheus.CounterVec
	// Steps counts the tool steps of episodes, by tool.
	Steps *prometheus.CounterVec
	// Builds counts the build tool's runs.
	Builds prometheus.Counter
	// Duration is the time of one episode.
	Duration prometheus.Histogram
}

func newEpisodeMetrics(reg prometheus.Registerer) *episodeMetrics {
	f := promauto.With(reg)
	l := prometheus.Labels{"stage": "generate"}
	m := &episodeMetrics{
		Ends: f.NewCounterVec(prometheus.CounterOpts{Name: "murphy_generate_episodes_total",
			Help: "Agent episodes, by how they ended.", ConstLabels: l}, []string{"end"}),
		Steps: f.NewCounterVec(prometheus.CounterOpts{Name: "murphy_generate_episode_steps_total",
			Help: "Tool steps of agent episodes, by tool.", ConstLabels: l}, []string{"tool"}),
		Builds: f.NewCounter(prometheus.CounterOpts{Name: "murphy_generate_episode_builds_total",
			Help: "Builds run by the build tool of agent episodes.", ConstLabels: l}),
		Duration: f.NewHistogram(prometheus.HistogramOpts{Name: "murphy_generate_episode_seconds",
			Help: "Duration of one agent episode.", ConstLabels: l, Buckets: prometheus.ExponentialBuckets(0.01, 2.5, 12)}),
	}
	return m
}

// setupEpisodes checks and installs the episode runtime.
func (s *Stage) setupEpisodes(o options, reg prometheus.Registerer) error {
	if !s.cfg.Episodes.Enabled {
		return nil
	}
	if o.episodes == nil || o.episodes.Cache == nil || o.episodes.Builder == nil {
		return errors.New("generate: episodes are enabled but have no snapshot cache and builder (OpenEpisodes, WithEpisodes)")
	}
	switch pol := s.pol.(type) {
	case *policy.Simulated:
	case *policy.OpenAI:
		if pol.Client().Config().TokenizePath == "" {
			return errors.New("generate: episodes need the server's tokenize endpoint (policy.openai.client.tokenize_path) to tokenize tool outputs")
		}
	default:
		return fmt.Errorf("generate: episodes need the simulated or the openai policy, not %s", s.pol.Name())
	}
	s.ep = &episodes{Episodes: o.episodes, cfg: s.cfg.Episodes, sem: make(chan struct{}, s.cfg.Concurrency),
		m: newEpisodeMetrics(reg), warmed: map[string]bool{}}
	return nil
}

// generateEpisodes runs the children of compile-fix prompt p as episodes,
// at most Concurrency episodes of the stage at once. It returns an error
// only when ctx ends or the workspace store cannot be read right now (the
// prompt is then redelivered).
func (s *Stage) generateEpisodes(ctx context.Context, p *topics.Prompt, task *topics.Task, ids []string) ([]*topics.Candidate, error) {
	start := time.Now()
	now := s.now().UTC()
	out := make([]*topics.Candidate, len(ids))
	// Episodes follow versions as single responses do: on the model of
	// p's version (its tree's, or the one it was admitted at).
	pol, err := s.versionedPolicy(p)
	if err != nil {
		return nil, fmt.Errorf("generate: policy for version %d: %w", p.PolicyVersion, err)
	}
	for i, id := range ids {
		out[i] = s.newCandidate(p, id, i, now)
		out[i].Policy = pol.Name()
	}
	failAll := func(cause string, err error) []*topics.Candidate {
		for _, c := range out {
			c.EpisodeEnd = episode.EndError
			markInfra(c, cause, err)
		}
		return out
	}
	cf := task.CompileFix
	if cf == nil || len(cf.Build) == 0 {
		return failAll(InfraWorkspace, fmt.Errorf("compile-fix task %s has no compile_fix setting", task.TaskID)), nil
	}
	tree, err := s.ep.Cache.Get(ctx, cf.Workspace)
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.Is(err, workspace.ErrNotFound), errors.Is(err, workspace.ErrCorrupt):
		return failAll(InfraWorkspace, fmt.Errorf("workspace %s: %w", cf.Workspace, err)), nil
	default:
		return nil, fmt.Errorf("generate: workspace %s: %w", cf.Workspace, err)
	}
	defer tree.Release()
	var wg sync.WaitGroup
launch:
	for _, c := range out {
		select {
		case s.ep.sem <- struct{}{}:
		case <-ctx.Done():
			break launch
		}
		wg.Add(1)
		go func() {
			defer func() { <-s.ep.sem; wg.Done() }()
			s.runEpisode(ctx, pol, p, task, tree.Dir(), c)
		}()
	}
	wg.Wait()
	s.m.observeCall(time.Since(start))
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return out, nil
}

// runEpisode runs candidate c's episode over the snapshot at root and
// fills c.
func (s *Stage) runEpisode(ctx context.Context, pol policy.Policy, p *topics.Prompt, task *topics.Task, root string, c *topics.Candidate) {
	start := time.Now()
	fail := func(cause string, err error) {
		c.EpisodeEnd = episode.EndError
		markInfra(c, cause, err)
		s.ep.m.Ends.WithLabelValues(episode.EndError).Inc()
	}
	agent, err := s.agentFor(pol, task, p, c.NodeID)
	if err != nil {
		fail(topics.InfraInference, fmt.Errorf("episode agent: %w", err))
		return
	}
	cfg := s.ep.cfg
	tools, err := episode.NewTools(root, s.buildFunc(task, root), episode.ToolsConfig{MaxOutputBytes: cfg.MaxToolOutputBytes})
	if err != nil {
		fail(InfraWorkspace, err)
		return
	}
	res, err := episode.Run(ctx, episode.Config{
		System: cfg.SystemPrompt, Prompt: EpisodePrompt(p, task), MaxSteps: cfg.MaxSteps, MaxTokens: cfg.MaxTokens,
		MaxToolOutputBytes: cfg.MaxToolOutputBytes,
	}, agent, tools)
	s.ep.m.Duration.Observe(time.Since(start).Seconds())
	s.ep.m.Builds.Add(float64(tools.Builds()))
	if err != nil {
		if ctx.Err() != nil {
			return // the whole prompt is redelivered
		}
		cause := topics.InfraInference
		var sf *sandboxFailure
		if errors.As(err, &sf) {
			cause = InfraSandbox
		}
		fail(cause, err)
		return
	}
	res.ApplyTo(c)
	c.Policy = agent.Name()
	if c.PromptTokenIDs == nil {
		c.PromptTokenIDs = []int32{}
	}
	if c.ResponseTokenIDs == nil {
		c.ResponseTokenIDs = []int32{}
	}
	if c.ResponseLogprobs == nil {
		c.ResponseLogprobs = []float32{}
	}
	s.ep.m.Ends.WithLabelValues(res.EpisodeEnd).Inc()
	for _, st := range res.Steps {
		s.ep.m.Steps.WithLabelValues(st.Tool).Inc()
	}
	if res.EpisodeEnd == episode.EndContext && len(res.ResponseTokenIDs) == 0 {
		// Not one token fitted: the prompt alone overflows the model's
		// context, as for a single response.
		markInfra(c, topics.InfraContextOverflow, errors.New("episode: the prompt leaves no room in the model's context window"))
	}
}

// agentFor is the agent of node nodeID's episode on policy pol (the model
// of the prompt's version): the simulated agent for the simulated policy,
// the OpenAI agent on the policy's client naming the version's model
// otherwise.
func (s *Stage) agentFor(pol policy.Policy, task *topics.Task, p *topics.Prompt, nodeID string) (episode.Agent, error) {
	switch pol := pol.(type) {
	case *policy.Simulated:
		return episode.NewSimulatedAgent(s.ep.cfg.Simulated, task, p, nodeID)
	case *policy.OpenAI:
		return episode.OpenAIAgentFor(pol, nodeID, s.ep.cfg.ChatTemplate)
	}
	if sim, ok := s.pol.(*policy.Simulated); ok && sim != nil {
		// A version's policy of a stage on the simulated policy.
		return episode.NewSimulatedAgent(s.ep.cfg.Simulated, task, p, nodeID)
	}
	return nil, fmt.Errorf("generate: no episode agent for policy %s", pol.Name())
}

// sandboxFailure is a build the sandbox could not run: an infrastructure
// failure of the episode, not a failed build.
type sandboxFailure struct{ err error }

func (e *sandboxFailure) Error() string { return "build sandbox: " + e.err.Error() }
func (e *sandboxFailure) Unwrap() error { return e.err }

// buildFunc is the build tool of an episode over the snapshot at root:
// the edits are written to a fresh overlay directory and the task's build
// runs in the build sandbox over the snapshot and the overlay. It answers
// whether the build passed and its diagnostics (parsed and rendered with
// their source lines, capped); an edit of build configuration is refused
// without building, as execute refuses the diff.
func (s *Stage) buildFunc(task *topics.Task, root string) episode.BuildFunc {
	cf := task.CompileFix
	protected := patch.DefaultProtected(cf.Build)
	limits := buildLimits(task)
	capBytes := s.ep.cfg.MaxToolOutputBytes
	return func(ctx context.Context, changed map[string][]byte, deleted []string) (bool, string, error) {
		var refused []string
		for p := range changed {
			if protected(p) {
				refused = append(refused, p)
			}
		}
		for _, p := range deleted {
			if protected(p) {
				refused = append(refused, p)
			}
		}
		if len(refused) > 0 {
			sort.Strings(refused)
			return false, fmt.Sprintf("the build did not run: %s is build configuration, which a fix may not change "+
				"(a submitted diff that changes it is refused); undo that edit", strings.Join(refused, ", ")), nil
		}
		overlay, err := s.writeOverlay(changed)
		if overlay != "" {
			defer os.RemoveAll(overlay)
		}
		if err != nil {
			return false, "", &sandboxFailure{err}
		}
		res, err := s.ep.Builder.Build(ctx, &sandbox.BuildJob{
			Tree: root, Overlay: overlay, Deleted: deleted, Commands: [][]string{cf.Build}, Limits: limits,
			SeedKey: s.seedFor(ctx, task, root),
		})
		switch {
		case err != nil && ctx.Err() != nil:
			return false, "", err
		case err != nil:
			return false, "", &sandboxFailure{err}
		case res.SandboxError != "":
			return false, "", &sandboxFailure{fmt.Errorf("%s (%s)", res.SandboxError, res.SandboxErrorKind)}
		case len(res.Commands) == 0:
			return false, "", &sandboxFailure{errors.New("no command result")}
		}
		cmd := &res.Commands[0]
		return cmd.OK(), renderBuild(toolOf(cf), cmd, res.Limits, root, overlay, changed, capBytes), nil
	}
}

// warmed are the toolchains whose builds start from a warm cache: a Go
// build with an empty cache compiles the standard library packages it
// imports (tens of seconds of CPU).
var warmed = map[string]bool{"go": true}

// seedFor is the builder's seed key for the task's toolchain ("" for
// none). The first build of a warmed toolchain is preceded by one warm-up
// (Builder.Warm) of the task's own files, the snapshot with the reference
// patch (trusted: no episode's edits), whose caches seed every later build
// of the toolchain. There is one warm-up per toolchain (another only when
// the context of the first ended): a failed one leaves the builds unseeded
// rather than doubling their cost.
func (s *Stage) seedFor(ctx context.Context, task *topics.Task, root string) string {
	tool := toolOf(task.CompileFix)
	if !warmed[tool] {
		return ""
	}
	e := s.ep
	e.mu.Lock()
	done := e.warmed[tool]
	e.mu.Unlock()
	if !done && e.Builder.Seed(tool) == "" {
		_, _, _ = e.flight.Do(tool, func() (any, error) {
			if s.warmUp(ctx, task, root, tool) {
				e.mu.Lock()
				e.warmed[tool] = true
				e.mu.Unlock()
			}
			return nil, nil
		})
	}
	return tool
}

// warmUp builds the snapshot at root with the task's reference patch
// through Builder.Warm; it reports whether that outcome is final.
func (s *Stage) warmUp(ctx context.Context, task *topics.Task, root, key string) bool {
	cf := task.CompileFix
	applied, err := patch.Apply(root, task.ReferencePatch, patch.Options{Protected: patch.DefaultProtected(cf.Build)})
	if err != nil {
		return true // no usable reference: no warm cache
	}
	overlay, err := s.writeOverlay(changedFiles(applied))
	if overlay != "" {
		defer os.RemoveAll(overlay)
	}
	if err != nil {
		return true
	}
	_, err = s.ep.Builder.Warm(ctx, key, &sandbox.BuildJob{
		Tree: root, Overlay: overlay, Deleted: applied.Deleted(), Commands: [][]string{cf.Build}, Limits: buildLimits(task),
	})
	return err == nil || ctx.Err() == nil
}

// changedFiles are a patch's new file contents by path.
func changedFiles(r *patch.Result) map[string][]byte {
	m := map[string][]byte{}
	for _, c := range r.Files {
		if !c.Deleted {
			m[c.Path] = c.New
		}
	}
	return m
}

// writeOverlay writes the changed files into a new directory readable by
// the build's uid.
func (s *Stage) writeOverlay(changed map[string][]byte) (string, error) {
	dir := s.ep.Dir
	if dir == "" {
		dir = os.TempDir()
	}
	overlay, err := os.MkdirTemp(dir, "murphy-episode-overlay-")
	if err != nil {
		return "", fmt.Errorf("overlay: %w", err)
	}
	if err := os.Chmod(overlay, 0o755); err != nil {
		return overlay, fmt.Errorf("overlay: %w", err)
	}
	for p, b := range changed {
		full := filepath.Join(overlay, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return overlay, fmt.Errorf("overlay: %w", err)
		}
		if err := os.WriteFile(full, b, 0o644); err != nil {
			return overlay, fmt.Errorf("overlay: %w", err)
		}
	}
	return overlay, nil
}

// renderBuild is what the build tool answers after the build: why it was
// stopped (a limit), then its diagnostics with source excerpts (from the
// episode's edits where it changed the file), else its raw output, within
// about capBytes.
func renderBuild(tool string, cmd *sandbox.CommandResult, lim sandbox.BuildLimits, root, overlay string,
	changed map[string][]byte, capBytes int) string {
	var b strings.Builder
	switch {
	case cmd.TimedOut:
		fmt.Fprintf(&b, "The build exceeded its time limit (%s of CPU time, %s wall).\n", lim.CPU, lim.Wall)
	case cmd.MemoryKilled:
		b.WriteString("The build ran out of memory.\n")
	case cmd.OutputLimited:
		fmt.Fprintf(&b, "The build wrote more than %d bytes of output.\n", lim.OutputBytes)
	case cmd.DiskFull && !cmd.OK():
		fmt.Fprintf(&b, "The build filled the workspace (%d MB).\n", lim.DiskMB)
	}
	room := max(capBytes-b.Len(), 256)
	ds := diag.Parse(tool, cmd.Output, "/work")
	switch {
	case len(ds) > 0:
		for i := range ds {
			if ds[i].Excerpt != "" {
				continue
			}
			dir := root
			if _, ok := changed[ds[i].File]; ok {
				dir = overlay
			}
			ds[i].Excerpt = diag.Excerpt(dir, ds[i], 2)
		}
		b.WriteString(diag.Render(ds, "", room))
	case len(cmd.Output) > 0 && !cmd.OK():
		b.WriteString(episode.CapOutput(string(cmd.Output), room))
	case !cmd.OK() && cmd.Signal != "":
		fmt.Fprintf(&b, "The build was killed by %s.\n", cmd.Signal)
	case !cmd.OK():
		fmt.Fprintf(&b, "The build exited with status %d.\n", cmd.ExitCode)
	}
	return b.String()
}

// buildLimits maps a task's limits onto the build sandbox's, as execute
// does for its builds.
func buildLimits(task *topics.Task) sandbox.BuildLimits {
	var l sandbox.BuildLimits
	if task.TimeoutMS > 0 {
		l.CPU = time.Duration(task.TimeoutMS) * time.Millisecond
		l.Wall = 2*l.CPU + 5*time.Second
	}
	if task.CompileFix != nil {
		l.DiskMB = task.CompileFix.DiskMB
	}
	return l
}

// toolOf is the diagnostics parser's hint for a task.
func toolOf(cf *topics.CompileFix) string {
	if cf.Toolchain != "" {
		return cf.Toolchain
	}
	return filepath.Base(cf.Build[0])
}

// EpisodePrompt is the user turn of an agent episode: the task (its
// statement, build command, diagnostics and files) with an instruction to
// use the tools, not the single-response instruction of p.Text (reply with
// one diff); a refinement adds the failed attempt and its feedback. Each
// episode starts from the original files.
func EpisodePrompt(p *topics.Prompt, task *topics.Task) string {
	var b strings.Builder
	b.WriteString("The build of this project fails. Use the tools to find and fix the cause, run the build, and call submit when it passes.\n\n")
	b.WriteString(strings.TrimRight(task.Prompt, "\n"))
	b.WriteString("\n")
	if p.Feedback != "" {
		b.WriteString("\nAn earlier attempt was not accepted. The workspace is back at the original files.\n")
		if strings.TrimSpace(p.ParentCode) != "" {
			fmt.Fprintf(&b, "Earlier attempt:\n```diff\n%s\n```\n", strings.TrimRight(p.ParentCode, "\n"))
		}
		fmt.Fprintf(&b, "Its result:\n%s\n", strings.TrimRight(p.Feedback, "\n"))
	}
	return b.String()
}
