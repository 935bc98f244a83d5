package execute

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/topics"
)

// loadHostile reads the hostile programs of a testdata directory, in file
// name order. Each file is a program after a header of "#: key: value"
// lines, which the program never sees:
//
//	name         the case's name ("[class] what" or "control: what")
//	status       the verdict it must get
//	also         other verdicts accepted (comma-separated)
//	cpu_ms       the CPU time its job may use, "lo,hi" in milliseconds
//	max_seconds  the most its evaluation may take
//	task         the task, as topics.Task JSON
//
// The statuses accepted besides the expected one and the CPU bounds go
// to hostileAlso and hostileCPU.
func loadHostile(t testing.TB, dir string) []hostile {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.py"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no hostile programs in %s: %v", dir, err)
	}
	slices.Sort(files)
	var out []hostile
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var h hostile
		var code strings.Builder
		for _, line := range strings.SplitAfter(string(b), "\n") {
			rest, ok := strings.CutPrefix(line, "#: ")
			if !ok {
				code.WriteString(line)
				continue
			}
			key, val, _ := strings.Cut(strings.TrimRight(rest, "\n"), ": ")
			switch key {
			case "name":
				h.name = val
			case "status":
				h.status = val
			case "also":
				hostileAlso[h.name] = append(hostileAlso[h.name], strings.Split(val, ",")...)
			case "cpu_ms":
				lo, hi, _ := strings.Cut(val, ",")
				l, err1 := strconv.Atoi(lo)
				u, err2 := strconv.Atoi(hi)
				if err1 != nil || err2 != nil {
					t.Fatalf("%s: cpu_ms %q", f, val)
				}
				hostileCPU[h.name] = [2]time.Duration{time.Duration(l) * time.Millisecond, time.Duration(u) * time.Millisecond}
			case "max_seconds":
				if h.maxSeconds, err = strconv.ParseFloat(val, 64); err != nil {
					t.Fatalf("%s: max_seconds %q", f, val)
				}
			case "task":
				if err := json.Unmarshal([]byte(val), &h.task); err != nil {
					t.Fatalf("%s: task: %v", f, err)
				}
			default:
				t.Fatalf("%s: unknown header %q", f, key)
			}
		}
		h.code = code.String()
		if h.name == "" || h.status == "" || h.task.TaskID == "" {
			t.Fatalf("%s: name, status and task are required", f)
		}
		if !slices.Contains([]string{topics.StatusPassed, topics.StatusWrongAnswer, topics.StatusRuntimeError, topics.StatusTimeout,
			topics.StatusMemory, topics.StatusCompileError, topics.StatusSandboxError, topics.StatusOutputLimit}, h.status) {
			t.Fatalf("%s: unknown status %q", f, h.status)
		}
		out = append(out, h)
	}
	return out
}
