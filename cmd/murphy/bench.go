package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime/pprof"
	"strings"

	"github.com/spf13/cobra"

	"github.com/murphy-rl/murphy/internal/bench"
	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/topics"
)

// benchOptions are the settings of `murphy bench` beyond bench.Config.
type benchOptions struct {
	Tasks    string
	Format   string
	Embedded bool
	Check    bool
	// CPUProfile writes this process's CPU profile (pipeline and baseline
	// are told apart by the profile label "side").
	CPUProfile string
	// MemProfile writes this process's allocation profile at the end.
	MemProfile string
	// Runs is how many overhead runs (each a pipeline run and its raw
	// baseline) make the overhead figure: the median of their ratios.
	Runs int
}

func newBenchCmd() *cobra.Command {
	cfg := bench.DefaultConfig()
	if v := os.Getenv("MURPHY_KAFKA_BROKERS"); v != "" {
		cfg.Brokers = strings.Split(v, ",")
	}
	var opt benchOptions
	cmd := &cobra.Command{
		Use:   "bench [overhead|bottleneck|memory]",
		Short: "Measure pipeline overhead, sandbox bottleneck use and per-stage memory",
		Long: `Measure the pipeline, each figure as a ratio against a baseline measured in
the same run (see BENCHMARKS.md):

  overhead    end-to-end samples/s with the sandbox replaced by an in-process
              verdict (benchmark only), against raw kafka-go loops moving the
              same records through the same hops; target >= 0.5
  bottleneck  end-to-end samples/s with the real sandbox pool, against the same
              pool's standalone executions/s on the same candidates; target >= 0.8
  memory      peak RSS of each stage as its own process over a backlog of
              10,000 trees, against a documented bound

Without a subcommand all three run. The broker is --brokers (default
$MURPHY_KAFKA_BROKERS), else an embedded one started in this process.`,
		Example: `  murphy bench
  MURPHY_KAFKA_BROKERS=127.0.0.1:39092 murphy bench overhead --runs 5
  murphy bench memory --embedded --memory-trees 10000`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBench(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), cfg, opt, "overhead", "bottleneck", "memory")
		},
	}
	pf := cmd.PersistentFlags()
	pf.StringSliceVar(&cfg.Brokers, "brokers", cfg.Brokers, "Kafka brokers (default $MURPHY_KAFKA_BROKERS; none: embedded broker)")
	pf.BoolVar(&opt.Embedded, "embedded", false, "use an embedded broker even when brokers are set")
	pf.StringVar(&opt.Tasks, "tasks", "", "task file (default: the built-in task set)")
	pf.StringVar(&opt.Format, "format", "", "task file format (default: detect)")
	pf.IntVar(&cfg.Partitions, "partitions", cfg.Partitions, "partitions of every benchmark topic")
	pf.IntSliceVar(&cfg.GroupSizes, "group-sizes", cfg.GroupSizes, "children sampled per turn; the last repeats")
	pf.IntVar(&cfg.Turns, "turns", cfg.Turns, "turns per tree")
	pf.IntVar(&cfg.TreesPerTask, "trees-per-task", cfg.TreesPerTask, "trees per task of the overhead run")
	pf.IntVar(&cfg.BottleneckTreesPerTask, "bottleneck-trees-per-task", cfg.BottleneckTreesPerTask, "trees per task of the bottleneck run")
	pf.IntVar(&cfg.Generate.MaxTreesInFlight, "max-trees-in-flight", cfg.Generate.MaxTreesInFlight, "trees generate admits at once (0: every tree of the run, as the raw side seeds them; production default 256)")
	pf.IntVar(&cfg.Execute.Concurrency, "execute-concurrency", cfg.Execute.Concurrency, "candidates evaluated at once by the execute stage (0 = one per sandbox)")
	pf.IntVar(&cfg.VerdictConcurrency, "verdict-concurrency", cfg.VerdictConcurrency, "execute's concurrency with the in-process verdict (0 = as with the pool)")
	pf.Int64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the simulated policy and the sandbox")
	pf.IntVar(&cfg.Execute.Sandbox.Workers, "workers", cfg.Execute.Sandbox.Workers, "sandboxes in the pool (0 = one per CPU)")
	pf.DurationVar(&cfg.RunTimeout, "run-timeout", cfg.RunTimeout, "give up a pipeline run after this long")
	pf.IntVar(&cfg.Memory.Trees, "memory-trees", cfg.Memory.Trees, "backlog of the memory benchmark, in trees")
	pf.DurationVar(&cfg.Memory.StageTimeout, "memory-stage-timeout", cfg.Memory.StageTimeout, "longest run of one stage over its backlog")
	pf.StringToIntVar(&cfg.Memory.BoundsMB, "memory-bound-mb", cfg.Memory.BoundsMB, "override a stage's peak RSS bound (e.g. emit=512; default: see BENCHMARKS.md)")
	pf.DurationVar(&cfg.Emit.MaxAge, "emit-max-age", cfg.Emit.MaxAge, "emit's batch age: a partial batch is written after this long (production default 2s)")
	pf.BoolVar(&cfg.Keep, "keep", false, "leave the benchmark topics on the broker (default: deleted)")
	pf.IntVar(&opt.Runs, "runs", 1, "overhead runs, one after the other; the figure is the median of their ratios")
	pf.BoolVar(&opt.Check, "check", false, "exit 1 when a figure misses its target or bound")
	pf.StringVar(&opt.CPUProfile, "cpuprofile", "", "write a CPU profile of the benchmark process to this file (label side=pipeline|raw|standalone)")
	pf.StringVar(&opt.MemProfile, "memprofile", "", "write an allocation profile of the benchmark process to this file at the end (go tool pprof -sample_index=alloc_space; pipeline and baseline together)")
	for _, name := range []string{"overhead", "bottleneck", "memory"} {
		cmd.AddCommand(&cobra.Command{
			Use:   name,
			Short: "Run only the " + name + " benchmark",
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return runBench(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), cfg, opt, name)
			},
		})
	}
	cmd.AddCommand(newBenchSandboxCmd(), newBenchTimeoutsCmd(), newBenchCompileFixCmd(), newBenchCILogCmd(), newBenchSaturationCmd(&cfg, &opt), newBenchSoakCmd())
	return cmd
}

func runBench(ctx context.Context, stdout, stderr io.Writer, cfg bench.Config, opt benchOptions, which ...string) error {
	if opt.Embedded {
		cfg.Brokers = nil
	}
	if err := cfg.Validate(); err != nil {
		return &exitError{code: 2, err: err}
	}
	if opt.Runs < 1 {
		return &exitError{code: 2, err: fmt.Errorf("bench: --runs must be >= 1, got %d", opt.Runs)}
	}
	ts, err := benchTasks(opt, stderr)
	if err != nil {
		return err
	}
	stopProfile, err := startCPUProfile(opt.CPUProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	if opt.MemProfile != "" {
		f, err := os.Create(opt.MemProfile)
		if err != nil {
			return &exitError{code: 2, err: err}
		}
		defer f.Close()
		defer func() {
			if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
				fmt.Fprintf(stderr, "bench: memory profile: %v\n", err)
			}
		}()
	}
	// The stages log at warn: progress lines would only slow the figures.
	logw := stderr
	slog.SetDefault(slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: slog.LevelWarn})))
	b, err := bench.OpenBroker(cfg.Brokers, cfg.Partitions)
	if err != nil {
		return err
	}
	defer b.Close()
	// The pipelines of the overhead and bottleneck runs are in this
	// process, with the collector's production target. Its memory limit is
	// left off: the process also holds the raw side's plan (every record of
	// the run, hundreds of megabytes), which the limit of the stages would
	// make the collector chase. `murphy bench memory` runs each stage as
	// its own process, under its limit.
	gcc := pipeline.DefaultGCConfig()
	gcc.MemoryLimitMB = -1
	gc := gcc.Apply(0)
	fmt.Fprintf(stdout, "murphy bench: %s, %d tasks, group sizes %v, %d turns, emit batch age %s, %s, simulated policy (not a model)\n\n",
		b, len(ts), cfg.GroupSizes, cfg.Turns, cfg.Emit.MaxAge, gc)
	var missed []string
	for _, w := range which {
		switch w {
		case "overhead":
			var series bench.OverheadSeries
			for range opt.Runs {
				res, err := bench.Overhead(ctx, b, cfg, ts, logw)
				if err != nil {
					return err
				}
				fmt.Fprintln(stdout, res)
				series = append(series, res)
			}
			if len(series) > 1 {
				fmt.Fprintln(stdout, series)
			}
			if series.Ratio() < bench.OverheadTarget {
				missed = append(missed, fmt.Sprintf("overhead %.2f < %.1f", series.Ratio(), bench.OverheadTarget))
			}
		case "bottleneck":
			res, err := bench.Bottleneck(ctx, b, cfg, ts, logw)
			if err != nil {
				return err
			}
			fmt.Fprintln(stdout, res)
			if res.Ratio() < bench.BottleneckTarget {
				missed = append(missed, fmt.Sprintf("bottleneck use %.2f < %.1f", res.Ratio(), bench.BottleneckTarget))
			}
		case "memory":
			self, err := os.Executable()
			if err != nil {
				return err
			}
			launch := func(ctx context.Context, stage string, args []string) *exec.Cmd {
				return exec.CommandContext(ctx, self, append([]string{"stage", stage}, args...)...)
			}
			res, err := bench.Memory(ctx, b, cfg, ts, launch, logw)
			if err != nil {
				return err
			}
			fmt.Fprintln(stdout, res)
			if !res.Within() {
				missed = append(missed, "memory above its bound")
			}
		}
	}
	if opt.Check && len(missed) > 0 {
		return &exitError{code: 1, err: fmt.Errorf("bench: %s", strings.Join(missed, "; "))}
	}
	return nil
}

// benchTasks loads the benchmarks' tasks (python-function and stdio).
func benchTasks(opt benchOptions, stderr io.Writer) ([]topics.Task, error) {
	ts, err := loadTasks(runOptions{Tasks: opt.Tasks, Format: opt.Format, Kinds: []string{topics.KindPythonFunction, topics.KindStdio}}, stderr)
	if err != nil {
		return nil, &exitError{code: 2, err: err}
	}
	if len(ts) == 0 {
		return nil, &exitError{code: 2, err: errors.New("bench: no tasks")}
	}
	return ts, nil
}

// startCPUProfile writes a CPU profile to path ("" = none) until stop.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, &exitError{code: 2, err: err}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
