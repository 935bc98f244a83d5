package execute

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/murphy-rl/murphy/topics"
	"github.com/murphy-rl/murphy/workspace/patch"
)

// CompileFixThroughputResult is one run of the compile-fix benchmark: every
// task's reference patch evaluated through CompileFix (patch, build sandbox,
// diagnostics), against the same build commands run directly on copies of
// the patched trees prepared beforehand.
type CompileFixThroughputResult struct {
	Executions int
	Workers    int
	Sandboxed  time.Duration
	Direct     time.Duration
}

// SandboxedRate and DirectRate are executions per second.
func (r CompileFixThroughputResult) SandboxedRate() float64 {
	return float64(r.Executions) / r.Sandboxed.Seconds()
}

func (r CompileFixThroughputResult) DirectRate() float64 {
	return float64(r.Executions) / r.Direct.Seconds()
}

// Ratio is the sandboxed rate over the direct one (target >= 0.7).
func (r CompileFixThroughputResult) Ratio() float64 { return r.SandboxedRate() / r.DirectRate() }

func (r CompileFixThroughputResult) String() string {
	return fmt.Sprintf("compile-fix throughput: %d executions, %d at once\n"+
		"  murphy (patch, sandboxed build, diagnostics) %7.2f executions/s (%s)\n"+
		"  the build commands on prepared copies        %7.2f executions/s (%s)\n"+
		"  ratio                                        %7.2f (target >= 0.7)\n",
		r.Executions, r.Workers, r.SandboxedRate(), r.Sandboxed.Round(time.Millisecond),
		r.DirectRate(), r.Direct.Round(time.Millisecond), r.Ratio())
}

// CompileFixThroughput measures cf on the reference patches of ts, repeat
// times each, workers at once, after one warm-up evaluation per task (the
// baselines and the snapshot cache are built once per snapshot, as in a
// long run). The direct side runs each build command on its own copy of
// the patched tree (copies made before the clock starts), with a build
// cache warmed the same way, workers at once. Every execution must pass on
// both sides.
func CompileFixThroughput(ctx context.Context, cf *CompileFix, workers, repeat int, ts []topics.Task) (CompileFixThroughputResult, error) {
	res := CompileFixThroughputResult{Executions: len(ts) * repeat, Workers: workers}
	for i := range ts {
		t := &ts[i]
		if t.Kind != topics.KindCompileFix || t.ReferencePatch == "" {
			return res, fmt.Errorf("%s: the benchmark needs compile-fix tasks with a reference patch", t.TaskID)
		}
		out, err := cf.Evaluate(ctx, t, t.ReferencePatch, DefaultFeedbackBytes)
		if err != nil {
			return res, err
		}
		if out.Status != topics.StatusPassed {
			return res, fmt.Errorf("%s: the reference patch is %s:\n%s", t.TaskID, out.Status, out.Feedback)
		}
	}
	jobs := make([]int, 0, len(ts)*repeat)
	for r := 0; r < repeat; r++ {
		for i := range ts {
			jobs = append(jobs, i)
		}
	}
	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for _, i := range jobs {
		g.Go(func() error {
			out, err := cf.Evaluate(gctx, &ts[i], ts[i].ReferencePatch, DefaultFeedbackBytes)
			if err == nil && out.Status != topics.StatusPassed {
				err = fmt.Errorf("%s: %s", ts[i].TaskID, out.Status)
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return res, err
	}
	res.Sandboxed = time.Since(start)

	dir, err := os.MkdirTemp("", "murphy-cf-direct-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	gocache := filepath.Join(dir, "gocache")
	env := append(os.Environ(), "GOCACHE="+gocache, "GOFLAGS=-buildvcs=false", "GOPROXY=off", "GOTOOLCHAIN=local",
		"TMPDIR="+dir)
	copies := make([]string, len(jobs)+len(ts))
	for k := range copies {
		i := k % len(ts)
		if k >= len(ts) {
			i = jobs[k-len(ts)]
		}
		tree, err := cf.Cache.Get(ctx, ts[i].CompileFix.Workspace)
		if err != nil {
			return res, err
		}
		applied, err := patch.Apply(tree.Dir(), ts[i].ReferencePatch, patch.Options{})
		if err == nil {
			copies[k] = filepath.Join(dir, fmt.Sprint(k))
			err = os.CopyFS(copies[k], os.DirFS(tree.Dir()))
		}
		tree.Release()
		if err == nil {
			err = makeWritable(copies[k])
		}
		if err == nil {
			err = applied.Write(copies[k])
		}
		for _, d := range applied.Deleted() {
			_ = os.Remove(filepath.Join(copies[k], d))
		}
		if err != nil {
			return res, err
		}
	}
	direct := func(ctx context.Context, k int) error {
		t := &ts[k%len(ts)]
		if k >= len(ts) {
			t = &ts[jobs[k-len(ts)]]
		}
		cmd := exec.CommandContext(ctx, t.CompileFix.Build[0], t.CompileFix.Build[1:]...)
		cmd.Dir, cmd.Env = copies[k], env
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s: direct build: %v\n%s", t.TaskID, err, out)
		}
		return nil
	}
	// Warm-up: one build per task fills the build cache, as the sandboxed
	// side's baselines did.
	for k := range ts {
		if err := direct(ctx, k); err != nil {
			return res, err
		}
	}
	start = time.Now()
	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for k := len(ts); k < len(copies); k++ {
		g.Go(func() error { return direct(gctx, k) })
	}
	if err := g.Wait(); err != nil {
		return res, err
	}
	res.Direct = time.Since(start)
	return res, nil
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
