package execute

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/murphy-rl/murphy/topics"
)

// FreshCommand is the baseline the warm pool is measured against: a new
// bubblewrap sandbox and a new interpreter per program.
func FreshCommand() []string {
	return []string{"bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
		"--tmpfs", "/tmp", "--unshare-all", "--die-with-parent", "--clearenv", "python3"}
}

// ThroughputResult is one run of the sandbox throughput benchmark.
type ThroughputResult struct {
	Executions int
	Workers    int
	Pool       time.Duration // every execution through the Evaluator
	Fresh      time.Duration // the same programs, FreshCommand each
	// HostCPU is this process's CPU time during the pool's side, JobCPU
	// the sandboxes' (each job's, from its slot's cgroup), both summed.
	HostCPU, JobCPU time.Duration
}

// PoolRate and FreshRate are executions per second.
func (r ThroughputResult) PoolRate() float64 {
	return float64(r.Executions) / r.Pool.Seconds()
}

func (r ThroughputResult) FreshRate() float64 {
	return float64(r.Executions) / r.Fresh.Seconds()
}

// Ratio is the pool's rate over the fresh sandbox's.
func (r ThroughputResult) Ratio() float64 { return r.PoolRate() / r.FreshRate() }

func (r ThroughputResult) String() string {
	return fmt.Sprintf("sandbox throughput: %d executions, %d at once\n"+
		"  pool (murphy exec)   %7.1f executions/s (%s)\n"+
		"  fresh sandbox each   %7.1f executions/s (%s)\n"+
		"  ratio                %7.2f (target >= 4)\n"+
		"  pool CPU per execution: %v in this process, %v in the sandbox\n",
		r.Executions, r.Workers, r.PoolRate(), r.Pool.Round(time.Millisecond),
		r.FreshRate(), r.Fresh.Round(time.Millisecond), r.Ratio(),
		(r.HostCPU / time.Duration(r.Executions)).Round(time.Microsecond), (r.JobCPU / time.Duration(r.Executions)).Round(time.Microsecond))
}

// Throughput evaluates every task's reference solution repeat times with
// ev, workers at once, then runs the same programs (with their tests as one
// script) in FreshCommand, workers at once. Every execution must pass on
// both sides.
func Throughput(ctx context.Context, ev *Evaluator, workers, repeat int, ts []topics.Task) (ThroughputResult, error) {
	res := ThroughputResult{Executions: len(ts) * repeat, Workers: workers}
	// Not under /tmp: the fresh sandbox mounts its own there.
	dir, err := os.MkdirTemp("/var/tmp", "murphy-throughput-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	files := make([]string, len(ts))
	for i := range ts {
		t := &ts[i]
		if t.Kind != topics.KindPythonFunction || t.Reference == "" {
			return res, fmt.Errorf("%s: the benchmark needs python-function tasks with a reference", t.TaskID)
		}
		files[i] = filepath.Join(dir, fmt.Sprintf("t%d.py", i))
		if err := os.WriteFile(files[i], []byte(ScriptOf(t)), 0o644); err != nil {
			return res, err
		}
	}
	// each runs fn over the executions (task n modulo the task count),
	// workers at once, and times it.
	each := func(fn func(i int) error) (time.Duration, error) {
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(workers)
		start := time.Now()
		for n := range res.Executions {
			if gctx.Err() != nil {
				break
			}
			g.Go(func() error { return fn(n % len(ts)) })
		}
		err := g.Wait()
		return time.Since(start), cmp.Or(err, ctx.Err())
	}
	var jobCPU atomic.Int64
	cpu0 := processCPU()
	res.Pool, err = each(func(i int) error {
		o, err := ev.Evaluate(ctx, &ts[i], ts[i].Reference)
		if err != nil {
			return err
		}
		jobCPU.Add(int64(o.MaxRunCPU))
		if o.Status != topics.StatusPassed {
			return fmt.Errorf("pool: %s's reference got %s:\n%s", ts[i].TaskID, o.Status, o.Feedback)
		}
		return nil
	})
	res.HostCPU, res.JobCPU = processCPU()-cpu0, time.Duration(jobCPU.Load())
	if err != nil {
		return res, err
	}
	res.Fresh, err = each(func(i int) error {
		fresh := FreshCommand()
		cmd := exec.CommandContext(ctx, fresh[0], append(fresh[1:], files[i])...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("fresh: %s: %v\n%s", ts[i].TaskID, err, out)
		}
		return nil
	})
	return res, err
}

// ScriptOf is a task's reference with its tests as one plain script, the
// way the reference HumanEval harness runs a program.
func ScriptOf(t *topics.Task) string {
	test := t.Check
	if test == "" {
		var b strings.Builder
		b.WriteString(t.Setup + "\n\ndef check(candidate):\n    pass\n")
		for _, tc := range t.Tests {
			if tc.Assert != "" {
				b.WriteString("    assert " + tc.Assert + "\n")
			} else {
				b.WriteString("    assert candidate(" + tc.Args + ") == " + tc.Expected + "\n")
			}
		}
		test = b.String()
	}
	return t.Reference + "\n\n" + test + "\n\ncheck(" + t.EntryPoint + ")\n"
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
