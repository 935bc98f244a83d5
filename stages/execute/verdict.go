package execute

import (
	"bytes"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"

	"github.com/murphy-rl/murphy/sandbox"
	"github.com/murphy-rl/murphy/topics"
)

// The verdict is a plain function over what the sandbox observed: the
// candidate's own output never decides it.

// detail is what is known about one test, for the verdict and feedback.
type detail struct {
	c caseOf
	// kind is the execution status this test implies (passed,
	// wrong_answer, runtime_error, timeout, memory, output_limit,
	// compile_error).
	kind     string
	actual   string
	notPlain string
	err      string
	stdout   string
}

// report is what the feedback may draw on.
type report struct {
	details      []detail
	compileError string
	loadError    *sandbox.Failure
	limits       sandbox.Limits
	sandbox      string
}

func testStatus(kind string) string {
	switch kind {
	case topics.StatusPassed, topics.StatusWrongAnswer, topics.StatusTimeout:
		return kind
	}
	return "error"
}

// processEnd describes how the main process ended, for tests it never
// reported.
func processEnd(res *sandbox.Result) (kind, msg string) {
	switch {
	case res.Signal != "":
		if memoryTrace(res.Stderr) {
			return topics.StatusMemory, "the process was killed by " + res.Signal + " after running out of memory"
		}
		return topics.StatusRuntimeError, "the process was killed by " + res.Signal
	case res.Exited:
		return topics.StatusRuntimeError, fmt.Sprintf("the process exited with code %d before this test finished", res.ExitCode)
	}
	return topics.StatusRuntimeError, "the process ended before this test finished"
}

func memoryTrace(stderr []byte) bool {
	return bytes.Contains(stderr, []byte("MemoryError")) || bytes.Contains(stderr, []byte("Cannot allocate memory")) ||
		bytes.Contains(stderr, []byte("out of memory"))
}

func failureKind(f *sandbox.Failure) string {
	switch f.Kind {
	case "memory":
		return topics.StatusMemory
	case "import":
		return topics.StatusCompileError
	}
	return topics.StatusRuntimeError
}

// functionVerdict judges a python-function job whose tests ran in the
// order of cs.
func functionVerdict(cs []caseOf, res *sandbox.Result, lim sandbox.Limits) (Outcome, *report) {
	rep := &report{limits: effective(lim, res)}
	out := Outcome{TestsTotal: len(cs)}
	if res.SandboxError != "" {
		out.Status, out.SandboxError, out.SandboxErrorKind, rep.sandbox = topics.StatusSandboxError, res.SandboxError, res.SandboxErrorKind, res.SandboxError
		return out, rep
	}
	rep.compileError = res.CompileError
	rep.loadError = res.LoadError
	unreportedKind, unreportedMsg := processEnd(res)
	if res.TimedOut {
		unreportedKind, unreportedMsg = topics.StatusTimeout, "time limit exceeded"
	}
	if res.CompileError != "" {
		unreportedKind, unreportedMsg = topics.StatusCompileError, "the program does not compile"
	} else if res.LoadError != nil {
		unreportedKind, unreportedMsg = failureKind(res.LoadError), "the program failed while loading"
	}
	for k, c := range cs {
		d := detail{c: c}
		var tr sandbox.TestReport
		if k < len(res.Tests) {
			tr = res.Tests[k]
		}
		switch {
		case tr.Passed:
			d.kind = topics.StatusPassed
		case tr.Reported && tr.NotPlain != "":
			d.kind, d.notPlain = topics.StatusWrongAnswer, tr.NotPlain
		case tr.Reported && tr.AssertFailed:
			d.kind = topics.StatusWrongAnswer
			if tr.Err != nil {
				d.err = tr.Err.Traceback
			}
		case tr.Reported && tr.Err != nil:
			d.kind, d.err = failureKind(tr.Err), tr.Err.Traceback
			if tr.Err.Kind == "task" {
				d.kind = topics.StatusRuntimeError
			}
		case tr.Reported:
			d.kind, d.actual = topics.StatusWrongAnswer, tr.Actual
		default:
			d.kind, d.err = unreportedKind, unreportedMsg
		}
		rep.details = append(rep.details, d)
	}
	out.Status = overall(rep, res, res.Done)
	finish(&out, rep)
	return out, rep
}

// overall picks the execution status: the sandbox's failure, then a
// compile error, then passed, then what ended the process, then the first
// failing test in run order.
func overall(rep *report, res *sandbox.Result, done bool) string {
	if rep.sandbox != "" {
		return topics.StatusSandboxError
	}
	if rep.compileError != "" || (rep.loadError != nil && rep.loadError.Kind == "import") {
		return topics.StatusCompileError
	}
	all := done
	for _, d := range rep.details {
		if d.kind != topics.StatusPassed {
			all = false
		}
	}
	if all {
		return topics.StatusPassed
	}
	if res != nil {
		switch {
		case res.OutputLimited:
			return topics.StatusOutputLimit
		case res.MemoryKilled:
			return topics.StatusMemory
		case res.TimedOut:
			return topics.StatusTimeout
		}
		if rep.loadError != nil {
			return failureKind(rep.loadError)
		}
	}
	for _, d := range rep.details {
		if d.kind != topics.StatusPassed {
			return d.kind
		}
	}
	return topics.StatusRuntimeError
}

// finish fills counts and per-test results. Hidden tests keep only their
// status: their values and errors stay out of the record.
func finish(out *Outcome, rep *report) {
	out.Results = make([]topics.TestResult, len(rep.details))
	for _, d := range rep.details {
		r := topics.TestResult{Index: d.c.index, Hidden: d.c.hidden, Status: testStatus(d.kind)}
		if d.kind == topics.StatusPassed {
			out.TestsPassed++
		} else if !d.c.hidden {
			r.Actual = topics.Truncate(d.actual, 300)
			if d.notPlain != "" {
				r.Actual = notPlainText(d.notPlain)
			}
			r.Error = topics.Truncate(d.err, 500)
		}
		if d.c.index < len(out.Results) {
			out.Results[d.c.index] = r
		}
	}
	if out.TestsTotal > 0 {
		out.PassRate = float64(out.TestsPassed) / float64(out.TestsTotal)
	}
}

func notPlainText(typ string) string {
	return "<" + typ + " object: not plain data (only exact builtin and standard-library value types are compared)>"
}

// effective is the limits a run had: what the sandbox reports (the task's,
// the pool's defaults where it set none), else lim.
func effective(lim sandbox.Limits, res *sandbox.Result) sandbox.Limits {
	if res != nil && res.Limits.CPU > 0 {
		return res.Limits
	}
	return lim
}

// stdioVerdict judges the runs of a stdio task, one per case of cs.
func stdioVerdict(task *topics.Task, cs []caseOf, runs []*sandbox.Result) (Outcome, *report) {
	rep := &report{limits: limits(task)}
	for _, run := range runs {
		if run != nil {
			rep.limits = effective(rep.limits, run)
			break
		}
	}
	out := Outcome{TestsTotal: len(cs)}
	for k, c := range cs {
		d := detail{c: c}
		run := runs[k]
		if c.tc == nil || run == nil {
			d.kind, d.err = topics.StatusRuntimeError, "this test was not run"
			rep.details = append(rep.details, d)
			continue
		}
		d.stdout = string(run.Stdout)
		switch {
		case run.SandboxError != "":
			rep.sandbox = run.SandboxError
			out.SandboxError, out.SandboxErrorKind = run.SandboxError, run.SandboxErrorKind
		case run.CompileError != "":
			rep.compileError = run.CompileError
			d.kind, d.err = topics.StatusCompileError, run.CompileError
		case run.Signal == skippedSignal:
			d.kind, d.err = topics.StatusTimeout, "not run: earlier cases exceeded the time limit"
		case run.OutputLimited:
			d.kind, d.err = topics.StatusOutputLimit, "output limit exceeded"
		case run.MemoryKilled:
			d.kind, d.err = topics.StatusMemory, "memory limit exceeded"
		case run.TimedOut:
			d.kind, d.err = topics.StatusTimeout, "time limit exceeded"
		case run.LoadError != nil:
			d.kind, d.err = failureKind(run.LoadError), run.LoadError.Traceback
			if run.LoadError.Kind == "import" {
				rep.loadError = run.LoadError
			}
		case run.Exited && run.ExitCode == 0:
			// Only the process's real exit status counts; os._exit(0) after
			// flushing is a normal way to end a program.
			if outputsMatch(d.stdout, c.tc.Expected, task.FloatTolerance) {
				d.kind = topics.StatusPassed
			} else {
				d.kind = topics.StatusWrongAnswer
			}
		default:
			d.kind, d.err = processEnd(run)
			if run.Exited {
				d.err = fmt.Sprintf("the program exited with code %d", run.ExitCode)
			}
		}
		if d.kind == topics.StatusRuntimeError && len(run.Stderr) > 0 && d.err != "" && !strings.Contains(d.err, "Traceback") {
			d.err += "\n" + string(run.Stderr)
		}
		rep.details = append(rep.details, d)
	}
	out.Status = overall(rep, nil, true)
	if out.Status == topics.StatusSandboxError {
		return out, rep
	}
	finish(&out, rep)
	return out, rep
}

// DefaultFloatTolerance applies to expected stdio tokens written as
// decimals with a fraction or exponent when the task sets no tolerance.
const DefaultFloatTolerance = 1e-6

// decimalToken is a plain decimal number: no hex floats, inf, nan or digit
// separators, which strconv would also read.
var decimalToken = regexp.MustCompile(`^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$`)

// outputsMatch compares program output with the expected output after
// normalising whitespace. Tokens that differ as text compare as numbers
// when both are decimal numbers. An expected token with a fraction or
// exponent is a float: within the tolerance (the task's, else the
// default), absolute or relative to the expected value's magnitude. An
// expected integer has no tolerance: where the task sets one, a decimal
// token of exactly that value passes (LiveCodeBench's checker:
// "2.000000000" is 2), "2.0000001" does not; without one only the
// integer's own text passes.
func outputsMatch(actual, expected string, tol float64) bool {
	a, e := strings.Fields(actual), strings.Fields(expected)
	if len(a) != len(e) {
		return false
	}
	set := tol > 0
	if !set {
		tol = DefaultFloatTolerance
	}
	for i := range a {
		if a[i] == e[i] {
			continue
		}
		if !decimalToken.MatchString(a[i]) || !decimalToken.MatchString(e[i]) {
			return false
		}
		if !strings.ContainsAny(e[i], ".eE") {
			// An integer answer has no tolerance: the token must be
			// that integer exactly ("2.000000000" is 2, "2.0000001" is
			// not), even where the task sets a tolerance.
			if !set {
				return false
			}
			x, ok1 := new(big.Rat).SetString(a[i])
			y, ok2 := new(big.Rat).SetString(e[i])
			if !ok1 || !ok2 || x.Cmp(y) != 0 {
				return false
			}
			continue
		}
		x, err1 := strconv.ParseFloat(a[i], 64)
		y, err2 := strconv.ParseFloat(e[i], 64)
		if err1 != nil || err2 != nil || math.IsInf(x, 0) || math.IsInf(y, 0) {
			return false
		}
		if math.Abs(x-y) > tol*math.Max(1, math.Abs(y)) {
			return false
		}
	}
	return true
}
