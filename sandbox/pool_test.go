package sandbox

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
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
