package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/murphy-rl/murphy/internal/dataset"
	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/sandbox"
	"github.com/murphy-rl/murphy/stages/credit"
	"github.com/murphy-rl/murphy/stages/execute"
	"github.com/murphy-rl/murphy/tasks"
	"github.com/murphy-rl/murphy/tasks/submit"
	"github.com/murphy-rl/murphy/topics"
	"github.com/spf13/cobra"
)

// runOptions are the settings of `murphy run` beyond the stage sections.
type runOptions struct {
	Tasks        string
	Format       string
	Out          string
	Turns        int
	GroupSizes   []int
	TreesPerTask int
	Seed         int64
	RunID        string
	Timeout      time.Duration
	Progress     time.Duration
	DataDir      string
	// Calibrate derives each task's time limit from its reference before
	// the run (execute.Calibration); off, every task keeps its fixed limit.
	Calibrate bool
	// Compare lists the credit strategies the summary also credits the
	// run's samples under, beside the run's own.
	Compare []string
	// SamplesOut, when set, receives every sample of the run as JSON lines
	// (the input of murphy credit).
	SamplesOut string
	// Kinds selects the task kinds run (empty = all).
	Kinds []string
}

func newRunCmd() *cobra.Command {
	cfg := defaultConfig()
	cfg.Topics.Partitions = 4
	cfg.Emit.Dir = "out"
	// Compile-fix children are agent episodes (--generate.episodes.enabled=false: one response each).
	cfg.Generate.Episodes.Enabled = true
	opt := runOptions{Out: "out", Turns: 3, GroupSizes: []int{4}, TreesPerTask: 1, Seed: 1,
		Timeout: 30 * time.Minute, Progress: 2 * time.Second, Calibrate: true, Compare: []string{credit.StrategyMARS, credit.StrategyMERS, credit.StrategyGRPOMT},
		Kinds: taskKinds()}
	// One process bounded by --timeout: a slow tree is not a stuck one, so
	// credit's deadline is the run's own unless set.
	cfg.Credit.Deadline = opt.Timeout
	var path string
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run every stage in one process on the embedded broker with the simulated policy",
		Long: `Run the whole pipeline in one process: an embedded Kafka-protocol broker,
the five stages wired exactly as in production, the simulated policy (NOT a
model: it samples reference solutions, mutants and broken code to exercise the
method), and built-in tasks: every python-function and stdio task and one
compile-fix task per language (--tasks builtin: all 16 compile-fix tasks;
--tasks FILE: yours). Trees grow over --turns turns from execution feedback,
are credited, and land as Arrow files in --out.

Progress is printed while it works; a summary at the end. The exit code is 0
only when every tree completed and is in the output files.`,
		Example: `  murphy run
  murphy run --turns 3 --group-sizes 8,4 --trees-per-task 2 --out out/
  murphy run --tasks ../shared/data/humaneval/HumanEval.jsonl.gz --format humaneval`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			defaultDeadline := cfg.Credit.Deadline
			if err := loadConfig(cmd.Flags(), path, &cfg); err != nil {
				return &exitError{code: 2, err: err}
			}
			if cfg.Credit.Deadline == defaultDeadline && !cmd.Flags().Changed("credit.deadline") {
				cfg.Credit.Deadline = opt.Timeout
			}
			if cmd.Flags().Changed("out") || cfg.Emit.Dir == "out" {
				cfg.Emit.Dir = opt.Out
			}
			return runAll(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), &cfg, opt)
		},
	}
	f := cmd.Flags()
	f.StringVar(&path, "config", "", "YAML configuration file")
	f.StringVar(&opt.Tasks, "tasks", "", "task file, or builtin (every built-in task); default: the built-in python-function and stdio tasks and one compile-fix task per language")
	f.StringSliceVar(&opt.Kinds, "kinds", opt.Kinds, "task kinds to run: "+strings.Join(taskKinds(), ", "))
	f.StringVar(&opt.Format, "format", "", "task file format: "+fmt.Sprint(tasks.Formats())+" (default: detect)")
	f.StringVar(&opt.Out, "out", opt.Out, "output directory for Arrow files")
	f.IntVar(&opt.Turns, "turns", opt.Turns, "turns per tree (max_turns)")
	f.IntSliceVar(&opt.GroupSizes, "group-sizes", opt.GroupSizes, "children sampled per turn; the last repeats (e.g. 8,4)")
	f.IntVar(&opt.TreesPerTask, "trees-per-task", opt.TreesPerTask, "trees per task")
	f.Int64Var(&opt.Seed, "seed", opt.Seed, "seed of the simulated policy and the sandbox")
	f.StringVar(&opt.RunID, "run-id", "", "run id, prefix of tree ids (default: run-<seed>)")
	f.DurationVar(&opt.Timeout, "timeout", opt.Timeout, "give up after this long")
	f.DurationVar(&opt.Progress, "progress", opt.Progress, "progress line interval (0 = off)")
	f.StringVar(&opt.DataDir, "broker-data-dir", "", "persist the embedded broker's log here")
	f.BoolVar(&opt.Calibrate, "calibrate", opt.Calibrate, "derive each task's CPU time limit from its reference's measured CPU time (x10, at least 500ms, capped by timeout_ms) before the run; false keeps the fixed limits")
	f.StringSliceVar(&opt.Compare, "compare", opt.Compare, "credit strategies the summary compares on the run's samples, beside the run's own (mars, mers, grpo-mt; empty = none)")
	f.StringVar(&opt.SamplesOut, "samples-out", "", "write every sample as a JSON line to this file (the input of murphy credit)")
	bindCommon(f, &cfg)
	for _, n := range stageNames {
		bindStage(f, &cfg, n)
	}
	return cmd
}

func loadTasks(opt runOptions, stderr io.Writer) ([]topics.Task, error) {
	if opt.Tasks == "" || opt.Tasks == builtinTaskSet {
		ts, err := allBuiltinTasks()
		if err != nil {
			return nil, err
		}
		if opt.Tasks == "" {
			ts = quickStart(ts)
		}
		return selectKinds(ts, opt.Kinds)
	}
	ts, lineErrs, err := tasks.Load(opt.Tasks, opt.Format)
	if err != nil {
		return nil, err
	}
	for _, le := range lineErrs {
		fmt.Fprintf(stderr, "%s:%d: skipped: %v\n", opt.Tasks, le.Line, le.Err)
	}
	return selectKinds(ts, opt.Kinds)
}

func runAll(ctx context.Context, stdout, stderr io.Writer, cfg *Config, opt runOptions) error {
	ts, err := prepareRun(cfg, &opt, stderr)
	if err != nil {
		return err
	}
	cleanupStore, err := compileFixStores(ctx, cfg, opt, ts)
	if err != nil {
		return err
	}
	defer cleanupStore()
	if opt.Calibrate {
		if err := calibrate(ctx, cfg.Execute.Sandbox, ts, stderr); err != nil {
			return err
		}
	}
	sub := submit.DefaultConfig()
	sub.RunID, sub.MaxTurns, sub.GroupSizes, sub.GroupSize = opt.RunID, opt.Turns, opt.GroupSizes, opt.GroupSizes[0]
	sub.TreesPerTask, sub.Seed = opt.TreesPerTask, opt.Seed
	if err := sub.Validate(); err != nil {
		return &exitError{code: 2, err: err}
	}
	if err := os.MkdirAll(cfg.Emit.Dir, 0o755); err != nil {
		return err
	}
	log := stderrLogger(cfg)
	log.Debug("collector", "settings", cfg.applyGC(stageNames))

	broker, err := pipeline.StartEmbedded(pipeline.EmbeddedConfig{Partitions: cfg.Topics.Partitions, DataDir: opt.DataDir})
	if err != nil {
		return err
	}
	defer broker.Close()
	cfg.Kafka.Brokers = broker.Brokers()
	ctx, cancel := context.WithTimeout(ctx, opt.Timeout)
	defer cancel()
	if err := pipeline.EnsureTopics(ctx, cfg.Kafka, cfg.Topics); err != nil {
		return err
	}
	rt, err := pipeline.NewRuntime(pipeline.RuntimeConfig{Kafka: cfg.Kafka, Catalog: cfg.Topics, Name: "run",
		HTTPAddr: cfg.HTTPAddr, Logger: log})
	if err != nil {
		return err
	}
	set, err := addStages(ctx, rt, cfg, stageNames)
	if err != nil {
		return err
	}
	defer set.Close()
	runCtx, stopRuntime := context.WithCancel(context.Background())
	defer stopRuntime()
	runDone := make(chan error, 1)
	go func() { runDone <- rt.Run(runCtx) }()

	policyLabel := cfg.Generate.Policy.Kind
	if policyLabel == "simulated" {
		policyLabel = "simulated (not a model)"
	}
	fmt.Fprintf(stderr, "murphy run %s: %d tasks x %d trees, turns %d, group sizes %v, policy %s, embedded broker %v\n",
		opt.RunID, len(ts), opt.TreesPerTask, opt.Turns, opt.GroupSizes, policyLabel, broker.Brokers())
	start := time.Now()
	rep, err := submit.Publish(ctx, rt.Producer(), cfg.Topics, sub, ts, 0)
	if err != nil {
		return fmt.Errorf("submit: %w", err)
	}
	for _, e := range rep.Skipped {
		fmt.Fprintf(stderr, "skipped task: %v\n", e)
	}
	samplesOut, closeSamples, err := openSamplesOut(opt.SamplesOut, stderr)
	if err != nil {
		return err
	}
	defer closeSamples()
	mon := newMonitor(rep.Trees, opt.Compare, samplesOut)
	monErr := mon.watch(ctx, cfg.Kafka, cfg.Topics, stderr, opt.Progress, start)

	// Stop the stages: in-flight records finish, files are closed.
	stopRuntime()
	select {
	case rerr := <-runDone:
		if rerr != nil {
			log.Error("runtime stopped with an error", "error", rerr)
		}
	case <-time.After(2 * time.Minute):
		log.Error("runtime did not stop in time")
	}
	files, fileTrees, ferr := countOutput(cfg.Emit.Dir)
	elapsed := time.Since(start)
	mon.summary.print(stdout, elapsed, files, fileTrees, mon.comparisons())
	return runVerdict(cfg, mon, rep.Trees, fileTrees, monErr, ferr)
}

// prepareRun applies the run's seed and id, checks the configuration and
// loads the tasks; its errors are usage errors (exit code 2).
func prepareRun(cfg *Config, opt *runOptions, stderr io.Writer) ([]topics.Task, error) {
	if opt.RunID == "" {
		opt.RunID = "run-" + strconv.FormatInt(opt.Seed, 10)
	}
	cfg.Generate.Policy.Simulated.Seed = opt.Seed
	cfg.Generate.Episodes.Simulated.Seed = opt.Seed
	cfg.Execute.Sandbox.Seed = opt.Seed
	if err := cfg.validate(stageNames); err != nil {
		return nil, &exitError{code: 2, err: err}
	}
	for _, name := range opt.Compare {
		if !slices.Contains(credit.Strategies(), name) {
			return nil, &exitError{code: 2, err: fmt.Errorf("run: --compare: unknown strategy %q (want one of %v)", name, credit.Strategies())}
		}
	}
	ts, err := loadTasks(*opt, stderr)
	if err != nil {
		return nil, &exitError{code: 2, err: err}
	}
	if len(ts) == 0 {
		return nil, &exitError{code: 2, err: errors.New("run: no tasks")}
	}
	return ts, nil
}

// runVerdict is murphy run's exit: 0 only when every tree completed and is
// in the output files.
func runVerdict(cfg *Config, mon *monitor, trees, fileTrees int, monErr, ferr error) error {
	switch {
	case monErr != nil:
		return &exitError{code: 1, err: fmt.Errorf("run incomplete: %w", monErr)}
	case ferr != nil:
		return &exitError{code: 1, err: fmt.Errorf("output: %w", ferr)}
	case mon.summary.droppedOnly() > 0:
		return &exitError{code: 1, err: fmt.Errorf("%d trees closed incomplete at credit's deadline (%s) and dropped", mon.summary.droppedOnly(), cfg.Credit.Deadline)}
	case mon.summary.Incomplete > 0:
		return &exitError{code: 1, err: fmt.Errorf("%d trees closed incomplete", mon.summary.Incomplete)}
	case fileTrees+mon.summary.Empty != trees:
		return &exitError{code: 1, err: fmt.Errorf("output files hold %d of %d trees (%d credited with no sample left)", fileTrees, trees, mon.summary.Empty)}
	}
	return nil
}

// compileFixStores points execute, the episodes and the artifact judge at
// the workspace store of the run's compile-fix tasks (the built-in store
// for the built-in set), or turns episodes off when there are none. The
// returned cleanup releases the built-in store.
func compileFixStores(ctx context.Context, cfg *Config, opt runOptions, ts []topics.Task) (func(), error) {
	cleanup := func() {}
	if !hasKind(ts, topics.KindCompileFix) {
		cfg.Generate.Episodes.Enabled = false // no compile-fix task: nothing for episodes to open
		return cleanup, nil
	}
	switch {
	case opt.Tasks == "" || opt.Tasks == builtinTaskSet:
		url, release, err := builtinStore(ctx, cfg.Execute.CompileFix.Store)
		if err != nil {
			return nil, fmt.Errorf("run: %w", err)
		}
		cleanup = release
		cfg.Execute.CompileFix.Store = url
	case cfg.Execute.CompileFix.Store == "":
		return nil, &exitError{code: 2, err: errors.New("run: compile-fix tasks need a workspace store (--execute.compile-fix.store)")}
	}
	if cfg.Generate.Episodes.Store == "" {
		cfg.Generate.Episodes.Store = cfg.Execute.CompileFix.Store // episodes read the snapshots execute reads
	}
	if cfg.Govern.Artifact.Store == "" {
		cfg.Govern.Artifact.Store = cfg.Execute.CompileFix.Store // the artifact judge builds the snapshots execute builds
	}
	return cleanup, nil
}

// openSamplesOut opens --samples-out ("" = none): a buffered writer and its
// close, which reports a failed flush on stderr.
func openSamplesOut(path string, stderr io.Writer) (io.Writer, func(), error) {
	if path == "" {
		return nil, func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, &exitError{code: 2, err: fmt.Errorf("run: %w", err)}
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	return bw, func() {
		if err := errors.Join(bw.Flush(), f.Close()); err != nil {
			fmt.Fprintf(stderr, "samples out %s: %v\n", path, err)
		}
	}, nil
}

// countOutput counts the distinct trees in the batch files of dir.
func countOutput(dir string) ([]string, int, error) {
	files, err := dataset.Files(dir)
	if err != nil {
		return nil, 0, err
	}
	rows, err := dataset.ReadDir(dir)
	if err != nil {
		return files, 0, err
	}
	return files, dataset.Trees(rows), nil
}

// calibrate sets each task's calibrated time limit from its reference,
// measured in a pool like the execute stage's, before the tasks are
// published.
func calibrate(ctx context.Context, cfg sandbox.Config, ts []topics.Task, stderr io.Writer) error {
	pool, err := sandbox.NewPool(ctx, cfg)
	if err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	defer pool.Close()
	start := time.Now()
	rep, err := (&execute.Evaluator{Runner: pool}).Calibrate(ctx, ts, execute.DefaultCalibration(), pool.Size())
	if err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	fmt.Fprintf(stderr, "time limits: %s in %s\n", rep, time.Since(start).Round(time.Millisecond))
	for _, s := range rep.Skipped {
		fmt.Fprintf(stderr, "  fixed limit: %s\n", s)
	}
	return nil
}
