package execute

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/topics"
)

// The adversarial suite: hostile programs, each with the verdict it must
// get. Afterwards the host and the pool must be unharmed and no process of
// the suite may survive.

const secret = "murphy-adversarial-secret-7f3a"

// fnTask is "return x + 1" with two visible tests and one hidden.
func fnTask(timeoutMS int) topics.Task {
	return topics.Task{
		SchemaVersion: topics.SchemaVersion, TaskID: "adv/f", Kind: topics.KindPythonFunction,
		Prompt: "def f(x):\n", EntryPoint: "f", TimeoutMS: timeoutMS, MemoryMB: 256,
		Tests: []topics.TestCase{
			{Name: "one", Args: "1", Expected: "2"},
			{Name: "two", Args: "2", Expected: "3"},
			{Name: "hidden", Args: "41", Expected: "42", Hidden: true},
		},
	}
}

// stdioTask sums the integers on stdin.
func stdioTask() topics.Task {
	return topics.Task{
		SchemaVersion: topics.SchemaVersion, TaskID: "adv/sum", Kind: topics.KindStdio,
		Prompt: "Print the sum of the integers on stdin.", TimeoutMS: 8000, MemoryMB: 256,
		Tests: []topics.TestCase{
			{Name: "small", Stdin: "1 2\n", Expected: "3\n"},
			{Name: "big", Stdin: "40 2\n", Expected: "42\n", Hidden: true},
		},
	}
}

// forkAllocate needs the slot's memory cgroup: without it the processes
// would take 4 GB of the host's memory, each within its own RLIMIT_AS.
const forkAllocate = "fork and allocate in every child"

type hostile struct {
	name   string
	task   topics.Task
	code   string
	status string
	// maxSeconds bounds the evaluation time when set (job end is the main
	// process's exit, not EOF on a pipe that a daemon holds).
	maxSeconds float64
}

// hostilePrograms is the adversarial suite's programs,
// testdata/adversarial.
func hostilePrograms(t testing.TB) []hostile {
	return loadHostile(t, "testdata/adversarial")
}

// uidProcesses scans /proc for processes whose real uid is one of uids.
func uidProcesses(uids []int) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		f, err := os.Open("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "Uid:") {
				fs := strings.Fields(line)
				if uid, _ := strconv.Atoi(fs[1]); slices.Contains(uids, uid) {
					out = append(out, e.Name())
				}
			}
		}
		f.Close()
	}
	return out
}

func TestAdversarialSuite(t *testing.T) {
	t.Setenv("MURPHY_TEST_SECRET", secret)
	pool := testPool(t, 2)
	workersBefore := pool.WorkerPIDs()
	ev := &Evaluator{Runner: pool}
	progs := hostilePrograms(t)
	if len(progs) < 25 {
		t.Fatalf("only %d hostile programs", len(progs))
	}
	t.Run("programs", func(t *testing.T) {
		for _, h := range progs {
			t.Run(h.name, func(t *testing.T) {
				if h.name == forkAllocate && !pool.Stats().Cgroup {
					t.Skip("no memory cgroup on this host")
				}
				t.Parallel()
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
				defer cancel()
				task := h.task
				start := time.Now()
				o, err := ev.Evaluate(ctx, &task, h.code)
				if err != nil {
					t.Fatal(err)
				}
				if o.Status != h.status {
					t.Errorf("status %s, want %s\n%s", o.Status, h.status, o.Feedback)
				}
				if h.maxSeconds > 0 && time.Since(start).Seconds() > h.maxSeconds {
					t.Errorf("took %s: the job did not end with its main process", time.Since(start))
				}
				if strings.Contains(o.Feedback, secret) || strings.Contains(o.Feedback, "41") {
					t.Errorf("feedback leaks a secret or a hidden test:\n%s", o.Feedback)
				}
				for _, r := range o.Results {
					if strings.Contains(r.Actual, secret) || strings.Contains(r.Error, secret) {
						t.Errorf("results leak the secret: %+v", r)
					}
				}
			})
		}
	})
	// The daemon of "setsid daemon writing a file later" would write now.
	time.Sleep(2 * time.Second)
	if ps := uidProcesses(pool.UIDs()); len(ps) > 0 {
		t.Errorf("processes of the suite survived: %v", ps)
	}
	for _, p := range []string{"/usr/lib/murphy-pwned", "/tmp/murphy-pwned"} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was written on the host", p)
			os.Remove(p)
		}
	}
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Errorf("host python3 is gone: %v", err)
	}
	if st := pool.Stats(); st.Restarts != 0 {
		t.Errorf("%d sandboxes had to be replaced", st.Restarts)
	}
	if !slices.Equal(workersBefore, pool.WorkerPIDs()) {
		t.Errorf("workers changed: %v -> %v", workersBefore, pool.WorkerPIDs())
	}
	// Both sandboxes still work, and nothing of the daemon is left in tmp.
	probe := fnTask(8000)
	code := "import os\ndef f(x):\n    return x + 1 if not os.listdir('/tmp/job') and not os.path.exists('/tmp/job/late.txt') else -1\n"
	for i := 0; i < 2*pool.Size(); i++ {
		o, err := ev.Evaluate(context.Background(), &probe, code)
		if err != nil || o.Status != topics.StatusPassed {
			t.Fatalf("pool unusable after the suite: %v %s\n%s", err, o.Status, o.Feedback)
		}
	}
}

// TestFeedbackTemplates checks the feedback of the common outcomes and that
// hidden tests never show in it.
func TestFeedbackTemplates(t *testing.T) {
	pool := testPool(t, 1)
	ev := &Evaluator{Runner: pool, FeedbackBytes: 600}
	task := fnTask(8000)
	cases := []struct {
		name string
		task topics.Task
		code string
		want []string
		not  []string
	}{
		{"wrong answer shows the first visible case", task, "def f(x):\n    return x + 2 if x == 2 else x + 1\n",
			[]string{"Status: wrong_answer", "Tests passed: 2/3", "First failing visible test (two):", "Input: f(2)", "Expected: 3", "Actual: 4"}, []string{"41", "42"}},
		{"hidden failure is only counted", task, "def f(x):\n    return x + 1 if x < 10 else 0\n",
			[]string{"Status: wrong_answer", "Tests passed: 2/3", "All visible tests pass; 1 hidden test(s) fail."}, []string{"41", "42", "Actual"}},
		{"traceback with candidate line numbers", task, "def f(x):\n    y = [1]\n    return y[x]\n",
			[]string{"Status: runtime_error", "First failing visible test (one):", "Error:", `solution.py", line 3, in f`, "IndexError"}, nil},
		{"compile error", task, "def f(x):\n  return (\n", []string{"Status: compile_error", "does not compile", "SyntaxError"}, nil},
		{"timeout", fnTask(2000), "def f(x):\n    while True: pass\n", []string{"Status: timeout", "time limit of 2s"}, nil},
		{"passed", task, "def f(x):\n    return x + 1\n", []string{"Status: passed", "Tests passed: 3/3"}, []string{"First failing"}},
		{"huge actual value is truncated", task, "def f(x):\n    return 'z' * 100000\n", []string{"bytes omitted", "Status: wrong_answer"}, nil},
		{"stdio shows input and outputs", stdioTask(), "print(7)\n", []string{"Input:\n1 2", "Expected output:\n3", "Actual output:\n7"}, []string{"40 2"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, err := ev.Evaluate(context.Background(), &tc.task, tc.code)
			if err != nil {
				t.Fatal(err)
			}
			if len(o.Feedback) > 600 {
				t.Errorf("feedback is %d bytes, cap 600", len(o.Feedback))
			}
			for _, w := range tc.want {
				if !strings.Contains(o.Feedback, w) {
					t.Errorf("feedback lacks %q:\n%s", w, o.Feedback)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(o.Feedback, n) {
					t.Errorf("feedback contains %q:\n%s", n, o.Feedback)
				}
			}
		})
	}
}

// TestTruncate checks head+tail truncation within the cap.
func TestTruncate(t *testing.T) {
	for _, n := range []int{10, 50, 100, 2048} {
		s := strings.Repeat("é", 3000) + "END"
		got := topics.Truncate(s, n)
		if len(got) > n {
			t.Errorf("cap %d: got %d bytes", n, len(got))
		}
		if n >= 100 && (!strings.HasSuffix(got, "END") || !strings.Contains(got, "omitted")) {
			t.Errorf("cap %d: tail or marker lost: %q", n, got)
		}
		if !bytes.Equal([]byte(got), []byte(strings.ToValidUTF8(got, "?"))) {
			t.Errorf("cap %d: invalid UTF-8", n)
		}
	}
	if topics.Truncate("short", 10) != "short" {
		t.Error("short strings must be kept")
	}
}
