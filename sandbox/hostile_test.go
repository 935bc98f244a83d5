package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// The sandbox's hostile suite: every file of testdata/hostile is a
// program with a header of "#: " lines (YAML: the task, its tests and
// what must happen). Hostile programs and honest controls are
// interleaved in one pool of one slot, in file-name order, so that
// whatever a hostile job leaves behind meets the next honest one.

// hostileCase is a file's header.
type hostileCase struct {
	// Class names the attack class ("names", "allocator", ...).
	Class string `yaml:"class"`
	// Expect: pass (an honest control, or a correct program the
	// sandbox must not fail) or fail (it must not pass).
	Expect string `yaml:"expect"`
	// Mode: function (default) or program.
	Mode    string `yaml:"mode"`
	Entry   string `yaml:"entry"`
	Setup   string `yaml:"setup"`
	Helpers string `yaml:"helpers"`
	// Imports is the task's reference code (its imports name the tests'
	// standard-library names).
	Imports string `yaml:"imports"`
	Tests   []struct {
		Value  []string `yaml:"value"` // args, expected
		Assert string   `yaml:"assert"`
		Check  string   `yaml:"check"`
		Hidden bool     `yaml:"hidden"`
	} `yaml:"tests"`
	Stdin    string `yaml:"stdin"`
	Stdout   string `yaml:"stdout"`
	MemoryMB int    `yaml:"memory_mb"`
	WallMS   int    `yaml:"wall_ms"`
	CPUMS    int    `yaml:"cpu_ms"`
	// Why says what the program does and why it must get its verdict.
	Why string `yaml:"why"`
	// MaxWallMS bounds the job's wall time (a stalled slot shows here).
	MaxWallMS int `yaml:"max_wall_ms"`
}

// readHostile parses one file: its header and the program (the file
// without the header lines, so that no program holds its tests).
func readHostile(path string) (hostileCase, string, error) {
	var h hostileCase
	b, err := os.ReadFile(path)
	if err != nil {
		return h, "", err
	}
	var head, code []string
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "#:"); ok {
			head = append(head, strings.TrimPrefix(rest, " "))
			continue
		}
		code = append(code, line)
	}
	if err := yaml.Unmarshal([]byte(strings.Join(head, "")), &h); err != nil {
		return h, "", err
	}
	if h.Mode == "" {
		h.Mode = ModeFunction
	}
	return h, strings.Join(code, ""), nil
}

func (h *hostileCase) job(code string) *Job {
	job := &Job{Mode: h.Mode, Code: code, EntryPoint: h.Entry, Setup: h.Setup, Helpers: h.Helpers, Imports: h.Imports, Stdin: []byte(h.Stdin)}
	for _, t := range h.Tests {
		switch {
		case len(t.Value) == 2:
			job.Tests = append(job.Tests, Test{Kind: TestValue, Args: t.Value[0], Expected: t.Value[1], Hidden: t.Hidden})
		case t.Assert != "":
			job.Tests = append(job.Tests, Test{Kind: TestAssert, Code: t.Assert, Hidden: t.Hidden})
		case t.Check != "":
			job.Tests = append(job.Tests, Test{Kind: TestCheck, Code: t.Check, Hidden: t.Hidden})
		}
	}
	job.Limits = Limits{MemoryMB: h.MemoryMB, Wall: time.Duration(h.WallMS) * time.Millisecond, CPU: time.Duration(h.CPUMS) * time.Millisecond}
	return job
}

// passed is the verdict murphy would give: every test passed and the run
// finished (function), or exit status 0 with the expected output (program).
func (h *hostileCase) passed(res *Result) bool {
	if res.SandboxError != "" || res.TimedOut || res.MemoryKilled || res.OutputLimited {
		return false
	}
	if h.Mode == ModeProgram {
		return res.Exited && res.ExitCode == 0 && strings.TrimRight(string(res.Stdout), " \n") == strings.TrimRight(h.Stdout, " \n")
	}
	if !res.Done || len(res.Tests) == 0 {
		return false
	}
	for _, t := range res.Tests {
		if !t.Passed {
			return false
		}
	}
	return true
}

func TestHostileTestdata(t *testing.T) {
	files, err := filepath.Glob("testdata/hostile/*.py")
	if err != nil || len(files) == 0 {
		t.Fatalf("no hostile testdata: %v", err)
	}
	slices.Sort(files)
	classes := map[string][2]int{}
	p := testPool(t, 1)
	for _, f := range files {
		h, code, err := readHostile(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		name := filepath.Base(f)
		if h.Expect != "pass" && h.Expect != "fail" || h.Class == "" {
			t.Fatalf("%s: class %q, expect %q", name, h.Class, h.Expect)
		}
		res := run(t, p, h.job(code))
		got := h.passed(res)
		c := classes[h.Class]
		if h.Expect == "pass" {
			c[1]++
		} else {
			c[0]++
		}
		classes[h.Class] = c
		switch {
		case res.SandboxError != "":
			t.Errorf("%s: sandbox error %q (%s)", name, res.SandboxError, h.Why)
		case h.Expect == "pass" && !got:
			t.Errorf("%s: an honest program failed: exit %d, stdout %q, stderr %q, tests %+v (%s)", name, res.ExitCode, tail(string(res.Stdout), 300), tail(string(res.Stderr), 600), reports(res), h.Why)
		case h.Expect == "fail" && got:
			t.Errorf("%s: a hostile program passed (%s)", name, h.Why)
		}
		if h.MaxWallMS > 0 && res.Wall > time.Duration(h.MaxWallMS)*time.Millisecond {
			t.Errorf("%s: took %v", name, res.Wall)
		}
	}
	for c, n := range classes {
		t.Logf("class %-12s %d hostile, %d honest", c, n[0], n[1])
		if n[0] == 0 || n[1] == 0 {
			t.Errorf("class %s needs both hostile programs and honest controls", c)
		}
	}
}

func reports(res *Result) []string {
	var out []string
	for _, t := range res.Tests {
		s := "passed"
		switch {
		case !t.Reported:
			s = "not reported"
		case t.Err != nil:
			s = t.Err.Kind + ": " + tail(t.Err.Traceback, 300)
		case t.NotPlain != "":
			s = "not plain: " + t.NotPlain
		case !t.Passed:
			s = "wrong: " + t.Actual
		}
		out = append(out, s)
	}
	return out
}
