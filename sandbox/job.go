// Package sandbox runs untrusted Python in a pool of warm bubblewrap
// sandboxes and reports what happened, so that a trusted caller can decide
// the verdict. SECURITY.md gives the design: what runs where, under which
// uid, and what crosses which channel.
//
// Each pool slot is one long-lived bubblewrap sandbox (seccomp filter, no
// network, read-only system, private size-capped tmpfs, clean environment,
// its own pid, ipc and uts namespaces, one cgroup for memory, processes and
// CPU accounting) holding a warm Python worker and a judge. Per job the
// worker forks one candidate process under the slot's job uid; the judge,
// under the slot's judge uid, holds the tests, runs them against a proxy of
// the candidate and reports to the parent on a channel the candidate has no
// part of. The candidate only ever receives the current call's arguments
// and answers with typed values; it never decides a verdict.
package sandbox

import "time"

// Job modes.
const (
	// ModeFunction loads a program and calls its entry point per test.
	ModeFunction = "function"
	// ModeProgram runs a whole program as __main__ with Stdin on stdin.
	ModeProgram = "program"
)

// Test kinds of a function job.
const (
	// TestValue calls the entry point with Args and compares the result
	// with Expected in the judge.
	TestValue = "value"
	// TestAssert evaluates a raw assertion over `candidate`.
	TestAssert = "assert"
	// TestCheck runs a whole check(candidate) function (HumanEval).
	TestCheck = "check"
)

// Test is one test of a function job.
type Test struct {
	Kind string `json:"-"`
	// Args is the argument list text of a value test ("1, [2, 3]").
	Args string `json:"-"`
	// Expected is a Python expression for the expected return value.
	Expected string `json:"-"`
	// Code is the assertion (TestAssert) or the check code (TestCheck).
	Code string `json:"-"`
	// Hidden tests run after every visible one: no hidden input reaches
	// the program before the visible tests are done.
	Hidden bool `json:"-"`
}

// Job is one run of a candidate.
type Job struct {
	Mode string
	// Code is the whole program.
	Code string
	// EntryPoint is the function tested in ModeFunction.
	EntryPoint string
	// Setup runs in the program's namespace after it loads and in the
	// judge's before the tests (MBPP test_setup_code).
	Setup string
	// Helpers is task code the judge runs before the tests, so that tests
	// call the task's own helpers (HumanEval prompts define some), never
	// the candidate's versions of them.
	Helpers string
	// Imports is task code (a reference solution) whose top-level imports
	// of the standard library the tests' namespace gets: the names a test
	// uses are the task's, never the program's.
	Imports string
	Tests   []Test
	// Stdin feeds a ModeProgram job.
	Stdin []byte
	// Limits override the pool's defaults where non-zero.
	Limits Limits
}

// Failure is an exception raised by the candidate.
type Failure struct {
	// Kind is error, memory, recursion, import, exit or entry.
	Kind      string
	Type      string
	Traceback string
}

// TestReport is what a function job reported for one test.
type TestReport struct {
	// Reported is false when the job ended before reaching the test.
	Reported bool
	// Passed is decided by the judge, never by the candidate.
	Passed bool
	// Actual is the repr of the returned value (value tests).
	Actual string
	// NotPlain names the type of a return value that is not plain data.
	NotPlain string
	// AssertFailed is set when an assertion evaluated to false.
	AssertFailed bool
	// Err is an exception raised during the test.
	Err *Failure
}

// Result is everything observed about one job. Run returns it for every
// job that was attempted; SandboxError says when the sandbox itself failed.
type Result struct {
	// CompileError is the syntax error of the program, if any.
	CompileError string
	// LoadError is an exception raised while loading the program
	// (function mode) or the uncaught exception of a program.
	LoadError *Failure
	// Loaded: function mode reached the tests.
	Loaded bool
	// Tests has one report per job test.
	Tests []TestReport
	// Done: every test ran (function mode) or the program's process
	// exited with status 0 (program mode).
	Done bool
	// Exited and ExitCode describe the main process's end; Signal is set
	// when it was killed by a signal.
	Exited   bool
	ExitCode int
	Signal   string
	// TimedOut: the wall limit was reached or the CPU limit killed it.
	TimedOut bool
	// OutputLimited: stdout, stderr or the report channel passed its cap.
	OutputLimited bool
	// MemoryKilled: the slot's memory cgroup killed a process of the job.
	MemoryKilled bool
	// Stdout and Stderr hold up to Limits.OutputBytes each.
	Stdout, Stderr []byte
	// CPU is the CPU time of the whole job: every process of the slot
	// while it ran, from the slot's cgroup (the main process's rusage
	// where the host has no cgroup).
	CPU      time.Duration
	Wall     time.Duration
	MaxRSSKB int64
	// Limits are the limits the job ran under (its own, the pool's
	// defaults where it set none).
	Limits Limits
	// SandboxError explains a failure of the sandbox, not of the candidate.
	SandboxError string
	// SandboxErrorKind classifies SandboxError (topics.SandboxError*).
	SandboxErrorKind string
}

// PassedCount returns the number of passed tests.
func (r *Result) PassedCount() int {
	n := 0
	for _, t := range r.Tests {
		if t.Passed {
			n++
		}
	}
	return n
}
