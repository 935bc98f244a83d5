// Package compilefix evaluates compile-fix candidates (compilefix/README.md): it
// applies a candidate's diff to the task's cached snapshot, builds it in the
// build sandbox and compares its diagnostics with the snapshot's baseline.
package compilefix

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/murphy-rl/murphy/compilefix/diag"
	"github.com/murphy-rl/murphy/compilefix/patch"
	"github.com/murphy-rl/murphy/compilefix/workspace"
	"github.com/murphy-rl/murphy/sandbox"
	"github.com/murphy-rl/murphy/topics"
)

// Outcome is the verdict on one candidate patch.
type Outcome struct {
	Status       string
	TestsPassed  int
	TestsTotal   int
	PassRate     float64
	Feedback     string
	Results      []topics.TestResult
	SandboxError string
	// SandboxErrorKind classifies SandboxError (topics.SandboxError*).
	SandboxErrorKind string
	// MaxRunCPU is the CPU time of the build.
	MaxRunCPU time.Duration
	// Diagnostics are the build's error diagnostics that are not in the
	// baseline or are targets still present; TargetsFixed and TargetsTotal
	// count the task's target diagnostics gone from the patched build.
	Diagnostics  []topics.Diagnostic
	TargetsFixed int
	TargetsTotal int
}

// Builder runs build jobs (a *sandbox.Builder in production). Warm runs a
// build of a trusted tree and keeps its caches as the seed of later jobs
// with that SeedKey.
type Builder interface {
	Build(ctx context.Context, job *sandbox.BuildJob) (*sandbox.BuildResult, error)
	Warm(ctx context.Context, key string, job *sandbox.BuildJob) (*sandbox.BuildResult, error)
	Seed(key string) string
}

// Evaluator evaluates compile-fix candidates (compilefix/README.md): it applies
// the candidate's diff to the task's cached snapshot, builds the result in
// the build sandbox and compares its diagnostics with the snapshot's
// baseline, recorded once per snapshot.
type Evaluator struct {
	Builder Builder
	Cache   *workspace.Cache
	// Dir holds per-job overlays ("" = os.TempDir()).
	Dir string
	// Patch bounds the candidate's diff (zero fields: the patch defaults).
	Patch patch.Options

	mu        sync.Mutex
	baselines map[string]*baseline
	flight    singleflight.Group
}

// baseline is the unpatched build of one snapshot.
type baseline struct {
	diags    []topics.Diagnostic
	ok       bool   // the unpatched tree builds
	note     string // why the baseline could not be recorded, "" when it was
	timedOut bool
	output   string // head and tail of the build output
}

// baselineOutputBytes bounds the build output a baseline keeps.
const baselineOutputBytes = 16 << 10

// Baseline is the unpatched build of a task's snapshot: what Evaluate
// compares candidates with.
type Baseline struct {
	Diagnostics []topics.Diagnostic
	// OK: the unpatched tree builds.
	OK bool
	// TimedOut: the build reached its time limit.
	TimedOut bool
	// Output is the head and tail of the build's output.
	Output string
	// Note is why the sandbox could not build it ("" when it did).
	Note string
}

// Baseline returns the baseline of task's snapshot, building it once, as
// Evaluate does (backfill checks with it that a snapshot fails the way its
// log says). The error is non-nil only when ctx ends, the builder is
// closed or the snapshot cannot be read.
func (c *Evaluator) Baseline(ctx context.Context, task *topics.Task) (Baseline, error) {
	if task.CompileFix == nil {
		return Baseline{}, errors.New("compilefix: compile-fix task without its compile_fix setting")
	}
	tree, err := c.Cache.Get(ctx, task.CompileFix.Workspace)
	if err != nil {
		return Baseline{}, fmt.Errorf("compilefix: workspace %s: %w", task.CompileFix.Workspace, err)
	}
	defer tree.Release()
	deps, release, err := c.dependencies(ctx, task.CompileFix)
	if err != nil {
		return Baseline{}, err
	}
	defer release()
	b, err := c.baseline(ctx, task, tree, deps)
	if err != nil {
		return Baseline{}, err
	}
	return Baseline{Diagnostics: append([]topics.Diagnostic(nil), b.diags...), OK: b.ok, TimedOut: b.timedOut, Output: b.output, Note: b.note}, nil
}

// maxBaselines bounds the baselines kept (each may hold a build cache).
const maxBaselines = 512

// compileLimits maps a task's limits onto the build sandbox's.
func compileLimits(task *topics.Task) sandbox.BuildLimits {
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

func (c *Evaluator) dir() string {
	if c.Dir != "" {
		return c.Dir
	}
	return os.TempDir()
}

// dependencies materialises the dependency cache a task names ("" and a
// no-op release when it names none).
func (c *Evaluator) dependencies(ctx context.Context, cf *topics.CompileFix) (string, func(), error) {
	if cf.Dependencies == "" {
		return "", func() {}, nil
	}
	t, err := c.Cache.Get(ctx, cf.Dependencies)
	if err != nil {
		return "", nil, fmt.Errorf("compilefix: dependency cache %s: %w", cf.Dependencies, err)
	}
	return t.Dir(), t.Release, nil
}

// baseline returns the snapshot's baseline, building it once; deps is the
// task's dependency cache ("" = none).
func (c *Evaluator) baseline(ctx context.Context, task *topics.Task, tree *workspace.Tree, deps string) (*baseline, error) {
	cf := task.CompileFix
	key := tree.Digest() + "\x00" + cf.Dependencies + "\x00" + strings.Join(cf.Build, "\x00")
	c.mu.Lock()
	b := c.baselines[key]
	c.mu.Unlock()
	if b != nil {
		return b, nil
	}
	v, err, _ := c.flight.Do(key, func() (any, error) {
		seedKey := seedKeyOf(cf)
		if c.Builder.Seed(seedKey) == "" {
			if err := c.warm(ctx, task, tree, deps, seedKey); err != nil {
				return nil, err
			}
		}
		res, err := c.Builder.Build(ctx, &sandbox.BuildJob{
			Tree: tree.Dir(), Deps: deps, Commands: [][]string{cf.Build}, Limits: compileLimits(task), SeedKey: seedKey})
		if err != nil {
			return nil, err
		}
		b := &baseline{}
		if res.SandboxError != "" {
			b.note = res.SandboxError
			return b, nil // not kept: a later candidate tries again
		}
		cmd := res.Commands[0]
		b.ok, b.timedOut = cmd.OK(), cmd.TimedOut
		b.output = topics.Truncate(string(cmd.Output), baselineOutputBytes)
		b.diags = diag.Parse(toolOf(cf), cmd.Output, "/work")
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.baselines == nil {
			c.baselines = map[string]*baseline{}
		}
		if len(c.baselines) >= maxBaselines {
			clear(c.baselines)
		}
		c.baselines[key] = b
		return b, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*baseline), nil
}

// seedKeyOf names the kept build cache a task's jobs start from: one per
// toolchain, and another for tasks with a tests command (a Go test binary
// needs more of the standard library than the build).
func seedKeyOf(cf *topics.CompileFix) string {
	if len(cf.Tests) > 0 {
		return toolOf(cf) + "+tests"
	}
	return toolOf(cf)
}

// warm keeps the build caches of the task's own repaired tree (the snapshot
// with the reference patch: task data, never a candidate's) as the seed of
// key: a build and tests command warm everything a candidate's job needs
// but its own changes. Without a reference the unpatched build warms it.
func (c *Evaluator) warm(ctx context.Context, task *topics.Task, tree *workspace.Tree, deps, key string) error {
	cf := task.CompileFix
	job := &sandbox.BuildJob{Tree: tree.Dir(), Deps: deps, Commands: [][]string{cf.Build}, Limits: compileLimits(task)}
	if task.ReferencePatch != "" {
		overlay, oerr := os.MkdirTemp(c.dir(), "murphy-warm-")
		if oerr != nil {
			return fmt.Errorf("compilefix: warm-up overlay: %w", oerr)
		}
		defer os.RemoveAll(overlay)
		if deleted, err := WriteOverlay(tree.Dir(), task.ReferencePatch, overlay); err == nil {
			job.Overlay, job.Deleted = overlay, deleted
			if len(cf.Tests) > 0 {
				job.Commands = append(job.Commands, cf.Tests)
			}
		}
	}
	if toolOf(cf) == "go" {
		// The host's compiled standard library, where its cache has it
		// (goseed.go): the warm-up then compiles the task's own packages.
		seedDir, serr := os.MkdirTemp(c.dir(), "murphy-goseed-")
		if serr != nil {
			return fmt.Errorf("compilefix: go seed: %w", serr)
		}
		defer os.RemoveAll(seedDir)
		seed, serr := goStdSeed(ctx, seedDir, tree.Dir(), job.Overlay)
		if serr != nil {
			slog.Warn("compilefix: no seed from the host's Go build cache; the warm-up compiles the standard library", "task", task.TaskID, "err", serr)
		}
		job.Seed = seed
	}
	_, err := c.Builder.Warm(ctx, key, job)
	return err
}

// WriteOverlay applies a trusted patch (a task's reference) to the tree
// at dir and writes the changed files to overlay, readable by a build's
// uid, for a BuildJob's Overlay; it returns the paths the patch deletes.
func WriteOverlay(dir, diff, overlay string) ([]string, error) {
	applied, err := patch.Apply(dir, diff, patch.Options{})
	if err != nil {
		return nil, err
	}
	if err := writeOverlay(applied, overlay); err != nil {
		return nil, err
	}
	return applied.Deleted(), nil
}

// writeOverlay writes a patch's changed files to dir, readable by a
// build's uid.
func writeOverlay(applied *patch.Result, dir string) error {
	if err := applied.Write(dir); err != nil {
		return fmt.Errorf("compilefix: overlay: %w", err)
	}
	return filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.Chmod(p, 0o755)
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		return os.Chmod(p, fi.Mode().Perm()|0o444)
	})
}

// Close forgets the baselines.
func (c *Evaluator) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.baselines)
}

// sandboxOutcome is the outcome of a build sandbox that failed: no verdict
// on the patch.
func sandboxOutcome(kind, msg string) Outcome {
	out := Outcome{Status: topics.StatusSandboxError, SandboxError: msg, SandboxErrorKind: kind}
	out.Feedback = "Status: sandbox_error\nThe build sandbox failed; this is not a verdict on the patch.\n"
	return out
}

// inputError is what Evaluate returns when a task's input (its workspace,
// its dependencies) cannot be read: ctx's error when it ended, a sandbox
// error outcome saying msg when the input is missing or corrupt, else
// transient.
func inputError(ctx context.Context, err error, msg string, transient error) (Outcome, error) {
	switch {
	case ctx.Err() != nil:
		return Outcome{}, ctx.Err()
	case errors.Is(err, workspace.ErrNotFound), errors.Is(err, workspace.ErrCorrupt):
		return sandboxOutcome(topics.SandboxErrorInvalidJob, msg), nil
	default:
		return Outcome{}, topics.Transient(transient)
	}
}

// Evaluate judges one candidate diff. The error is non-nil only when ctx
// ends, the builder is closed, or the workspace store cannot be read right
// now (transient: the record is retried).
func (c *Evaluator) Evaluate(ctx context.Context, task *topics.Task, code string, feedbackCap int) (Outcome, error) {
	cf := task.CompileFix
	if cf == nil {
		return sandboxOutcome(topics.SandboxErrorInvalidJob, "compile-fix task without its compile_fix setting"), nil
	}
	tree, err := c.Cache.Get(ctx, cf.Workspace)
	if err != nil {
		return inputError(ctx, err, "workspace "+cf.Workspace+": "+err.Error(), fmt.Errorf("compilefix: workspace %s: %w", cf.Workspace, err))
	}
	defer tree.Release()
	deps, releaseDeps, err := c.dependencies(ctx, cf)
	if err != nil {
		return inputError(ctx, err, err.Error(), err)
	}
	defer releaseDeps()
	base, err := c.baseline(ctx, task, tree, deps)
	if err != nil {
		return Outcome{}, err
	}
	if base.note != "" {
		return sandboxOutcome(topics.SandboxErrorInternal, "baseline build: "+base.note), nil
	}
	total := 1 + min(len(cf.Tests), 1)
	out := Outcome{TestsTotal: total}
	out.Results = []topics.TestResult{{Index: 0, Status: "error"}}

	opts := c.Patch
	if opts.Protected == nil {
		opts.Protected = patch.DefaultProtected(cf.Build)
	}
	applied, err := patch.Apply(tree.Dir(), code, opts)
	if err != nil {
		out.Status = topics.StatusPatchFailed
		out.Feedback = topics.Truncate(fmt.Sprintf("Status: patch_failed\nThe patch does not apply: %s\n", err), feedbackCap)
		out.Results[0].Error = err.Error()
		return out, nil
	}
	overlay, err := os.MkdirTemp(c.dir(), "murphy-overlay-")
	if err != nil {
		return sandboxOutcome(topics.SandboxErrorInternal, "overlay: "+err.Error()), nil
	}
	defer os.RemoveAll(overlay)
	if err := writeOverlay(applied, overlay); err != nil {
		return sandboxOutcome(topics.SandboxErrorInternal, err.Error()), nil
	}
	cmds := [][]string{cf.Build}
	if len(cf.Tests) > 0 {
		cmds = append(cmds, cf.Tests)
	}
	res, harness, err := c.buildOnce(ctx, &sandbox.BuildJob{
		Tree: tree.Dir(), Overlay: overlay, Deleted: applied.Deleted(), Commands: cmds, Deps: deps,
		Limits: compileLimits(task), SeedKey: seedKeyOf(cf),
	})
	if err != nil {
		return Outcome{}, err
	}
	if res.SandboxError != "" {
		return sandboxOutcome(res.SandboxErrorKind, res.SandboxError), nil
	}
	if harness {
		return sandboxOutcome(topics.SandboxErrorHarnessTimeout, "the build was killed at its wall-clock limit twice without using its CPU time"), nil
	}
	bc := res.Commands[0]
	out.MaxRunCPU = bc.CPU
	remaining, why := judgeBuild(&out, cf, base.diags, res)
	if out.Status == topics.StatusPassed && len(cf.Tests) > 0 {
		why += judgeTests(&out, cf, res.Commands[1], feedbackCap)
	}
	out.PassRate = float64(out.TestsPassed) / float64(out.TestsTotal)
	var b strings.Builder
	fmt.Fprintf(&b, "Status: %s\n%s\n", out.Status, why)
	if out.Status == topics.StatusCompileError || out.Status == topics.StatusTimeout ||
		out.Status == topics.StatusMemory || out.Status == topics.StatusOutputLimit {
		out.Results[0].Error = why
		out.Diagnostics = excerpted(remaining, applied, tree.Dir(), overlay)
		if len(remaining) > 0 {
			b.WriteString(diag.Render(remaining, tree.Dir(), max(feedbackCap-b.Len(), 256)))
		} else if !bc.OK() {
			b.WriteString("Build output:\n" + topics.Truncate(string(bc.Output), max(feedbackCap-b.Len()-16, 256)) + "\n")
		}
	}
	out.Feedback = topics.Truncate(b.String(), feedbackCap)
	return out, nil
}

// judgeBuild sets out's status from the patched build: a limit it hit,
// or the compile errors that remain of the targets (every error of the
// baseline when the task states none) and the new ones, all within the
// compile scope. It returns the diagnostics that remain and why.
func judgeBuild(out *Outcome, cf *topics.CompileFix, baseline []topics.Diagnostic, res *sandbox.BuildResult) ([]topics.Diagnostic, string) {
	bc := res.Commands[0]
	// Diagnostics outside the compile scope neither count nor show; the
	// build's exit status still decides whether it compiles.
	patched := diag.InScope(diag.Parse(toolOf(cf), bc.Output, "/work"), cf.Scope)
	targets := cf.Targets
	if len(targets) == 0 {
		// A task without stated targets repairs every error of its baseline.
		targets = diag.Errors(baseline)
	}
	targets = diag.InScope(targets, cf.Scope)
	baseDiags := diag.InScope(baseline, cf.Scope)
	cmp := diag.Compare(targets, baseDiags, patched)
	out.TargetsFixed, out.TargetsTotal = len(cmp.FixedTargets), len(targets)
	remaining := append(append([]topics.Diagnostic(nil), cmp.RemainingTargets...), cmp.New...)
	var why string
	switch {
	case bc.TimedOut:
		out.Status, why = topics.StatusTimeout, fmt.Sprintf("The build exceeded its time limit (%s of CPU time, %s wall).", res.Limits.CPU, res.Limits.Wall)
	case bc.MemoryKilled:
		out.Status, why = topics.StatusMemory, "The build ran out of memory."
	case bc.OutputLimited:
		out.Status, why = topics.StatusOutputLimit, fmt.Sprintf("The build wrote more than %s of output.", topics.ByteSize(res.Limits.OutputBytes))
	case bc.DiskFull && !bc.OK():
		out.Status, why = topics.StatusCompileError, fmt.Sprintf("The build filled the workspace (%d MB).", res.Limits.DiskMB)
	case !bc.OK() || len(remaining) > 0:
		out.Status = topics.StatusCompileError
		why = fmt.Sprintf("The build (%s) still fails", strings.Join(cf.Build, " "))
		if bc.OK() {
			why = fmt.Sprintf("The build (%s) exits 0 but still reports errors", strings.Join(cf.Build, " "))
		}
		why += fmt.Sprintf(": %d of %d target diagnostic(s) fixed, %d new error(s).", len(cmp.FixedTargets), len(targets), len(cmp.New))
	default:
		out.TestsPassed = 1
		out.Results[0].Status = topics.StatusPassed
		out.Status = topics.StatusPassed
		why = "The patch applies and the build succeeds."
	}
	return remaining, why
}

// judgeTests records the result of the task's tests (tc), run after a
// build that passed, and returns what to add to why when they fail.
func judgeTests(out *Outcome, cf *topics.CompileFix, tc sandbox.CommandResult, feedbackCap int) string {
	out.Results = append(out.Results, topics.TestResult{Index: 1, Status: topics.StatusPassed})
	if tc.OK() {
		out.TestsPassed = 2
		return ""
	}
	out.Status = topics.StatusWrongAnswer
	out.Results[1].Status = "error"
	if tc.TimedOut {
		return fmt.Sprintf(" The tests (%s) exceeded their time limit.", strings.Join(cf.Tests, " "))
	}
	return fmt.Sprintf(" The tests (%s) fail (exit code %d):\n%s", strings.Join(cf.Tests, " "), tc.ExitCode,
		topics.Truncate(string(tc.Output), feedbackCap/3))
}

// excerpted gives each diagnostic its source excerpt, from the overlay
// for the files the patch changed, else from the tree.
func excerpted(ds []topics.Diagnostic, applied *patch.Result, tree, overlay string) []topics.Diagnostic {
	changed := map[string]bool{}
	for _, p := range applied.Paths() {
		changed[p] = true
	}
	for i := range ds {
		root := tree
		if changed[ds[i].File] {
			root = overlay
		}
		ds[i].Excerpt = diag.Excerpt(root, ds[i], 2)
	}
	return ds
}

// Open opens what cfg names: the workspace store, a snapshot
// cache and a build sandbox. close releases them. On error nothing is left
// open and close is nil.
func Open(ctx context.Context, cfg Config) (cf *Evaluator, close func(), err error) {
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	if cfg.Store == "" {
		return nil, nil, errors.New("compilefix: compile_fix needs a workspace store")
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
	cache, closeCache, err := workspace.OpenCache(ctx, cfg.Store, cfg.CacheDir, int64(cfg.CacheMB)<<20, "murphy-workspaces-")
	if err != nil {
		return nil, nil, err
	}
	closers = append(closers, closeCache)
	work, err := os.MkdirTemp("", "murphy-compilefix-")
	if err != nil {
		return nil, nil, err
	}
	closers = append(closers, func() { _ = os.RemoveAll(work) })
	b, err := sandbox.OpenBuilder(cfg.Builder) // shared with the process's other stages of an equal configuration
	if err != nil {
		return nil, nil, err
	}
	closers = append(closers, func() { _ = b.Close() })
	cf = &Evaluator{Builder: b, Cache: cache, Dir: work, Patch: patch.Options{MaxBytes: cfg.MaxPatchKB << 10}}
	closers = append(closers, cf.Close)
	return cf, closeAll, nil
}
