package sandbox

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/topics"
	"golang.org/x/sys/unix"
)

// testPool starts a small pool, skipping when the host cannot sandbox.
func testPool(t testing.TB, workers int) *Pool {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Workers = workers
	if os.Geteuid() != 0 {
		t.Skip("the sandbox pool needs root")
	}
	if _, err := exec.LookPath(cfg.Bwrap); err != nil {
		t.Skip("bubblewrap not installed (apt-get install -y bubblewrap)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := NewPool(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func run(t *testing.T, p Runner, job *Job) *Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := p.Run(ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestPoolFunctionJob(t *testing.T) {
	p := testPool(t, 1)
	job := &Job{
		Mode:       ModeFunction,
		Code:       "def add(a, b):\n    return a + b\n",
		EntryPoint: "add",
		Tests: []Test{
			{Kind: TestValue, Args: "1, 2", Expected: "3"},
			{Kind: TestValue, Args: "1, 2", Expected: "4"},
			{Kind: TestValue, Args: "[1], [2]", Expected: "[1, 2]"},
			{Kind: TestAssert, Code: "assert candidate(2, 2) == 4"},
			{Kind: TestAssert, Code: "candidate(2, 2) == 5"},
			{Kind: TestCheck, Code: "def check(candidate):\n    assert candidate(0, 0) == 0\n"},
			{Kind: TestValue, Args: "1, 'x'", Expected: "None"},
		},
	}
	res := run(t, p, job)
	if res.SandboxError != "" || !res.Done {
		t.Fatalf("sandbox error %q done=%v stderr=%s", res.SandboxError, res.Done, res.Stderr)
	}
	want := []bool{true, false, true, true, false, true, false}
	for i, w := range want {
		if res.Tests[i].Passed != w {
			t.Errorf("test %d passed=%v want %v (%+v)", i, res.Tests[i].Passed, w, res.Tests[i])
		}
	}
	if res.Tests[1].Actual != "3" {
		t.Errorf("actual = %q", res.Tests[1].Actual)
	}
	if e := res.Tests[6].Err; e == nil || e.Type != "TypeError" || !strings.Contains(e.Traceback, "solution.py") {
		t.Errorf("error report = %+v", e)
	}
}

func TestPoolProgramJob(t *testing.T) {
	p := testPool(t, 1)
	res := run(t, p, &Job{Mode: ModeProgram, Code: "import sys\nprint(sum(map(int, sys.stdin.read().split())))\n", Stdin: []byte("1 2 3\n")})
	if res.SandboxError != "" || !res.Done || string(res.Stdout) != "6\n" {
		t.Fatalf("%+v stdout=%q stderr=%q", res, res.Stdout, res.Stderr)
	}
}

// TestPoolLargePayloads: a program, its stdin and its tests larger than a
// pipe holds are fed while the job runs (beyond smallWrite murphy writes
// from a goroutine; tests beyond inlineTests travel on a pipe, not in the
// judge's request), a report larger than one message arrives in several,
// and a second job on the same slot is unaffected.
func TestPoolLargePayloads(t *testing.T) {
	p := testPool(t, 1)
	pad := "# " + strings.Repeat("x", 100<<10) + "\n"
	stdin := []byte(strings.Repeat("1\n", 100<<10))
	res := run(t, p, &Job{Mode: ModeProgram, Code: pad + "import sys\nprint(sum(map(int, sys.stdin.read().split())))\n", Stdin: stdin})
	if res.SandboxError != "" || string(res.Stdout) != "102400\n" {
		t.Fatalf("%+v stdout=%q stderr=%q", res, res.Stdout, res.Stderr)
	}
	var tests []Test
	for i := range 2000 {
		tests = append(tests, Test{Kind: TestValue, Args: strconv.Itoa(i), Expected: strconv.Itoa(i + 1)})
	}
	for _, setup := range []string{"", strings.Repeat(pad, 2)} {
		job := &Job{Mode: ModeFunction, Code: pad + "def f(x):\n    return x + 1\n", EntryPoint: "f", Setup: setup, Tests: tests}
		payload, err := makeTests(job, 0)
		if err != nil {
			t.Fatal(err)
		}
		if inline := len(payload) <= inlineTests; inline != (setup == "") {
			t.Fatalf("tests payload of %d bytes inline: %v", len(payload), inline)
		}
		res = run(t, p, job)
		if res.SandboxError != "" {
			t.Fatalf("%+v", res)
		}
		for i, r := range res.Tests {
			if !r.Passed {
				t.Fatalf("test %d: %+v", i, r)
			}
		}
	}
}

// TestDeadWorkerIsReplaced kills a sandbox from outside during a job: the
// job is a sandbox_error (not the candidate's fault) and the next job runs
// in a fresh sandbox.
func TestDeadWorkerIsReplaced(t *testing.T) {
	p := testPool(t, 1)
	before := p.WorkerPIDs()
	done := make(chan *Result)
	go func() {
		res, _ := p.Run(context.Background(), &Job{Mode: ModeProgram, Code: "import time\ntime.sleep(30)\n"})
		done <- res
	}()
	time.Sleep(500 * time.Millisecond)
	for _, pid := range before {
		if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	var res *Result
	select {
	case res = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the job did not end after its sandbox died")
	}
	if res.SandboxError == "" || res.SandboxErrorKind != topics.SandboxErrorWorker {
		t.Fatalf("want a sandbox error of kind worker, got %+v", res)
	}
	after := run(t, p, &Job{Mode: ModeProgram, Code: "print('ok')\n"})
	if after.SandboxError != "" || string(after.Stdout) != "ok\n" {
		t.Fatalf("replacement sandbox failed: %+v", after)
	}
	if st := p.Stats(); st.Restarts != 1 || slices.Equal(before, p.WorkerPIDs()) {
		t.Fatalf("stats %+v, workers %v -> %v", st, before, p.WorkerPIDs())
	}
	if left := uidProcesses(p.UIDs()[0]); len(left) != 0 {
		t.Fatalf("processes left: %v", left)
	}
}

// TestJobIdentity checks the isolation a job sees: non-root uid, no
// capabilities, rlimits, clean environment, no network, fixed seeds.
func TestJobIdentity(t *testing.T) {
	t.Setenv("MURPHY_SANDBOX_SECRET", "leak")
	p := testPool(t, 1)
	code := `
import os, resource, random, socket, json
caps = ",".join(l.split()[1] for l in open("/proc/self/status") if l.startswith(("CapInh", "CapPrm", "CapEff", "CapAmb")))
try:
    socket.create_connection(("127.0.0.1", 22), timeout=1); net = "open"
except OSError as e:
    net = type(e).__name__
print(json.dumps({"uid": os.getuid(), "gid": os.getgid(), "caps": caps, "env": sorted(os.environ),
    "nproc": resource.getrlimit(resource.RLIMIT_NPROC)[0], "fsize": resource.getrlimit(resource.RLIMIT_FSIZE)[0],
    "rand": random.random(), "hash": hash("murphy"), "net": net, "cwd": os.getcwd(),
    "ifaces": sorted(n for _, n in socket.if_nameindex())}))
`
	a := run(t, p, &Job{Mode: ModeProgram, Code: code})
	b := run(t, p, &Job{Mode: ModeProgram, Code: code})
	if a.SandboxError != "" || string(a.Stdout) != string(b.Stdout) {
		t.Fatalf("runs differ or failed:\n%s\n%s\n%s", a.Stdout, b.Stdout, a.Stderr)
	}
	out := string(a.Stdout)
	for _, want := range []string{`"uid": ` + strconv.Itoa(p.UIDs()[0]), `"caps": "0000000000000000,0000000000000000,0000000000000000,0000000000000000"`, `"nproc": 32`,
		`"fsize": 16777216`, `"net": "ConnectionRefusedError"`, `"cwd": "/tmp/job"`, `"ifaces": ["lo"]`,
		`"env": ["HOME", "LANG", "PATH", "PYTHONHASHSEED", "TMPDIR"]`} {
		if !strings.Contains(out, want) {
			t.Errorf("job identity lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, "leak") {
		t.Error("the host environment leaked")
	}
}

// TestCloseWithRunningJob closes the pool during a job: the job ends, the
// pool refuses new jobs and no process is left.
func TestCloseWithRunningJob(t *testing.T) {
	p := testPool(t, 1)
	uid := p.UIDs()[0]
	done := make(chan error, 1)
	go func() {
		_, err := p.Run(context.Background(), &Job{Mode: ModeProgram, Code: "import time\ntime.sleep(2)\n"})
		done <- err
	}()
	time.Sleep(300 * time.Millisecond)
	p.Close()
	if err := <-done; err != nil {
		t.Fatalf("the running job failed: %v", err)
	}
	if _, err := p.Run(context.Background(), &Job{Mode: ModeProgram, Code: "print(1)"}); err != ErrClosed {
		t.Fatalf("err = %v, want ErrClosed", err)
	}
	if left := uidProcesses(uid); len(left) != 0 {
		t.Fatalf("processes left: %v", left)
	}
	if pids := p.WorkerPIDs(); len(pids) != 0 {
		for _, pid := range pids {
			if syscall.Kill(pid, 0) == nil {
				t.Fatalf("sandbox %d still alive", pid)
			}
		}
	}
}

// TestJudgeOverrunIsTheProgramsTimeout: a program that claims to return a
// set of colliding keys (it bypasses its own encoder, so only the judge
// pays for building the set) gets a timeout, not a sandbox error, and the
// slot's next job is judged by a fresh judge.
func TestJudgeOverrunIsTheProgramsTimeout(t *testing.T) {
	p := testPool(t, 1)
	code := `
import __main__
M = (1 << 61) - 1
__main__.Encoder.enc = lambda self, v, *a: {"s": [{"i": format(k * M, "x")} for k in range(1, 200001)]}
def f(x):
    return x
`
	start := time.Now()
	res := run(t, p, &Job{Mode: ModeFunction, Code: code, EntryPoint: "f",
		Tests:  []Test{{Kind: TestValue, Args: "1", Expected: "1"}},
		Limits: Limits{CPU: time.Second, Wall: 3 * time.Second}})
	if res.SandboxError != "" || !res.TimedOut || res.Tests[0].Passed {
		t.Fatalf("want a timeout: %+v", res)
	}
	if el := time.Since(start); el > 8*time.Second {
		t.Errorf("the job took %v", el)
	}
	next := run(t, p, &Job{Mode: ModeFunction, Code: "def f(x):\n    return x\n", EntryPoint: "f",
		Tests: []Test{{Kind: TestValue, Args: "1", Expected: "1"}}})
	if next.SandboxError != "" || !next.Tests[0].Passed {
		t.Fatalf("next job: %+v", next)
	}
	if st := p.Stats(); st.Restarts != 1 {
		t.Errorf("restarts %d, want 1 (a new judge)", st.Restarts)
	}
}

// TestLockedTreeIsWiped: a job that leaves a directory tree it made
// unreadable does not cost the slot a restart, and the next job finds an
// empty directory.
func TestLockedTreeIsWiped(t *testing.T) {
	p := testPool(t, 1)
	code := `
import os
os.makedirs("d/a/b")
open("d/a/b/f", "w").write("x")
for q in ("d/a/b", "d/a", "d"):
    os.chmod(q, 0)
os.chmod(".", 0o500)
`
	if res := run(t, p, &Job{Mode: ModeProgram, Code: code}); res.SandboxError != "" || !res.Done {
		t.Fatalf("%+v %s", res, res.Stderr)
	}
	res := run(t, p, &Job{Mode: ModeProgram, Code: "import os\nprint(os.listdir('.'))\n"})
	if string(res.Stdout) != "[]\n" {
		t.Fatalf("next job sees %q", res.Stdout)
	}
	if st := p.Stats(); st.Restarts != 0 {
		t.Errorf("%d restarts", st.Restarts)
	}
}

// TestArgumentsCallingTheProgram: a value test whose arguments call the
// program gets that call's failure as its result, never a sandbox error;
// a function the program defined besides the entry point is not callable
// from tests.
func TestArgumentsCallingTheProgram(t *testing.T) {
	p := testPool(t, 1)
	code := "def f(x):\n    if x == 'boom':\n        raise ValueError('no')\n    return x\ndef g():\n    return 1\n"
	res := run(t, p, &Job{Mode: ModeFunction, Code: code, EntryPoint: "f", Tests: []Test{
		{Kind: TestValue, Args: "f('boom')", Expected: "1"},
		{Kind: TestValue, Args: "1", Expected: "1"},
		{Kind: TestAssert, Code: "g() == 1"},
	}})
	if res.Tests[2].Passed || res.Tests[2].Err == nil || res.Tests[2].Err.Kind != "task" || !strings.Contains(res.Tests[2].Err.Traceback, "program's") {
		t.Errorf("a program-defined helper was callable: %+v", res.Tests[2])
	}
	if res.SandboxError != "" || res.Tests[0].Passed || res.Tests[0].Err == nil || res.Tests[0].Err.Type != "ValueError" || !res.Tests[1].Passed {
		t.Fatalf("%+v", res)
	}
}

// TestWallLimitDiscountsWaitingForCPU: on a loaded host a busy program
// keeps the CPU limit's verdict. A job that needs 0.6 s of CPU runs next to
// three busy loops on its slot's CPU (its cgroup gets about half of it)
// with a 0.8 s wall limit: the time it waited for the CPU does not count,
// so it passes; a job that sleeps still meets the wall limit, even while a
// child it forked waits for the CPU.
func TestWallLimitDiscountsWaitingForCPU(t *testing.T) {
	p := testPool(t, 1)
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		t.Fatal(err)
	}
	cpu := 0
	for !all.IsSet(cpu) {
		cpu++
	}
	for range 3 {
		hog := exec.Command("taskset", "-c", strconv.Itoa(cpu), "sh", "-c", "while :; do :; done")
		if err := hog.Start(); err != nil {
			t.Skipf("taskset: %v", err)
		}
		t.Cleanup(func() { _ = hog.Process.Kill(); _ = hog.Wait() })
	}
	busy := "import time\ndef f(x):\n    t = time.process_time()\n    while time.process_time() - t < 0.6:\n        pass\n    return x\n"
	res := run(t, p, &Job{Mode: ModeFunction, Code: busy, EntryPoint: "f",
		Tests:  []Test{{Kind: TestValue, Args: "1", Expected: "1"}},
		Limits: Limits{CPU: 3 * time.Second, Wall: 800 * time.Millisecond}})
	if res.SandboxError != "" || res.TimedOut || !res.Tests[0].Passed {
		t.Fatalf("busy job on a loaded CPU: timed out %v after %v wall, %v CPU (%+v)", res.TimedOut, res.Wall, res.CPU, res.Tests)
	}
	t.Logf("busy job: %v wall, %v CPU", res.Wall, res.CPU)
	sleepy := "import time\ndef f(x):\n    time.sleep(5)\n    return x\n"
	res = run(t, p, &Job{Mode: ModeFunction, Code: sleepy, EntryPoint: "f",
		Tests:  []Test{{Kind: TestValue, Args: "1", Expected: "1"}},
		Limits: Limits{CPU: 3 * time.Second, Wall: 800 * time.Millisecond}})
	if !res.TimedOut || res.Tests[0].Passed || res.Wall > 4*time.Second {
		t.Fatalf("sleeping job: timed out %v after %v (%+v)", res.TimedOut, res.Wall, res.Tests)
	}
	// Only the main process's waiting counts: a child that burns CPU (and
	// waits for it) does not stretch the wall limit of a main that sleeps.
	daemon := "import os, time\ndef f(x):\n    if os.fork() == 0:\n        while True:\n            pass\n    time.sleep(5)\n    return x\n"
	res = run(t, p, &Job{Mode: ModeFunction, Code: daemon, EntryPoint: "f",
		Tests:  []Test{{Kind: TestValue, Args: "1", Expected: "1"}},
		Limits: Limits{CPU: 30 * time.Second, Wall: 800 * time.Millisecond}})
	if !res.TimedOut || res.Tests[0].Passed || res.Wall > 2*time.Second {
		t.Fatalf("sleeping job with a busy child: timed out %v after %v (%+v)", res.TimedOut, res.Wall, res.Tests)
	}
}

// TestMemoryErrorEndsTheRun: a test that runs the program out of memory is
// reported as that test's MemoryError every time and ends the run, as the
// memory limit kills a process: whether later tests would still fit in the
// CPU limit must not depend on how fast the machine allocates.
func TestMemoryErrorEndsTheRun(t *testing.T) {
	p := testPool(t, 1)
	code := "def f(x):\n    parts = []\n    while x:\n        parts.extend(str(i) for i in range(1000))\n    return len(parts)\n"
	for i := range 3 {
		res := run(t, p, &Job{Mode: ModeFunction, Code: code, EntryPoint: "f",
			Tests:  []Test{{Kind: TestValue, Args: "1", Expected: "0"}, {Kind: TestValue, Args: "0", Expected: "0"}},
			Limits: Limits{CPU: 20 * time.Second, Wall: 40 * time.Second, MemoryMB: 256}})
		if res.SandboxError != "" || res.TimedOut {
			t.Fatalf("run %d: %+v", i, res)
		}
		if e := res.Tests[0].Err; e == nil || e.Type != "MemoryError" || e.Kind != "memory" || res.Tests[1].Reported {
			t.Fatalf("run %d: first test %+v, second %+v; result %+v", i, res.Tests[0], res.Tests[1], res)
		}
		if res.Limits.MemoryMB != 256 || res.Limits.CPU != 20*time.Second {
			t.Fatalf("run %d: reported limits %+v", i, res.Limits)
		}
	}
	next := run(t, p, &Job{Mode: ModeFunction, Code: code, EntryPoint: "f", Tests: []Test{{Kind: TestValue, Args: "0", Expected: "0"}}})
	if !next.Tests[0].Passed {
		t.Fatalf("the next job: %+v", next)
	}
}

// TestJudgeNamespace: literal tests are judged from values the judge
// remembers per task text, the others in the task's namespace, built only
// when a test needs it: a failing setup still fails every test, helpers and
// the seed are there for the tests that use them, and a remembered value
// judges each program on its own answer.
func TestJudgeNamespace(t *testing.T) {
	p := testPool(t, 1)
	helpers := "def double(x):\n    return 2 * x\n\ndef f(x):\n    \"\"\"the prompt\"\"\"\n"
	tests := []Test{
		{Kind: TestValue, Args: "3", Expected: "[3, 3]"},
		{Kind: TestValue, Args: "double(2)", Expected: "[4, 4]"},
		{Kind: TestValue, Args: "5", Expected: "[double(5) // 2] * 2"},
		{Kind: TestAssert, Code: "candidate(1) == [1, 1]"},
		{Kind: TestCheck, Code: "import random\ndef check(c):\n    x = random.randrange(10**6)\n    assert c(x) == [x, x], x\n"},
	}
	good := "def f(x):\n    return [x, x]\n"
	for round := range 2 {
		res := run(t, p, &Job{Mode: ModeFunction, Code: good, EntryPoint: "f", Helpers: helpers, Tests: tests})
		for i, r := range res.Tests {
			if !r.Passed {
				t.Fatalf("round %d, test %d: %+v", round, i, r)
			}
		}
		// The same texts, a program answering tuples: every comparison
		// fails (a remembered list is not this program's tuple).
		res = run(t, p, &Job{Mode: ModeFunction, Code: "def f(x):\n    return (x, x)\n", EntryPoint: "f", Helpers: helpers, Tests: tests})
		for i, r := range res.Tests {
			if r.Passed || r.Err != nil && r.Err.Kind == "task" {
				t.Fatalf("round %d, test %d passed or failed as the task's: %+v", round, i, r)
			}
		}
	}
	// A setup that fails in the judge only (its directory is /, the
	// program's /tmp/job): every test is the task's failure.
	setup := "import os\nif os.getcwd() == '/':\n    raise ValueError('broken task')\n"
	res := run(t, p, &Job{Mode: ModeFunction, Code: good, EntryPoint: "f", Helpers: helpers, Setup: setup, Tests: tests})
	for i, r := range res.Tests {
		if r.Passed || r.Err == nil || r.Err.Kind != "task" || !strings.Contains(r.Err.Traceback, "broken task") {
			t.Fatalf("test %d with a failing setup: %+v", i, r)
		}
	}
}
