package execute

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/topics"
)

// The hostile suite: programs that attack the verdict (forged reports,
// introspection of the harness, test data in the process, lying values),
// the slot (cross-job channels, leaked memory, CPU outside the main
// process) and the kernel, each with the verdict it must get, interleaved
// with correct control programs that must pass. Programs are named
// "[class] what"; controls are named "control: what". No program contains
// the hidden test's values, so a feedback that shows them leaked them.

const (
	hiddenArg = "987654"
	hiddenExp = "987655"
	// hostileProbe checks the slot right after a hostile job: no process of
	// its uid left, no file named by the programs, memory available.
	hostileProbe = "control: probe of the slot after a hostile job"
	// hostileMemoryControl runs after the memory-leaking programs.
	hostileMemoryControl = "control: 300 MB after the memory leaks"
)

// hostileAlso lists the statuses that are accepted besides the expected
// one: a cheat that breaks the candidate's own side of the harness may end
// as a runtime error, but it must never pass.
var hostileAlso = map[string][]string{}

// hostileCPU bounds the CPU time a program's job may use: the limit is the
// whole job's CPU to the millisecond, not rounded up to whole seconds (the
// wall time it takes depends on the machine's load; the CPU time does not).
// (Both are filled from the testdata files' headers.)
var hostileCPU = map[string][2]time.Duration{}

func isControl(h hostile) bool { return strings.HasPrefix(h.name, "control:") }

// hostilePrograms2 is the hostile suite's programs, testdata/hostile.
func hostilePrograms2(t testing.TB) []hostile {
	hostileAlso, hostileCPU = map[string][]string{}, map[string][2]time.Duration{}
	return loadHostile(t, "testdata/hostile")
}

// hostArtifacts lists host files named like the programs' files.
func hostArtifacts() []string {
	var out []string
	for _, d := range []string{"/dev/shm", "/tmp", "/var/tmp"} {
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			if strings.Contains(e.Name(), "murphy-h2") {
				out = append(out, filepath.Join(d, e.Name()))
			}
		}
	}
	return out
}

// hostileFailure is one wrong verdict, for the summary.
type hostileFailure struct {
	pass, name, got, want string
}

func TestHostileSuite(t *testing.T) {
	all := hostilePrograms2(t)
	var hostiles, controls, rotation []hostile
	var memControl, probe hostile
	for _, h := range all {
		if strings.Contains(h.code, hiddenArg[:5]) {
			t.Fatalf("%s: a program must not contain the hidden values", h.name)
		}
		switch {
		case !isControl(h):
			hostiles = append(hostiles, h)
		case h.name == hostileMemoryControl:
			memControl = h
			controls = append(controls, h)
		default:
			if h.name == hostileProbe {
				probe = h
			}
			controls = append(controls, h)
			rotation = append(rotation, h)
		}
	}
	if len(hostiles) < 65 || len(controls) < 15 || probe.name == "" || memControl.name == "" {
		t.Fatalf("%d hostile programs and %d controls", len(hostiles), len(controls))
	}
	for _, h := range controls {
		if h.status != topics.StatusPassed {
			t.Fatalf("control %q must pass", h.name)
		}
	}
	before := hostArtifacts()
	for _, p := range before {
		t.Logf("left over from an earlier run, removed: %s", p)
		os.RemoveAll(p)
	}

	var failures []hostileFailure
	n := 0
	var restarts func() int64
	run := func(t *testing.T, ev *Evaluator, pass string, h hostile) {
		n++
		before := restarts()
		defer func() {
			if r := restarts(); r != before {
				t.Logf("%s/%03d %s: the sandbox was replaced after this job (%d restarts so far)", pass, n, h.name, r)
			}
		}()
		t.Run(fmt.Sprintf("%s/%03d %s", pass, n, h.name), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			task := h.task
			start := time.Now()
			o, err := ev.Evaluate(ctx, &task, h.code)
			took := time.Since(start)
			if err != nil {
				failures = append(failures, hostileFailure{pass, h.name, "error: " + err.Error(), h.status})
				t.Fatal(err)
			}
			t.Logf("%s in %s (%d/%d tests passed)", o.Status, took.Round(time.Millisecond), o.TestsPassed, o.TestsTotal)
			if o.Status != h.status && !slices.Contains(hostileAlso[h.name], o.Status) {
				failures = append(failures, hostileFailure{pass, h.name, o.Status, h.status})
				t.Errorf("status %s, want %s (%s)\n%s", o.Status, h.status, took.Round(time.Millisecond), o.Feedback)
			}
			if h.maxSeconds > 0 && took.Seconds() > h.maxSeconds {
				failures = append(failures, hostileFailure{pass, h.name, fmt.Sprintf("took %s", took.Round(time.Millisecond)), fmt.Sprintf("at most %gs", h.maxSeconds)})
				t.Errorf("took %s, at most %gs allowed (outcome duration %s)", took, h.maxSeconds, o.Duration)
			}
			if b, ok := hostileCPU[h.name]; ok && (o.MaxRunCPU < b[0] || o.MaxRunCPU > b[1]) {
				failures = append(failures, hostileFailure{pass, h.name, fmt.Sprintf("used %s of CPU", o.MaxRunCPU), fmt.Sprintf("%s..%s", b[0], b[1])})
				t.Errorf("the job used %s of CPU, want %s..%s", o.MaxRunCPU, b[0], b[1])
			}
			leaked := func(s string) bool { return strings.Contains(s, hiddenArg) || strings.Contains(s, hiddenExp) }
			leak := leaked(o.Feedback)
			for _, r := range o.Results {
				leak = leak || leaked(r.Actual) || leaked(r.Error)
			}
			if leak {
				failures = append(failures, hostileFailure{pass, h.name, "hidden test leaked", "no leak"})
				t.Errorf("the feedback or the results show the hidden test:\n%s\n%+v", o.Feedback, o.Results)
			}
		})
	}
	settle := func(t *testing.T, label string, uids []int) {
		// A daemon that outlived its job would act now.
		time.Sleep(2 * time.Second)
		if ps := uidProcesses(uids); len(ps) > 0 {
			failures = append(failures, hostileFailure{label, "processes survived", fmt.Sprint(ps), "none"})
			t.Errorf("%s: processes of the pool's uids survived: %v", label, ps)
		}
	}

	// Pass 1: two sandboxes, one job at a time, a control after every three
	// hostile programs. The pool hands out its idle sandboxes in turn, so
	// consecutive jobs alternate between them: the second pass guarantees
	// that each hostile job's successor in its sandbox is a control.
	pool := testPool(t, 2)
	ev := &Evaluator{Runner: pool}
	restarts = func() int64 { return pool.Stats().Restarts }
	uids := pool.UIDs()
	k := 0
	for i, h := range hostiles {
		run(t, ev, "pass1", h)
		if (i+1)%3 == 0 {
			run(t, ev, "pass1", rotation[k%len(rotation)])
			k++
		}
	}
	run(t, ev, "pass1", memControl)
	for _, c := range controls {
		run(t, ev, "pass1", c)
	}
	settle(t, "pass1", uids)
	st := pool.Stats()
	t.Logf("pass 1: %d jobs, %d sandbox restarts, memory cgroup %v", st.Jobs, st.Restarts, st.Cgroup)
	pool.Close()

	// Pass 2: one sandbox, so the job after each hostile one runs in the
	// same sandbox: the probe, and every fourth time another control too.
	pool = testPool(t, 1)
	ev = &Evaluator{Runner: pool}
	uids = pool.UIDs()
	k = 0
	for i, h := range hostiles {
		run(t, ev, "pass2", h)
		run(t, ev, "pass2", probe)
		if (i+1)%4 == 0 {
			run(t, ev, "pass2", rotation[k%len(rotation)])
			k++
		}
	}
	run(t, ev, "pass2", memControl)
	for _, c := range controls {
		run(t, ev, "pass2", c)
	}
	settle(t, "pass2", uids)
	st = pool.Stats()
	t.Logf("pass 2: %d jobs, %d sandbox restarts, memory cgroup %v", st.Jobs, st.Restarts, st.Cgroup)

	for _, p := range hostArtifacts() {
		failures = append(failures, hostileFailure{"host", p, "written on the host", "nothing"})
		t.Errorf("%s was written on the host", p)
		os.RemoveAll(p)
	}
	for _, p := range []string{"/usr/bin/python3", "/usr/bin/bwrap"} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("host %s is gone: %v", p, err)
		}
	}
	if len(failures) > 0 {
		var b strings.Builder
		for _, f := range failures {
			fmt.Fprintf(&b, "  %s  %-75s got %s, want %s\n", f.pass, f.name, f.got, f.want)
		}
		t.Logf("%d wrong verdicts or checks (%d hostile programs, %d controls):\n%s", len(failures), len(hostiles), len(controls), b.String())
	}
}
