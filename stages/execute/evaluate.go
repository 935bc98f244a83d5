package execute

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/murphy-rl/murphy/compilefix"
	"github.com/murphy-rl/murphy/sandbox"
	"github.com/murphy-rl/murphy/topics"
)

// Outcome is the verdict on one program for one task.
type Outcome struct {
	Status       string
	TestsPassed  int
	TestsTotal   int
	PassRate     float64
	Feedback     string
	Results      []topics.TestResult
	Duration     time.Duration
	SandboxError string
	// SandboxErrorKind classifies SandboxError (topics.SandboxError*).
	SandboxErrorKind string
	// MaxRunCPU is the largest CPU time of one sandbox run (the whole
	// job; a stdio task has one run per test).
	MaxRunCPU time.Duration
	// Diagnostics, TargetsFixed and TargetsTotal describe a compile-fix
	// build (compilefix/README.md).
	Diagnostics  []topics.Diagnostic
	TargetsFixed int
	TargetsTotal int
}

// Evaluator runs programs against tasks and decides verdicts. It is the
// core shared by the execute stage and `murphy exec`; it needs no Kafka.
type Evaluator struct {
	// Runner runs sandbox jobs (a *sandbox.Pool in production).
	Runner sandbox.Runner
	// FeedbackBytes caps the feedback text (head+tail truncation).
	FeedbackBytes int
	// StdioMaxTimeouts stops a stdio task's remaining cases after this many
	// timed out (they count as timeouts); 0 runs every case.
	StdioMaxTimeouts int
	// CompileFix evaluates compile-fix tasks; nil means this executor does
	// not run them (a sandbox_error, invalid_job).
	CompileFix *compilefix.Evaluator
}

// Evaluate runs code (a whole program) against task. The error is non-nil
// only when ctx ends or the runner is closed: everything the program or the
// sandbox does ends up in the Outcome.
func (e *Evaluator) Evaluate(ctx context.Context, task *topics.Task, code string) (Outcome, error) {
	start := time.Now()
	var (
		out Outcome
		err error
	)
	switch task.Kind {
	case topics.KindPythonFunction:
		out, err = e.function(ctx, task, code)
	case topics.KindStdio:
		out, err = e.stdio(ctx, task, code)
	case topics.KindCompileFix:
		if e.CompileFix != nil {
			var cf compilefix.Outcome
			cf, err = e.CompileFix.Evaluate(ctx, task, code, e.cap())
			out = fromCompileFix(cf)
			break
		}
		out = Outcome{Status: topics.StatusSandboxError, SandboxError: "this executor has no build sandbox and workspace store for compile-fix tasks",
			SandboxErrorKind: topics.SandboxErrorInvalidJob}
		out.Feedback = renderFeedback(task, &out, nil, e.cap())
	default:
		out = Outcome{Status: topics.StatusSandboxError, SandboxError: fmt.Sprintf("task kind %q is not supported by this executor", task.Kind),
			SandboxErrorKind: topics.SandboxErrorInvalidJob}
		out.Feedback = renderFeedback(task, &out, nil, e.cap())
	}
	if err != nil {
		return Outcome{}, err
	}
	out.Duration = time.Since(start)
	return out, nil
}

func (e *Evaluator) cap() int {
	if e.FeedbackBytes > 0 {
		return e.FeedbackBytes
	}
	return topics.DefaultFeedbackBytes
}

// limits maps a task's limits onto the sandbox's (zero = pool default).
// The time limit is CPU time, so the verdict does not depend on how loaded
// the machine is; the wall limit only catches programs that sleep or block.
func limits(task *topics.Task) sandbox.Limits {
	var l sandbox.Limits
	switch {
	case task.CalibratedTimeoutMS > 0:
		l.CPU = time.Duration(task.CalibratedTimeoutMS) * time.Millisecond
		if task.TimeoutMS > 0 {
			l.CPU = min(l.CPU, time.Duration(task.TimeoutMS)*time.Millisecond)
		}
		l.Wall = 2*l.CPU + time.Second
	case task.TimeoutMS > 0:
		l.CPU = time.Duration(task.TimeoutMS) * time.Millisecond
		l.Wall = 2 * l.CPU
	}
	if task.MemoryMB > 0 {
		l.MemoryMB = task.MemoryMB
	}
	return l
}

// testOrder runs visible tests before hidden ones, so that nothing a hidden
// test passed to the program can show up in a visible test's feedback.
func testOrder(task *topics.Task) []int {
	order := make([]int, 0, len(task.Tests)+1)
	for i := range task.Tests {
		order = append(order, i)
	}
	sort.SliceStable(order, func(a, b int) bool { return !task.Tests[order[a]].Hidden && task.Tests[order[b]].Hidden })
	return order
}

// caseOf describes test i of a task: the task's Tests, then Check (hidden).
type caseOf struct {
	index  int
	hidden bool
	tc     *topics.TestCase // nil for Check
}

func cases(task *topics.Task) []caseOf {
	var cs []caseOf
	for _, i := range testOrder(task) {
		cs = append(cs, caseOf{index: i, hidden: task.Tests[i].Hidden, tc: &task.Tests[i]})
	}
	if task.Check != "" {
		cs = append(cs, caseOf{index: len(task.Tests), hidden: true})
	}
	return cs
}

func (e *Evaluator) function(ctx context.Context, task *topics.Task, code string) (Outcome, error) {
	cs := cases(task)
	// The prompt, where it is code, defines the task's helpers for the
	// judge (HumanEval checks call some of them).
	job := &sandbox.Job{Mode: sandbox.ModeFunction, Code: code, EntryPoint: task.EntryPoint, Setup: task.Setup,
		Helpers: task.Prompt, Imports: task.Reference, Limits: limits(task)}
	for _, c := range cs {
		switch {
		case c.tc == nil:
			job.Tests = append(job.Tests, sandbox.Test{Kind: sandbox.TestCheck, Code: task.Check, Hidden: true})
		case c.tc.Assert != "":
			job.Tests = append(job.Tests, sandbox.Test{Kind: sandbox.TestAssert, Code: c.tc.Assert, Hidden: c.hidden})
		default:
			job.Tests = append(job.Tests, sandbox.Test{Kind: sandbox.TestValue, Args: c.tc.Args, Expected: c.tc.Expected, Hidden: c.hidden})
		}
	}
	res, err := e.Runner.Run(ctx, job)
	if err == nil {
		// A job cut short by cancellation says nothing about the program.
		err = ctx.Err()
	}
	if err != nil {
		return Outcome{}, err
	}
	out, fails := functionVerdict(cs, res, job.Limits)
	out.Feedback = renderFeedback(task, &out, fails, e.cap())
	out.MaxRunCPU = res.CPU
	return out, nil
}

func (e *Evaluator) stdio(ctx context.Context, task *topics.Task, code string) (Outcome, error) {
	cs := cases(task)
	runs := make([]*sandbox.Result, len(cs))
	timeouts := 0
	for k, c := range cs {
		if c.tc == nil {
			continue
		}
		if e.StdioMaxTimeouts > 0 && timeouts >= e.StdioMaxTimeouts {
			runs[k] = &sandbox.Result{TimedOut: true, ExitCode: -1, SandboxError: "", Signal: skippedSignal}
			continue
		}
		res, err := e.Runner.Run(ctx, &sandbox.Job{Mode: sandbox.ModeProgram, Code: code, Stdin: []byte(c.tc.Stdin), Limits: limits(task)})
		if err == nil {
			err = ctx.Err()
		}
		if err != nil {
			return Outcome{}, err
		}
		runs[k] = res
		if res.TimedOut {
			timeouts++
		}
		if res.CompileError != "" || res.SandboxError != "" {
			// Deterministic for every case: no need to run the others.
			for j := k + 1; j < len(cs); j++ {
				runs[j] = res
			}
			break
		}
	}
	out, fails := stdioVerdict(task, cs, runs)
	out.Feedback = renderFeedback(task, &out, fails, e.cap())
	for _, r := range runs {
		if r != nil {
			out.MaxRunCPU = max(out.MaxRunCPU, r.CPU)
		}
	}
	return out, nil
}

// skippedSignal marks a stdio case not run after too many timeouts.
const skippedSignal = "not run"

// fromCompileFix is the outcome of a compile-fix evaluation.
func fromCompileFix(o compilefix.Outcome) Outcome {
	return Outcome{
		Status: o.Status, TestsPassed: o.TestsPassed, TestsTotal: o.TestsTotal, PassRate: o.PassRate,
		Feedback: o.Feedback, Results: o.Results, SandboxError: o.SandboxError, SandboxErrorKind: o.SandboxErrorKind,
		MaxRunCPU: o.MaxRunCPU, Diagnostics: o.Diagnostics, TargetsFixed: o.TargetsFixed, TargetsTotal: o.TargetsTotal,
	}
}
