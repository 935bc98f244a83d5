package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	json "github.com/goccy/go-json"
	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/murphy-rl/murphy/compilefix"
	"github.com/murphy-rl/murphy/stages/govern"
	"github.com/murphy-rl/murphy/stages/govern/judge"
	"github.com/murphy-rl/murphy/tasks"
	"github.com/murphy-rl/murphy/topics"
)

// gradeOptions are the flags of `murphy grade` beyond exec's.
type gradeOptions struct {
	exec       execOptions
	executions string
	compare    bool
	config     string
}

func newGradeCmd() *cobra.Command {
	cfg := defaultConfig()
	o := gradeOptions{exec: execOptions{tasks: builtinTaskSet}}
	cmd := &cobra.Command{
		Use:   "grade --tasks FILE|builtin (--solutions FILE | --reference | --executions FILE [--compare])",
		Short: "Execute and govern solutions or patches with the pipeline's judges, without Kafka",
		Long: `Grade solutions as the pipeline does: each one is executed (the sandbox
pool, the build sandbox for compile-fix patches) and governed with the
govern configuration (--config, --govern.* flags; the same judges, tiers and
step scorers as murphy run), and one JSON line per solution says its status,
failure cause, route, reward, reward tier (correct, unsure, wrong,
no_compile, or the route of a masked or penalised sample), the judge that
decided it, the artifact judge's comparison when it ran, and the step
scores. --solutions and --reference take exec's inputs.

--executions FILE governs stored executions instead (JSON lines of
executions or samples, e.g. murphy run --samples-out): nothing is run again.
With --compare it regrades them under three schemes, binary, tiered and
tiered with process scores, and prints what each makes of the same data
(rewards, the groups left without a learning signal, the action tokens
down-weighted), per turn.

Compile-fix tasks of the built-in set need no store; others need
--workspace-store (the artifact judge builds their snapshots).`,
		Example: `  murphy grade --reference --kinds compile-fix
  murphy grade --tasks builtin --solutions patches.jsonl
  murphy run --kinds compile-fix --samples-out samples.jsonl && murphy grade --executions samples.jsonl --compare`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := loadConfig(cmd.Flags(), o.config, &cfg); err != nil {
				return &exitError{code: 2, err: err}
			}
			n := 0
			for _, set := range []bool{o.exec.solutions != "", o.exec.reference, o.executions != ""} {
				if set {
					n++
				}
			}
			if n != 1 {
				return &exitError{code: 2, err: errors.New("grade: give exactly one of --solutions, --reference and --executions")}
			}
			if o.compare && o.executions == "" {
				return &exitError{code: 2, err: errors.New("grade: --compare regrades --executions")}
			}
			return runGrade(cmd.Context(), o, cfg.Govern, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.config, "config", "", "YAML configuration file (its govern section)")
	f.StringVar(&o.exec.tasks, "tasks", o.exec.tasks, "task file (JSONL, JSON array, optionally gzipped), or builtin for the built-in set")
	f.StringSliceVar(&o.exec.kinds, "kinds", nil, "grade only these task kinds ("+strings.Join(taskKinds(), ", ")+"; default all)")
	f.StringVar(&o.exec.store, "workspace-store", "", "workspace store URL of compile-fix snapshots (the built-in set needs none)")
	f.StringVar(&o.exec.format, "format", "", "task format: "+strings.Join(tasks.Formats(), "|")+" (default: detect)")
	f.StringVar(&o.exec.solutions, "solutions", "", "JSONL of {task_id, solution|completion} (a unified diff for compile-fix)")
	f.BoolVar(&o.exec.reference, "reference", false, "grade each task's reference solution or patch")
	f.StringVar(&o.executions, "executions", "", "JSONL of stored executions or samples to govern (not run again)")
	f.BoolVar(&o.compare, "compare", false, "with --executions: regrade under binary, tiered and tiered + process rewards")
	f.IntVar(&o.exec.workers, "workers", 0, "warm sandboxes and build slots (0 = one per CPU)")
	o.exec.feedbackBytes = topics.DefaultFeedbackBytes
	bindStage(f, &cfg, "govern")
	return cmd
}

// gradeLine is one graded solution.
type gradeLine struct {
	Line       int       `json:"line"`
	TaskID     string    `json:"task_id"`
	NodeID     string    `json:"node_id,omitempty"`
	Status     string    `json:"status"`
	Cause      string    `json:"cause"`
	Route      string    `json:"route"`
	Reward     float64   `json:"reward"`
	Tier       string    `json:"tier"`
	Judge      string    `json:"judge,omitempty"`
	Artifact   string    `json:"artifact,omitempty"`
	Steps      int       `json:"steps"`
	StepScores []float32 `json:"step_scores,omitempty"`
}

// recordingComparer remembers the artifact judge's comparisons by
// (task, candidate), for the grade lines.
type recordingComparer struct {
	c  judge.Comparer
	mu sync.Mutex
	by map[string]compilefix.EquivResult
}

// Compare implements judge.Comparer; a candidate compared before (another
// scheme of --compare) is answered from the record.
func (r *recordingComparer) Compare(ctx context.Context, task *topics.Task, candidate string) (compilefix.EquivResult, error) {
	r.mu.Lock()
	res, ok := r.by[task.TaskID+"\x00"+candidate]
	r.mu.Unlock()
	if ok {
		return res, nil
	}
	res, err := r.c.Compare(ctx, task, candidate)
	if err == nil {
		r.mu.Lock()
		r.by[task.TaskID+"\x00"+candidate] = res
		r.mu.Unlock()
	}
	return res, err
}

func (r *recordingComparer) result(taskID, code string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	res, ok := r.by[taskID+"\x00"+code]
	if !ok {
		return ""
	}
	return res.Verdict.String() + ": " + res.Reason
}

func runGrade(ctx context.Context, o gradeOptions, gcfg govern.Config, stdout, stderr io.Writer) error {
	ts, err := loadExecTasks("grade", o.exec, stderr)
	if err != nil {
		return err
	}
	byID := make(map[string]*topics.Task, len(ts))
	for i := range ts {
		byID[ts[i].TaskID] = &ts[i]
	}
	if hasKind(ts, topics.KindCompileFix) && gcfg.Artifact.Store == "" {
		url, cleanup, err := execStore(ctx, o.exec)
		if err != nil {
			return err
		}
		defer cleanup()
		gcfg.Artifact.Store = url
		o.exec.store = url
	}
	var execs []*topics.Execution
	if o.executions != "" {
		if execs, err = readExecutions(o.executions, byID, stderr); err != nil {
			return err
		}
	} else {
		if execs, err = executeForGrade(ctx, o.exec, ts, byID, stderr); err != nil {
			return err
		}
	}
	eq, closeEq, err := govern.OpenEquivalence(ctx, gcfg)
	if err != nil {
		return err
	}
	defer closeEq()
	var rec *recordingComparer
	var opts []govern.Option
	if eq != nil {
		rec = &recordingComparer{c: eq, by: map[string]compilefix.EquivResult{}}
		opts = append(opts, govern.WithEquivalence(rec))
	}
	lookup := tasks.NewMemory(ts)
	if o.compare {
		return compareSchemes(ctx, stdout, gcfg, opts, execs, lookup)
	}
	gov, err := govern.NewGovernor(gcfg, nil, opts...)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	enc := json.NewEncoder(w)
	tiers := map[string]int{}
	for i, ex := range execs {
		res, err := gov.Govern(ctx, ex, lookup)
		if err != nil {
			return fmt.Errorf("grade: %s: %w", ex.TaskID, err)
		}
		s := res.Sample
		line := gradeLine{Line: i + 1, TaskID: ex.TaskID, NodeID: ex.NodeID, Status: ex.Status, Cause: s.FailureCause, Route: s.Route,
			Reward: s.Reward, Tier: res.Tier(), Judge: res.Judge, Steps: len(govern.StepSpans(&ex.Candidate)), StepScores: s.StepScores}
		if rec != nil {
			line.Artifact = rec.result(ex.TaskID, ex.Code)
		}
		tiers[line.Tier]++
		if err := enc.Encode(line); err != nil {
			return err
		}
	}
	return enc.Encode(map[string]any{"summary": map[string]any{"graded": len(execs), "tiers": tiers}})
}

// loadExecTasks loads the tasks of murphy exec and murphy grade (cmd names
// the command in messages): a task file or the built-in set, of the
// selected kinds.
func loadExecTasks(cmd string, o execOptions, stderr io.Writer) ([]topics.Task, error) {
	var ts []topics.Task
	var err error
	if o.tasks == builtinTaskSet || o.tasks == "" {
		ts, err = allBuiltinTasks()
	} else {
		var lerrs []tasks.LineError
		ts, lerrs, err = tasks.Load(o.tasks, o.format)
		for _, le := range lerrs {
			fmt.Fprintf(stderr, "murphy %s: %s: %v\n", cmd, o.tasks, &le)
		}
	}
	if err != nil {
		return nil, err
	}
	if ts, err = selectKinds(ts, o.kinds); err != nil {
		return nil, fmt.Errorf("%s: --kinds: %w", cmd, err)
	}
	if len(ts) == 0 {
		return nil, fmt.Errorf("%s: no usable task in %s", cmd, o.tasks)
	}
	return ts, nil
}

// execStore is the workspace store of compile-fix tasks: the built-in
// snapshots, or --workspace-store.
func execStore(ctx context.Context, o execOptions) (string, func(), error) {
	if o.tasks == builtinTaskSet || o.tasks == "" {
		url, cleanup, err := builtinStore(ctx, o.store)
		if err != nil {
			return "", nil, fmt.Errorf("grade: %w", err)
		}
		return url, cleanup, nil
	}
	if o.store == "" {
		return "", nil, errors.New("grade: compile-fix tasks need --workspace-store")
	}
	return o.store, func() {}, nil
}

// readExecutions reads JSON lines of executions (or samples, which embed
// one). Broken lines and unknown tasks are reported and skipped.
func readExecutions(path string, byID map[string]*topics.Task, stderr io.Writer) ([]*topics.Execution, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("grade: %w", err)
	}
	defer f.Close()
	var out []*topics.Execution
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var ex topics.Execution
		if err := json.Unmarshal(sc.Bytes(), &ex); err != nil {
			fmt.Fprintf(stderr, "murphy grade: %s:%d: %v\n", path, n, err)
			continue
		}
		if byID[ex.TaskID] == nil {
			fmt.Fprintf(stderr, "murphy grade: %s:%d: unknown task %q\n", path, n, ex.TaskID)
			continue
		}
		out = append(out, &ex)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("grade: %s: %w", path, err)
	}
	return out, nil
}

// executeForGrade runs the solutions (or references) as murphy exec does
// and turns each outcome into an execution record of a one-node tree.
func executeForGrade(ctx context.Context, o execOptions, ts []topics.Task, byID map[string]*topics.Task, stderr io.Writer) ([]*topics.Execution, error) {
	var sols []solution
	if o.reference {
		for i, t := range ts {
			code := t.Reference
			if t.Kind == topics.KindCompileFix {
				code = t.ReferencePatch
			}
			if code == "" {
				fmt.Fprintf(stderr, "murphy grade: task %s has no reference\n", t.TaskID)
				continue
			}
			sols = append(sols, solution{line: i + 1, taskID: t.TaskID, code: code})
		}
	} else {
		var err error
		if sols, _, err = readSolutions(o.solutions, byID, stderr); err != nil {
			return nil, err
		}
	}
	ev, workers, closeEv, err := openExecEvaluator(ctx, o, ts)
	if err != nil {
		return nil, err
	}
	defer closeEv()
	out := make([]*topics.Execution, len(sols))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(workers, 1))
	for i, s := range sols {
		g.Go(func() error {
			res, err := ev.Evaluate(gctx, byID[s.taskID], s.code)
			if err != nil {
				return err
			}
			t := byID[s.taskID]
			ex := &topics.Execution{Candidate: topics.Candidate{SchemaVersion: topics.SchemaVersion, TaskID: s.taskID,
				TreeID: fmt.Sprintf("grade-%d", s.line), NodeID: fmt.Sprintf("grade-%d", s.line), Turn: 1, Code: s.code,
				TreeSpec: topics.TreeSpec{MaxTurns: 1, RewardPolicy: t.RewardPolicy}, Policy: "murphy grade"},
				Status: res.Status, TestsPassed: res.TestsPassed, TestsTotal: res.TestsTotal, PassRate: res.PassRate,
				Feedback: res.Feedback, Results: res.Results, SandboxError: res.SandboxError, SandboxErrorKind: res.SandboxErrorKind,
				Diagnostics: res.Diagnostics, TargetsFixed: res.TargetsFixed, TargetsTotal: res.TargetsTotal}
			out[i] = ex
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, fmt.Errorf("grade: %w", err)
	}
	return out, nil
}
