package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/murphy-rl/murphy/sandbox"
	"github.com/murphy-rl/murphy/stages/execute"
	"github.com/murphy-rl/murphy/topics"
)

// The sandbox benchmarks need no broker: `murphy bench sandbox` measures the
// hardened pool against a fresh sandbox per program, `murphy bench
// timeouts` a whole run with fixed and with calibrated time limits.

func newBenchSandboxCmd() *cobra.Command {
	var tasksPath, format string
	repeat, workers := 5, 0
	check := false
	cmd := &cobra.Command{
		Use:   "sandbox --tasks HumanEval.jsonl.gz",
		Short: "Executions/s of the hardened pool against a fresh bwrap sandbox per program (target >= 4)",
		Long: `Evaluates every task's reference --repeat times in the warm sandbox pool (as
murphy exec does), then runs the same programs, each with its tests as one
script, as ` + fmt.Sprint(execute.FreshCommand()) + ` FILE,
as many at once as the pool has sandboxes, and prints both rates and their ratio.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ts, err := loadTasks(runOptions{Tasks: tasksPath, Format: format, Kinds: []string{topics.KindPythonFunction}}, cmd.ErrOrStderr())
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			cfg := sandbox.DefaultConfig()
			cfg.Workers = workers
			pool, err := sandbox.NewPool(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			defer pool.Close()
			r, err := execute.Throughput(cmd.Context(), &execute.Evaluator{Runner: pool}, pool.Size(), repeat, ts)
			if err != nil {
				return err
			}
			fmt.Fprint(cmd.OutOrStdout(), r)
			if check && r.Ratio() < 4 {
				return &exitError{code: 1, err: fmt.Errorf("ratio %.2f below its target of 4", r.Ratio())}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&tasksPath, "tasks", "", "python-function tasks with references (default: the built-in ones)")
	f.StringVar(&format, "format", "", "task file format (default: detect)")
	f.IntVar(&repeat, "repeat", repeat, "evaluations of each reference")
	f.IntVar(&workers, "workers", workers, "sandboxes (0 = one per CPU); the baseline runs as many at once")
	f.BoolVar(&check, "check", false, "exit 1 when the ratio misses its target")
	return cmd
}

func newBenchTimeoutsCmd() *cobra.Command {
	var tasksPath, format string
	args := []string{"--turns", "3", "--group-sizes", "4", "--progress", "0"}
	cmd := &cobra.Command{
		Use:   "timeouts --tasks HumanEval.jsonl.gz [-- RUN FLAGS]",
		Short: "End-to-end samples/s of murphy run with fixed and with calibrated time limits (target >= 3)",
		Long: `Runs the same trees twice with murphy run (same seed, so the same programs):
once with every task at the fixed limit (--calibrate=false) and once with
limits calibrated from the references, and prints both samples/s and their
ratio. Extra flags after -- go to both runs (default: --turns 3 --group-sizes 4).`,
		RunE: func(cmd *cobra.Command, extra []string) error {
			if len(extra) > 0 {
				args = extra
			}
			if tasksPath != "" {
				args = append(args, "--tasks", tasksPath)
			}
			if format != "" {
				args = append(args, "--format", format)
			}
			return benchTimeouts(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), args)
		},
	}
	f := cmd.Flags()
	f.StringVar(&tasksPath, "tasks", "", "task file (default: the built-in task set)")
	f.StringVar(&format, "format", "", "task file format (default: detect)")
	return cmd
}

var throughputLine = regexp.MustCompile(`throughput\s+([0-9.]+) samples/s`)

func benchTimeouts(ctx context.Context, stdout, stderr io.Writer, args []string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	rates := map[bool]float64{}
	for _, calibrated := range []bool{false, true} {
		dir, err := os.MkdirTemp("", "murphy-bench-timeouts-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		run := exec.CommandContext(ctx, self, append([]string{"run", "--out", dir, "--calibrate=" + strconv.FormatBool(calibrated)}, args...)...)
		var out bytes.Buffer
		run.Stdout, run.Stderr = &out, stderr
		start := time.Now()
		if err := run.Run(); err != nil {
			return fmt.Errorf("run (calibrated=%v): %w\n%s", calibrated, err, out.String())
		}
		m := throughputLine.FindStringSubmatch(out.String())
		if m == nil {
			return fmt.Errorf("run (calibrated=%v) printed no throughput:\n%s", calibrated, out.String())
		}
		rates[calibrated], _ = strconv.ParseFloat(m[1], 64)
		fmt.Fprintf(stdout, "  %-10s %7.1f samples/s (%s)\n", map[bool]string{false: "fixed", true: "calibrated"}[calibrated],
			rates[calibrated], time.Since(start).Round(time.Second))
	}
	fmt.Fprintf(stdout, "  ratio      %7.2f (target >= 3)\n", rates[true]/max(rates[false], 1e-9))
	return nil
}
