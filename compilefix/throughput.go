package compilefix

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/murphy-rl/murphy/compilefix/patch"
	"github.com/murphy-rl/murphy/topics"
)

// ThroughputResult is one run of the compile-fix benchmark: every
// task's reference patch evaluated through CompileFix (patch, build sandbox,
// diagnostics), against the same build commands run directly on copies of
// the patched trees prepared beforehand, the tests commands included.
type ThroughputResult struct {
	Executions int
	Workers    int
	Sandboxed  time.Duration
	Direct     time.Duration
	// PerTask are each task's summed execution times on both sides.
	PerTask map[string][2]time.Duration
}

// SandboxedRate and DirectRate are executions per second.
func (r ThroughputResult) SandboxedRate() float64 {
	return float64(r.Executions) / r.Sandboxed.Seconds()
}

func (r ThroughputResult) DirectRate() float64 {
	return float64(r.Executions) / r.Direct.Seconds()
}

// Ratio is the sandboxed rate over the direct one (target >= 0.7).
func (r ThroughputResult) Ratio() float64 { return r.SandboxedRate() / r.DirectRate() }

func (r ThroughputResult) String() string {
	return fmt.Sprintf("compile-fix throughput: %d executions, %d at once\n"+
		"  murphy (patch, sandboxed build, diagnostics) %7.2f executions/s (%s)\n"+
		"  the build commands on prepared copies        %7.2f executions/s (%s)\n"+
		"  ratio                                        %7.2f (target >= 0.7)\n",
		r.Executions, r.Workers, r.SandboxedRate(), r.Sandboxed.Round(time.Millisecond),
		r.DirectRate(), r.Direct.Round(time.Millisecond), r.Ratio()) + r.perTask()
}

// perTask lists the tasks by their time through murphy over their direct
// time, slowest first.
func (r ThroughputResult) perTask() string {
	ids := make([]string, 0, len(r.PerTask))
	for id := range r.PerTask {
		ids = append(ids, id)
	}
	ratio := func(id string) float64 { d := r.PerTask[id]; return d[0].Seconds() / max(d[1].Seconds(), 1e-9) }
	sort.Slice(ids, func(a, b int) bool { return ratio(ids[a]) > ratio(ids[b]) })
	var b strings.Builder
	b.WriteString("  per task (murphy / direct, summed over repeats):\n")
	for _, id := range ids {
		d := r.PerTask[id]
		fmt.Fprintf(&b, "    %-28s %8s / %-8s %5.2fx\n", id, d[0].Round(time.Millisecond), d[1].Round(time.Millisecond), ratio(id))
	}
	return b.String()
}

// CompileFixThroughput measures cf on the reference patches of ts, repeat
// times each, workers at once, after one warm-up evaluation per task (the
// baselines and the snapshot cache are built once per snapshot, as in a
// long run). The direct side runs each build command (and tests command)
// on its own copy of the patched tree (copies made before the clock
// starts), with a build cache warmed the same way (each unpatched tree
// built once), workers at once. Every execution must pass on both sides.
func Throughput(ctx context.Context, cf *Evaluator, workers, repeat int, ts []topics.Task) (ThroughputResult, error) {
	res := ThroughputResult{Executions: len(ts) * repeat, Workers: workers, PerTask: map[string][2]time.Duration{}}
	if err := warmEvaluator(ctx, cf, ts); err != nil {
		return res, err
	}
	jobs := make([]int, 0, len(ts)*repeat)
	for r := 0; r < repeat; r++ {
		for i := range ts {
			jobs = append(jobs, i)
		}
	}
	tr := &throughputRun{ts: ts, jobs: jobs, workers: workers, res: &res}
	start := time.Now()
	err := tr.each(ctx, 0, func(ctx context.Context, _, i int) error {
		out, err := cf.Evaluate(ctx, &ts[i], ts[i].ReferencePatch, topics.DefaultFeedbackBytes)
		if err == nil && out.Status != topics.StatusPassed {
			err = fmt.Errorf("%s: %s", ts[i].TaskID, out.Status)
		}
		return err
	})
	if err != nil {
		return res, err
	}
	res.Sandboxed = time.Since(start)

	dir, err := os.MkdirTemp("", "murphy-cf-direct-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	d := newDirectSide(cf, dir)
	// Warm-up: each task's repaired tree, built and tested once, fills the
	// build cache, as the sandboxed side's warm-up builds do (there, one per
	// toolchain; the direct side's shared cache keeps every task's).
	for i := range ts {
		at := filepath.Join(dir, fmt.Sprint("warm-", i))
		if err := d.prepare(ctx, &ts[i], false, at); err != nil {
			return res, err
		}
		if err := d.run(ctx, &ts[i], at, false); err != nil {
			return res, err
		}
	}
	copies := make([]string, len(jobs))
	for k, i := range jobs {
		copies[k] = filepath.Join(dir, fmt.Sprint(k))
		if err := d.prepare(ctx, &ts[i], false, copies[k]); err != nil {
			return res, err
		}
	}
	start = time.Now()
	err = tr.each(ctx, 1, func(ctx context.Context, k, i int) error {
		return d.run(ctx, &ts[i], copies[k], true)
	})
	if err != nil {
		return res, err
	}
	res.Direct = time.Since(start)
	return res, nil
}

// warmEvaluator evaluates each task's reference patch once, which must
// pass, so that the timed runs find the baselines and snapshots built.
func warmEvaluator(ctx context.Context, cf *Evaluator, ts []topics.Task) error {
	for i := range ts {
		t := &ts[i]
		if t.Kind != topics.KindCompileFix || t.ReferencePatch == "" {
			return fmt.Errorf("%s: the benchmark needs compile-fix tasks with a reference patch", t.TaskID)
		}
		out, err := cf.Evaluate(ctx, t, t.ReferencePatch, topics.DefaultFeedbackBytes)
		if err != nil {
			return err
		}
		if out.Status != topics.StatusPassed {
			return fmt.Errorf("%s: the reference patch is %s:\n%s", t.TaskID, out.Status, out.Feedback)
		}
	}
	return nil
}

// throughputRun runs the benchmark's jobs (task indices), workers at once,
// summing each task's times into res.PerTask.
type throughputRun struct {
	ts      []topics.Task
	jobs    []int
	workers int
	mu      sync.Mutex
	res     *ThroughputResult
}

// each runs job(ctx, k, jobs[k]) for every job, workers at once, adding
// its time to side (0 sandboxed, 1 direct) of its task; the first error
// ends the run.
func (r *throughputRun) each(ctx context.Context, side int, job func(ctx context.Context, k, i int) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(r.workers)
	for k, i := range r.jobs {
		g.Go(func() error {
			t0 := time.Now()
			err := job(gctx, k, i)
			r.account(r.ts[i].TaskID, side, time.Since(t0))
			return err
		})
	}
	return g.Wait()
}

func (r *throughputRun) account(id string, side int, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v := r.res.PerTask[id]
	v[side] += d
	r.res.PerTask[id] = v
}

// directSide runs tasks' commands directly on prepared copies of their
// trees, with a build cache and temporary directory under dir.
type directSide struct {
	cf  *Evaluator
	env []string
}

func newDirectSide(cf *Evaluator, dir string) *directSide {
	gocache := filepath.Join(dir, "gocache")
	// -count=1: go test results are not cached on either side (the
	// sandboxed jobs start from the baseline's cache, which has none).
	env := append(os.Environ(), "GOCACHE="+gocache, "GOFLAGS=-buildvcs=false -count=1", "GOPROXY=off", "GOTOOLCHAIN=local",
		"TMPDIR="+dir)
	return &directSide{cf: cf, env: env}
}

// prepare copies t's snapshot to to, patched with its reference patch
// unless baseline.
func (d *directSide) prepare(ctx context.Context, t *topics.Task, baseline bool, to string) error {
	tree, err := d.cf.Cache.Get(ctx, t.CompileFix.Workspace)
	if err != nil {
		return err
	}
	defer tree.Release()
	var applied *patch.Result
	if !baseline {
		if applied, err = patch.Apply(tree.Dir(), t.ReferencePatch, patch.Options{}); err != nil {
			return err
		}
	}
	if err := os.CopyFS(to, os.DirFS(tree.Dir())); err != nil {
		return err
	}
	if err := makeWritable(to); err != nil {
		return err
	}
	if applied == nil {
		return nil
	}
	for _, d := range applied.Deleted() {
		_ = os.Remove(filepath.Join(to, d))
	}
	return applied.Write(to)
}

// run runs t's build command, and its tests command when it has one, at
// at; a failure is an error only when mustPass.
func (d *directSide) run(ctx context.Context, t *topics.Task, at string, mustPass bool) error {
	cmds := [][]string{t.CompileFix.Build}
	if len(t.CompileFix.Tests) > 0 {
		cmds = append(cmds, t.CompileFix.Tests)
	}
	for _, argv := range cmds {
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir, cmd.Env = at, d.env
		if out, err := cmd.CombinedOutput(); err != nil {
			if mustPass {
				return fmt.Errorf("%s: direct %v: %v\n%s", t.TaskID, argv, err, out)
			}
			return nil
		}
	}
	return nil
}

// makeWritable gives the owner write permission throughout a copied tree
// (snapshots are materialised read-only).
func makeWritable(dir string) error {
	return filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		return os.Chmod(p, fi.Mode().Perm()|0o200)
	})
}
