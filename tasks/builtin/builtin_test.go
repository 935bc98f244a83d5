package builtin

import (
	"errors"
	"strings"
	"testing"

	"github.com/murphy-rl/murphy/topics"
)

func TestTasksDecodeAndValidate(t *testing.T) {
	tasks, err := Tasks()
	if err != nil {
		t.Fatalf("Tasks: %v", err)
	}
	if len(tasks) < 24 {
		t.Fatalf("got %d tasks, want at least 24", len(tasks))
	}
	kinds := map[string]int{}
	ids := map[string]bool{}
	for _, task := range tasks {
		t.Run(task.TaskID, func(t *testing.T) {
			if err := task.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if !strings.HasPrefix(task.TaskID, "murphy/") {
				t.Errorf("task_id %q lacks the murphy/ prefix", task.TaskID)
			}
			if task.Source != "murphy-builtin" {
				t.Errorf("source = %q, want murphy-builtin", task.Source)
			}
			if strings.TrimSpace(task.Reference) == "" {
				t.Error("no reference solution")
			}
			if !strings.HasSuffix(task.Prompt, "\n") {
				t.Error("prompt does not end with a newline")
			}
			visible, hidden := 0, 0
			for i, tc := range task.Tests {
				if tc.Hidden {
					hidden++
				} else {
					visible++
				}
				switch task.Kind {
				case topics.KindPythonFunction:
					if tc.Args == "" || tc.Expected == "" {
						t.Errorf("test %d: python-function case needs args and expected", i)
					}
				case topics.KindStdio:
					if tc.Stdin == "" {
						t.Errorf("test %d: stdio case without stdin", i)
					}
				}
				if tc.Assert != "" {
					t.Errorf("test %d: built-in tasks use args/expected or stdin/expected, not assert", i)
				}
			}
			if visible < 3 || hidden < 3 {
				t.Errorf("%d visible and %d hidden tests, want at least 3 of each", visible, hidden)
			}
			switch task.Kind {
			case topics.KindPythonFunction:
				if !strings.Contains(task.Prompt, "def "+task.EntryPoint+"(") {
					t.Errorf("prompt does not show the signature of %s", task.EntryPoint)
				}
				if !strings.Contains(task.Reference, "def "+task.EntryPoint+"(") {
					t.Errorf("reference does not define %s", task.EntryPoint)
				}
			case topics.KindStdio:
				if task.EntryPoint != "" {
					t.Errorf("stdio task has entry_point %q", task.EntryPoint)
				}
			default:
				t.Errorf("kind %q, want python-function or stdio", task.Kind)
			}
		})
		kinds[task.Kind]++
		if ids[task.TaskID] {
			t.Errorf("duplicate task_id %q", task.TaskID)
		}
		ids[task.TaskID] = true
	}
	fn, io := kinds[topics.KindPythonFunction], kinds[topics.KindStdio]
	if fn < 10 || io < 10 || fn-io > 2 || io-fn > 2 {
		t.Errorf("kinds unbalanced: %d python-function, %d stdio", fn, io)
	}
}

func TestTasksReturnsFreshCopies(t *testing.T) {
	first, err := Tasks()
	if err != nil {
		t.Fatal(err)
	}
	want := first[0].TaskID
	first[0].TaskID = "changed"
	first[0].Tests[0].Expected = "changed"
	second, err := Tasks()
	if err != nil {
		t.Fatal(err)
	}
	if second[0].TaskID != want || second[0].Tests[0].Expected == "changed" {
		t.Errorf("a caller's change leaked into the next Tasks call: %q", second[0].TaskID)
	}
}

func TestDecodeLinesRejectsBrokenInput(t *testing.T) {
	const ok = `{"schema_version":1,"task_id":"murphy/a","kind":"stdio","prompt":"p","tests":[{"stdin":"1","expected":"1"}]}`
	tests := []struct {
		name   string
		data   string
		poison bool // a *topics.Error is expected
		want   string
	}{
		{name: "malformed json", data: ok + "\n{not json\n", poison: true, want: "line 2"},
		{name: "unknown kind", data: strings.Replace(ok, `"stdio"`, `"shell"`, 1), poison: true, want: "kind"},
		{name: "other schema version", data: strings.Replace(ok, `"schema_version":1`, `"schema_version":99`, 1), poison: true, want: "schema_version"},
		{name: "no tests", data: strings.Replace(ok, `[{"stdin":"1","expected":"1"}]`, `[]`, 1), poison: true, want: "tests"},
		{name: "duplicate id", data: ok + "\n\n" + ok + "\n", want: `already defined on line 1`},
		{name: "empty", data: "\n \n", want: "no tasks"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeLines([]byte(tc.data))
			if err == nil {
				t.Fatal("no error")
			}
			var rec *topics.Error
			if got := errors.As(err, &rec); got != tc.poison {
				t.Errorf("errors.As(*topics.Error) = %v, want %v (err %v)", got, tc.poison, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
		})
	}
	got, err := decodeLines([]byte(ok + "\n"))
	if err != nil || len(got) != 1 || got[0].TaskID != "murphy/a" {
		t.Fatalf("valid line: got %v, %v", got, err)
	}
}
