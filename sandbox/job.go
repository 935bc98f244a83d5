// Package sandbox runs untrusted Python in a pool of warm bubblewrap
// sandboxes and reports what happened, so that a trusted caller can decide
// the verdict.
//
// Each pool slot is one long-lived bubblewrap sandbox (no network, read-only
// system, private size-capped tmpfs, clean environment, its own pid, ipc and
// uts namespaces) holding a warm Python worker that forks one child per job.
// The worker keeps only CAP_SETUID, CAP_SETGID, CAP_CHOWN and
// CAP_DAC_READ_SEARCH; the child drops to the slot's own non-root host uid
// (so RLIMIT_NPROC applies and nothing it does can touch the worker), sets
// rlimits (CPU, address space as a budget
// above the warm interpreter's size, file size, processes, open files) and
// runs the candidate. The job ends when its main process exits; then every
// process of the slot's uid is killed (daemonised grandchildren included)
// and its tmp directory is wiped. Wall-clock limits and output caps are
// enforced from the parent, which kills the uid's processes from outside.
//
// The candidate never reports its own verdict. The harness sends strictly
// serialised return values (exact builtin types only) on a separate report
// pipe, each line prefixed with a per-run nonce; expected values are
// evaluated and sent before the candidate's code is loaded and compared here,
// in Go, with Python's equality semantics for plain data. Early exit(0),
// os._exit(0), forged lines on inherited descriptors and objects whose
// __eq__ always returns True therefore cannot pass.
//
// Residual trust: assertion-style tests (raw asserts and whole HumanEval
// check functions) are evaluated inside the job process, with every value the
// candidate returns checked to be plain data and with builtins restored from
// before the candidate ran; a candidate that deliberately introspects the
// harness's frames could forge those. Call-and-compare tests are immune.
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
	// with Expected outside the sandbox.
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
}

// Job is one run of a candidate.
type Job struct {
	Mode string
	// Code is the whole program.
	Code string
	// EntryPoint is the function tested in ModeFunction.
	EntryPoint string
	// Setup runs in the program's namespace after it loads (MBPP setup).
	Setup string
	Tests []Test
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
	// Passed is decided here, never by the candidate.
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
	// Hello is set when the harness reported in after dropping privileges.
	Hello bool
	// CompileError is the syntax error of the program, if any.
	CompileError string
	// LoadError is an exception raised while loading the program
	// (function mode) or the uncaught exception of a program.
	LoadError *Failure
	// Loaded: function mode reached the tests.
	Loaded bool
	// Tests has one report per job test.
	Tests []TestReport
	// Done: every test ran (function mode) or the program returned or
	// called exit (program mode; EndCode is its exit status).
	Done    bool
	EndCode int
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
	// Rejected counts report lines without the run's nonce or out of order.
	Rejected int
	CPU      time.Duration
	Wall     time.Duration
	MaxRSSKB int64
	// SandboxError explains a failure of the sandbox, not of the candidate.
	SandboxError string
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
