package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	json "github.com/goccy/go-json"
	"github.com/spf13/cobra"

	"github.com/murphy-rl/murphy/compilefix"
	"github.com/murphy-rl/murphy/sandbox"
	"github.com/murphy-rl/murphy/stages/execute"
	"github.com/murphy-rl/murphy/tasks"
	"github.com/murphy-rl/murphy/topics"
)

// execOptions are the flags of `murphy exec`.
type execOptions struct {
	tasks         string
	format        string
	solutions     string
	reference     bool
	workers       int
	feedbackBytes int
	timeout       time.Duration
	memoryMB      int
	kinds         []string
	store         string
}

func newExecCmd() *cobra.Command {
	var o execOptions
	cmd := &cobra.Command{
		Use:   "exec --tasks FILE|builtin [--format humaneval|mbpp|stdio|native] (--solutions FILE | --reference)",
		Short: "Evaluate programs against tasks in the sandbox pool, without Kafka",
		Long: `Evaluate a JSONL of solutions, or the tasks' own reference solutions, in the
sandbox pool and print one JSON result per solution, in input order, then a
summary line.

A solution line is {"task_id", "solution"} (a whole program) or
{"task_id", "completion"} (text appended to the task's prompt, the HumanEval
convention); for a compile-fix task the solution is a unified diff. Broken
lines and unknown task ids are reported on stderr and skipped. A result line
is {"line", "task_id", "kind", "language", "status", "passed", "total",
"pass_rate", "feedback", "duration_ms"}; the summary line is
{"summary": {"solutions", "passed", "pass_at_1", "mean_pass_rate",
"statuses", "skipped", "duration_ms"}}.

Needs root and bubblewrap (apt-get install -y bubblewrap).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (o.solutions == "") == !o.reference {
				return errors.New("exec: give exactly one of --solutions FILE and --reference")
			}
			if o.tasks == "" {
				return errors.New("exec: --tasks FILE is required")
			}
			return runExec(cmd.Context(), o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	def := sandbox.DefaultLimits()
	f := cmd.Flags()
	f.StringVar(&o.tasks, "tasks", "", "task file (JSONL, JSON array, optionally gzipped), or builtin for the built-in set")
	f.StringSliceVar(&o.kinds, "kinds", nil, "evaluate only these task kinds ("+strings.Join(taskKinds(), ", ")+"; default all)")
	f.StringVar(&o.store, "workspace-store", "", "workspace store URL of compile-fix snapshots (directory, file://, s3://, gs://; the built-in set needs none)")
	f.StringVar(&o.format, "format", "", "task format: "+strings.Join(tasks.Formats(), "|")+" (default: detect)")
	f.StringVar(&o.solutions, "solutions", "", "JSONL of {task_id, solution|completion}")
	f.BoolVar(&o.reference, "reference", false, "evaluate each task's reference solution")
	f.IntVar(&o.workers, "workers", 0, "warm sandboxes (0 = one per CPU)")
	f.IntVar(&o.feedbackBytes, "feedback-bytes", topics.DefaultFeedbackBytes, "feedback cap in bytes (head+tail truncation)")
	f.DurationVar(&o.timeout, "timeout", def.Wall, "default wall and CPU limit per run (a task's timeout_ms wins)")
	f.IntVar(&o.memoryMB, "memory-mb", def.MemoryMB, "default address-space budget per run in MB (a task's memory_mb wins)")
	return cmd
}

type solution struct {
	line   int
	taskID string
	code   string
}

type execResult struct {
	Line       int     `json:"line"`
	TaskID     string  `json:"task_id"`
	Kind       string  `json:"kind"`
	Language   string  `json:"language"`
	Status     string  `json:"status"`
	Passed     int     `json:"passed"`
	Total      int     `json:"total"`
	PassRate   float64 `json:"pass_rate"`
	Feedback   string  `json:"feedback"`
	DurationMS int64   `json:"duration_ms"`
}

type execSummary struct {
	Solutions    int            `json:"solutions"`
	Passed       int            `json:"passed"`
	PassAt1      float64        `json:"pass_at_1"`
	MeanPassRate float64        `json:"mean_pass_rate"`
	Statuses     map[string]int `json:"statuses"`
	Skipped      int            `json:"skipped"`
	DurationMS   int64          `json:"duration_ms"`
}

func runExec(ctx context.Context, o execOptions, stdout, stderr io.Writer) error {
	start := time.Now()
	ts, err := loadExecTasks("exec", o, stderr)
	if err != nil {
		return err
	}
	byID := make(map[string]*topics.Task, len(ts))
	for i := range ts {
		byID[ts[i].TaskID] = &ts[i]
	}
	var sols []solution
	skipped := 0
	if o.reference {
		sols, skipped = referenceSolutions(ts, stderr)
	} else if sols, skipped, err = readSolutions(o.solutions, byID, stderr); err != nil {
		return err
	}

	ev, workers, closeEv, err := openExecEvaluator(ctx, o, ts)
	if err != nil {
		return err
	}
	defer closeEv()

	run := startExecRun(ctx, ev, workers, sols, byID)
	w := bufio.NewWriter(stdout)
	enc := json.NewEncoder(w)
	sum := execSummary{Statuses: map[string]int{}, Skipped: skipped}
	if err := run.print(ctx, w, enc, &sum); err != nil {
		return err
	}
	evalErr := run.wait()
	_ = w.Flush()
	if err := ctx.Err(); err != nil {
		return err
	}
	if evalErr != nil {
		return fmt.Errorf("exec: %w", evalErr)
	}
	if sum.Solutions > 0 {
		sum.PassAt1 = float64(sum.Passed) / float64(sum.Solutions)
		sum.MeanPassRate /= float64(sum.Solutions)
	}
	sum.DurationMS = time.Since(start).Milliseconds()
	if err := enc.Encode(map[string]execSummary{"summary": sum}); err != nil {
		return err
	}
	return w.Flush()
}

// referenceSolutions are the reference solutions of ts (a compile-fix
// task's reference patch), and how many tasks have none.
func referenceSolutions(ts []topics.Task, stderr io.Writer) ([]solution, int) {
	var sols []solution
	skipped := 0
	for i, t := range ts {
		if t.Kind == topics.KindCompileFix && t.ReferencePatch != "" {
			sols = append(sols, solution{line: i + 1, taskID: t.TaskID, code: t.ReferencePatch})
			continue
		}
		if t.Reference == "" {
			fmt.Fprintf(stderr, "murphy exec: task %s has no reference solution\n", t.TaskID)
			skipped++
			continue
		}
		sols = append(sols, solution{line: i + 1, taskID: t.TaskID, code: t.Reference})
	}
	return sols, skipped
}

// execRun is the evaluation of the solutions by a pool of workers.
type execRun struct {
	n       int
	results []*execResult
	// ready carries the index of each result written, or -1 for an
	// evaluation that failed.
	ready chan int
	wg    sync.WaitGroup
	once  sync.Once
	err   error // the first evaluation error
}

// startExecRun starts workers evaluating sols, fed in order until ctx is
// done.
func startExecRun(ctx context.Context, ev *execute.Evaluator, workers int, sols []solution, byID map[string]*topics.Task) *execRun {
	r := &execRun{n: len(sols), results: make([]*execResult, len(sols)), ready: make(chan int, len(sols))}
	next := make(chan int)
	for range workers {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			for i := range next {
				s := sols[i]
				t := byID[s.taskID]
				out, err := ev.Evaluate(ctx, t, s.code)
				if err != nil {
					r.once.Do(func() { r.err = err })
					r.ready <- -1
					continue
				}
				r.results[i] = &execResult{Line: s.line, TaskID: s.taskID, Kind: t.Kind, Language: t.TaskLanguage(), Status: out.Status, Passed: out.TestsPassed,
					Total: out.TestsTotal, PassRate: out.PassRate, Feedback: out.Feedback, DurationMS: out.Duration.Milliseconds()}
				r.ready <- i
			}
		}()
	}
	go func() {
		defer close(next)
		for i := range sols {
			select {
			case next <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	return r
}

// wait waits for the workers and returns the first evaluation error.
func (r *execRun) wait() error {
	r.wg.Wait()
	return r.err
}

// print writes the results in input order as they arrive, counting them
// in sum, until all are written, an evaluation fails or ctx is done.
func (r *execRun) print(ctx context.Context, w *bufio.Writer, enc *json.Encoder, sum *execSummary) error {
	printed := 0
	// got[i]: result i was received; a worker wrote results[i] before
	// sending i, so reading it is ordered after that write (results of
	// indices not yet received are being written).
	got := make([]bool, r.n)
	for range r.n {
		select {
		case i := <-r.ready:
			if i < 0 {
				return nil
			}
			got[i] = true
		case <-ctx.Done():
			return nil
		}
		for printed < r.n && got[printed] {
			res := r.results[printed]
			if err := enc.Encode(res); err != nil {
				return err
			}
			sum.Solutions++
			sum.Statuses[res.Status]++
			sum.MeanPassRate += res.PassRate
			if res.Status == topics.StatusPassed {
				sum.Passed++
			}
			printed++
		}
		_ = w.Flush()
	}
	return nil
}

// openExecEvaluator opens the sandbox pool, and the build sandbox when ts
// has compile-fix tasks, as murphy exec and murphy grade run them; workers
// is the pool's size.
func openExecEvaluator(ctx context.Context, o execOptions, ts []topics.Task) (ev *execute.Evaluator, workers int, closeAll func(), err error) {
	var closers []func()
	release := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	defer func() {
		if err != nil {
			release()
		}
	}()
	cfg := sandbox.DefaultConfig()
	cfg.Workers = o.workers
	cfg.Limits.Wall, cfg.Limits.CPU, cfg.Limits.MemoryMB = o.timeout, o.timeout, o.memoryMB
	if o.timeout == 0 {
		d := sandbox.DefaultLimits()
		cfg.Limits.Wall, cfg.Limits.CPU, cfg.Limits.MemoryMB = d.Wall, d.CPU, d.MemoryMB
	}
	pool, err := sandbox.NewPool(ctx, cfg)
	if err != nil {
		return nil, 0, nil, err
	}
	closers = append(closers, func() { _ = pool.Close() })
	ev = &execute.Evaluator{Runner: pool, FeedbackBytes: o.feedbackBytes, StdioMaxTimeouts: 2}
	if hasKind(ts, topics.KindCompileFix) {
		url := o.store
		if o.tasks == builtinTaskSet {
			var cleanup func()
			if url, cleanup, err = builtinStore(ctx, o.store); err != nil {
				return nil, 0, nil, fmt.Errorf("exec: %w", err)
			}
			closers = append(closers, cleanup)
		}
		if url == "" {
			return nil, 0, nil, errors.New("exec: compile-fix tasks need --workspace-store")
		}
		cfc := compilefix.DefaultConfig()
		cfc.Store = url
		cfc.Builder.Workers = o.workers
		cf, closeCF, err := compilefix.Open(ctx, cfc)
		if err != nil {
			return nil, 0, nil, fmt.Errorf("exec: %w", err)
		}
		closers = append(closers, closeCF)
		ev.CompileFix = cf
	}
	return ev, pool.Size(), release, nil
}

// readSolutions reads {task_id, solution|completion} lines. Broken lines
// and unknown tasks are reported on stderr and counted, not fatal.
func readSolutions(path string, byID map[string]*topics.Task, stderr io.Writer) ([]solution, int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("exec: %w", err)
	}
	defer f.Close()
	var sols []solution
	bad := 0
	r := bufio.NewReaderSize(f, 1<<16)
	for n := 1; ; n++ {
		line, err := r.ReadBytes('\n')
		if len(strings.TrimSpace(string(line))) > 0 {
			var row struct {
				TaskID     string  `json:"task_id"`
				Solution   *string `json:"solution"`
				Completion *string `json:"completion"`
			}
			var perr error
			switch {
			case json.Unmarshal(line, &row) != nil:
				perr = errors.New("not a JSON object")
			case row.TaskID == "":
				perr = errors.New("no task_id")
			case (row.Solution == nil) == (row.Completion == nil):
				perr = errors.New("give exactly one of solution and completion")
			case byID[row.TaskID] == nil:
				perr = fmt.Errorf("unknown task_id %q", row.TaskID)
			}
			if perr != nil {
				fmt.Fprintf(stderr, "murphy exec: %s: line %d: %v\n", path, n, perr)
				bad++
			} else {
				code := ""
				if row.Solution != nil {
					code = *row.Solution
				} else {
					code = byID[row.TaskID].Prompt + *row.Completion
				}
				sols = append(sols, solution{line: n, taskID: row.TaskID, code: code})
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, 0, fmt.Errorf("exec: %s: %w", path, err)
		}
	}
	sort.SliceStable(sols, func(a, b int) bool { return sols[a].line < sols[b].line })
	return sols, bad, nil
}
