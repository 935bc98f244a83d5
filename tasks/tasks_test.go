package tasks

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/murphy-rl/murphy/topics"
)

func jsonLine(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func humanEvalFixture(t *testing.T) string {
	split := map[string]string{
		"task_id": "HumanEval/900", "entry_point": "add",
		"prompt":             "def add(a, b):\n    \"\"\"Add.\"\"\"\n",
		"canonical_solution": "    return a + b\n",
		"test": "METADATA = {}\n\n\ndef check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(2, 2) == 4, \"msg, with comma\"\n" +
			"    assert True, 'nothing'\n    assert abs(candidate(0.1, 0.2) - 0.3) < 1e-9\n    assert candidate(\n        [1], [2]\n    ) == [1, 2]\n" +
			"    assert candidate('a)', 'b') == 'a)b' # comment\n",
	}
	loop := map[string]string{
		"task_id": "HumanEval/901", "entry_point": "inc", "prompt": "def inc(x):\n", "canonical_solution": "    return x + 1\n",
		"test": "def check(candidate):\n    for i in range(3):\n        assert candidate(i) == i + 1\n",
	}
	return jsonLine(t, split) + "\n{broken json\n" + jsonLine(t, loop) + "\n" + jsonLine(t, map[string]string{"task_id": "HumanEval/902"}) + "\n"
}

func TestHumanEvalLoader(t *testing.T) {
	ts, lerrs, err := Parse(strings.NewReader(humanEvalFixture(t)), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 2 {
		t.Fatalf("loaded %d tasks, want 2 (errors %v)", len(ts), lerrs)
	}
	if len(lerrs) != 2 || lerrs[0].Line != 2 || lerrs[1].Line != 4 {
		t.Fatalf("line errors = %v, want lines 2 and 4", lerrs)
	}
	add := ts[0]
	if add.Reference != add.Prompt+"    return a + b\n" || add.Setup != "METADATA = {}" || add.Check != "" {
		t.Fatalf("task fields: %+v", add)
	}
	want := []topics.TestCase{
		{Name: "test 1", Args: "1, 2", Expected: "3"},
		{Name: "test 2", Args: "2, 2", Expected: "4"},
		{Name: "test 3", Assert: "abs(candidate(0.1, 0.2) - 0.3) < 1e-9"},
		{Name: "test 4", Args: "[1], [2]", Expected: "[1, 2]", Hidden: true},
		{Name: "test 5", Args: "'a)', 'b'", Expected: "'a)b'", Hidden: true},
	}
	if len(add.Tests) != len(want) {
		t.Fatalf("tests = %+v", add.Tests)
	}
	for i := range want {
		if add.Tests[i] != want[i] {
			t.Errorf("test %d = %+v, want %+v", i, add.Tests[i], want[i])
		}
	}
	if loop := ts[1]; loop.Check == "" || len(loop.Tests) != 0 {
		t.Errorf("a check() with a loop must stay whole: %+v", loop)
	}
}

func TestLoadGzipAndFile(t *testing.T) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write([]byte(humanEvalFixture(t))); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	path := filepath.Join(t.TempDir(), "he.jsonl.gz")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	ts, lerrs, err := Load(path, FormatHumanEval)
	if err != nil || len(ts) != 2 || len(lerrs) != 2 {
		t.Fatalf("gz load: %d tasks, %v, %v", len(ts), lerrs, err)
	}
	if _, _, err := Load(filepath.Join(t.TempDir(), "missing"), ""); err == nil {
		t.Fatal("a missing file must fail")
	}
}

func TestMBPPLoader(t *testing.T) {
	row := map[string]any{
		"task_id": 11, "text": "Write a python function to remove first and last occurrence of a given character from the string.",
		"code":            "def remove_Occ(s,ch): \r\n    return s.replace(ch, '', 1)[::-1].replace(ch, '', 1)[::-1]",
		"test_list":       []string{`assert remove_Occ("hello","l") == "heo"`, `assert remove_Occ("abcda","a") == "bcd"`, `assert set(remove_Occ("xx","x")) == set()`},
		"test_setup_code": "", "challenge_test_list": []string{`assert remove_Occ("PHP","P") == "H"`},
	}
	bad := map[string]any{"task_id": 12, "text": "x", "code": "", "test_list": []string{}}
	ts, lerrs, err := Parse(strings.NewReader(jsonLine(t, row)+"\n"+jsonLine(t, bad)+"\n"), "")
	if err != nil || len(ts) != 1 || len(lerrs) != 1 || lerrs[0].Line != 2 {
		t.Fatalf("%d tasks, %v, %v", len(ts), lerrs, err)
	}
	task := ts[0]
	if task.TaskID != "MBPP/11" || task.EntryPoint != "remove_Occ" || strings.Contains(task.Reference, "\r") {
		t.Fatalf("%+v", task)
	}
	if !strings.Contains(task.Prompt, `assert remove_Occ("hello","l") == "heo"`) || strings.Contains(task.Prompt, "PHP") {
		t.Errorf("prompt must show test_list and not the challenge tests:\n%s", task.Prompt)
	}
	got := task.Tests
	if len(got) != 4 || got[0].Args != `"hello","l"` || got[0].Expected != `"heo"` || got[0].Hidden ||
		got[2].Assert != `set(remove_Occ("xx","x")) == set()` || !got[3].Hidden {
		t.Errorf("tests = %+v", got)
	}
}

// lcbPrivate encodes cases the way LiveCodeBench ships private tests:
// base64(zlib(pickle(json string))).
func lcbPrivate(t *testing.T, cases string) string {
	var p bytes.Buffer
	p.Write([]byte{0x80, 0x04, 0x95})
	body := append([]byte{'X'}, binary.LittleEndian.AppendUint32(nil, uint32(len(cases)))...)
	body = append(body, cases...)
	body = append(body, 0x94, '.')
	p.Write(binary.LittleEndian.AppendUint64(nil, uint64(len(body))))
	p.Write(body)
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	if _, err := zw.Write(p.Bytes()); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	return base64.StdEncoding.EncodeToString(z.Bytes())
}

func TestStdioLoader(t *testing.T) {
	row := map[string]any{
		"question_id": "abc123_a", "question_title": "Sum", "question_content": "Print a+b.", "platform": "atcoder",
		"public_test_cases":  `[{"input": "1 2\n", "output": "3\n", "testtype": "stdin"}]`,
		"private_test_cases": lcbPrivate(t, `[{"input": "5 5\n", "output": "10\n", "testtype": "stdin"}, {"input": "0 0\n", "output": "0\n", "testtype": "stdin"}]`),
	}
	functional := map[string]any{
		"question_id": "lc1", "question_content": "x",
		"public_test_cases": `[{"input": "[1]", "output": "1", "testtype": "functional"}]`,
	}
	evil := map[string]any{"question_id": "evil", "question_content": "x", "public_test_cases": "[]",
		"private_test_cases": base64.StdEncoding.EncodeToString(zlibBytes([]byte{0x80, 0x04, 'c', 'o', 's', '\n'}))}
	in := jsonLine(t, row) + "\n" + jsonLine(t, functional) + "\n" + jsonLine(t, evil) + "\n"
	ts, lerrs, err := Parse(strings.NewReader(in), FormatStdio)
	if err != nil || len(ts) != 1 || len(lerrs) != 2 {
		t.Fatalf("%d tasks, %v, %v", len(ts), lerrs, err)
	}
	task := ts[0]
	if task.Kind != topics.KindStdio || task.Source != "livecodebench/atcoder" || len(task.Tests) != 3 {
		t.Fatalf("%+v", task)
	}
	if task.Tests[0].Hidden || !task.Tests[1].Hidden || task.Tests[1].Stdin != "5 5\n" || task.Tests[2].Expected != "0\n" {
		t.Errorf("tests = %+v", task.Tests)
	}
	if !strings.Contains(lerrs[1].Err.Error(), "opcode") {
		t.Errorf("a pickle with code must be refused: %v", lerrs[1])
	}
}

func zlibBytes(b []byte) []byte {
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	_, _ = zw.Write(b) // into a bytes.Buffer: cannot fail
	zw.Close()
	return z.Bytes()
}

func TestNativeLoader(t *testing.T) {
	good := topics.Task{SchemaVersion: topics.SchemaVersion, TaskID: "n/1", Kind: topics.KindPythonFunction, Prompt: "p",
		EntryPoint: "f", Tests: []topics.TestCase{{Args: "1", Expected: "2"}, {Args: "2", Expected: "3", Hidden: true}}}
	noTests := good
	noTests.TaskID, noTests.Tests = "n/2", nil
	future := good
	future.TaskID, future.SchemaVersion = "n/3", 99
	in := jsonLine(t, good) + "\n\n// a comment\n" + jsonLine(t, noTests) + "\n" + jsonLine(t, future) + "\n" + jsonLine(t, good) + "\n"
	ts, lerrs, err := Parse(strings.NewReader(in), "")
	if err != nil || len(ts) != 1 || len(lerrs) != 3 {
		t.Fatalf("%d tasks, %v, %v", len(ts), lerrs, err)
	}
	if lerrs[0].Line != 4 || lerrs[1].Line != 5 || lerrs[2].Line != 6 || !strings.Contains(lerrs[2].Error(), "duplicate") {
		t.Errorf("line errors = %v", lerrs)
	}
	if ts[0].Source != FormatNative || len(ts[0].Tests) != 2 || !ts[0].Tests[1].Hidden {
		t.Errorf("%+v", ts[0])
	}
	var te *topics.Error
	if !errors.As(lerrs[0].Err, &te) || te.Kind != topics.ErrMissingField {
		t.Errorf("a task without tests must fail validation: %v", lerrs[0])
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name, in, format, want string
	}{
		{"unknown format", `{"task_id": "x"}`, "apps", "unknown task format"},
		{"undetectable", `{"foo": 1}`, "", "cannot detect"},
		{"empty", "\n\n", "", "no task records"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Parse(strings.NewReader(tc.in), tc.format)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestJSONArrayInput(t *testing.T) {
	in := `[{"task_id": "a", "question_content": "x", "public_test_cases": [{"input": "1", "output": "1"}]}, {"task_id": "b"}]`
	ts, lerrs, err := Parse(strings.NewReader(in), "")
	if err != nil || len(ts) != 1 || len(lerrs) != 1 || lerrs[0].Line != 2 {
		t.Fatalf("%d tasks, %v, %v", len(ts), lerrs, err)
	}
}

func TestSplitAssert(t *testing.T) {
	cases := []struct {
		stmt, args, expected, expr string
		value                      bool
	}{
		{`assert f(1, 2) == 3`, "1, 2", "3", "f(1, 2) == 3", true},
		{`assert f() == []`, "", "[]", "f() == []", true},
		{`assert f("a,b") == ["a", "b"], "split, please"`, `"a,b"`, `["a", "b"]`, `f("a,b") == ["a", "b"]`, true},
		{`assert f(x=1) == {'k': (1, 2)}`, "x=1", "{'k': (1, 2)}", "f(x=1) == {'k': (1, 2)}", true},
		{`assert f(1) == 2 == 2`, "", "", "f(1) == 2 == 2", false},
		{`assert f(1) == 1 or f(1) == 2`, "", "", "f(1) == 1 or f(1) == 2", false},
		{`assert f(1)[0] == 2`, "", "", "f(1)[0] == 2", false},
		{`assert not f(1)`, "", "", "not f(1)", false},
		{`assert f(1) == g(f(2))`, "", "", "f(1) == g(f(2))", false},
		{`assert f("""x == y""") == 'a\'=='`, `"""x == y"""`, `'a\'=='`, `f("""x == y""") == 'a\'=='`, true},
		{`assert f(1) is True`, "", "", "f(1) is True", false},
	}
	for _, tc := range cases {
		f, err := parsePython(tc.stmt)
		if err != nil {
			t.Fatalf("%s: %v", tc.stmt, err)
		}
		args, expected, expr, value, ok := splitAssert(f, statements(f.Root)[0], "f")
		if !ok || value != tc.value || args != tc.args || expected != tc.expected || expr != tc.expr {
			t.Errorf("%s: got (%q, %q, %q, %v, %v)", tc.stmt, args, expected, expr, value, ok)
		}
	}
	if _, err := parsePython("x = (1,\n"); err == nil {
		t.Error("an unclosed bracket must fail")
	}
	if _, err := parsePython("x = 'abc\n"); err == nil {
		t.Error("an unterminated string must fail")
	}
	f, _ := parsePython("x = 1\n")
	if _, _, _, _, ok := splitAssert(f, statements(f.Root)[0], "f"); ok {
		t.Error("an assignment read as an assert")
	}
}

func TestVisibleCount(t *testing.T) {
	for n, want := range map[int]int{1: 1, 2: 1, 3: 2, 4: 2, 5: 3, 9: 3, 100: 3} {
		if got := visibleCount(n); got != want {
			t.Errorf("visibleCount(%d) = %d, want %d", n, got, want)
		}
	}
}

func TestMemoryLookup(t *testing.T) {
	m := NewMemory([]topics.Task{{TaskID: "a", Tests: []topics.TestCase{{Args: "1"}}}})
	got, err := m.Task(context.Background(), "a")
	if err != nil || got.TaskID != "a" {
		t.Fatal(got, err)
	}
	got.Tests[0].Args = "changed"
	again, _ := m.Task(context.Background(), "a")
	if again.Tests[0].Args != "1" {
		t.Error("Task must return a copy")
	}
	if _, err := m.Task(context.Background(), "b"); !errors.Is(err, ErrNotFound) {
		t.Errorf("err = %v, want ErrNotFound", err)
	}
}

// TestHumanEvalFile loads the real data set when it is present.
func TestHumanEvalFile(t *testing.T) {
	const path = "../../shared/data/humaneval/HumanEval.jsonl.gz"
	if _, err := os.Stat(path); err != nil {
		t.Skip("HumanEval data not present")
	}
	ts, lerrs, err := Load(path, "")
	if err != nil || len(ts) != 164 || len(lerrs) != 0 {
		t.Fatalf("%d tasks, %v, %v", len(ts), lerrs, err)
	}
	whole := 0
	for _, task := range ts {
		if task.Check != "" {
			whole++
			continue
		}
		vis := 0
		for _, tc := range task.Tests {
			if !tc.Hidden {
				vis++
			}
		}
		if vis != visibleCount(len(task.Tests)) {
			t.Errorf("%s: %d visible of %d", task.TaskID, vis, len(task.Tests))
		}
	}
	if whole > 10 {
		t.Errorf("%d tasks kept whole; the splitter should handle all but a few", whole)
	}
}

type mapGetter map[string][]byte

var errNoKey = errors.New("no such key")

func (m mapGetter) Get(_ context.Context, key string) ([]byte, error) {
	if b, ok := m[key]; ok {
		return b, nil
	}
	return nil, errNoKey
}

func TestFromTable(t *testing.T) {
	good := topics.Task{SchemaVersion: topics.SchemaVersion, TaskID: "a", Kind: topics.KindStdio, Prompt: "p",
		Tests: []topics.TestCase{{Stdin: "1", Expected: "1"}}}
	b, err := topics.Encode(&good)
	if err != nil {
		t.Fatal(err)
	}
	l := FromTable(mapGetter{"a": b, "bad": []byte("{")}, errNoKey)
	if got, err := l.Task(context.Background(), "a"); err != nil || got.Prompt != "p" {
		t.Fatal(got, err)
	}
	if _, err := l.Task(context.Background(), "missing"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing key: %v", err)
	}
	if _, err := l.Task(context.Background(), "bad"); err == nil || errors.Is(err, ErrNotFound) {
		t.Errorf("bad record: %v", err)
	}
	// A returned task is the caller's to change; a new value replaces it.
	got, _ := l.Task(context.Background(), "a")
	got.Prompt, got.Tests[0].Stdin = "changed", "changed"
	if again, err := l.Task(context.Background(), "a"); err != nil || again.Prompt != "p" || again.Tests[0].Stdin != "1" {
		t.Fatalf("after a caller changed its copy: %+v, %v", again, err)
	}
	good.Prompt = "p2"
	b2, err := topics.Encode(&good)
	if err != nil {
		t.Fatal(err)
	}
	l = FromTable(&swapGetter{vals: [][]byte{b, b2}}, errNoKey)
	for _, want := range []string{"p", "p2"} {
		if got, err := l.Task(context.Background(), "a"); err != nil || got.Prompt != want {
			t.Fatalf("got %+v, %v; want prompt %q", got, err, want)
		}
	}
}

// swapGetter returns its values in turn, each a new slice.
type swapGetter struct {
	vals [][]byte
	n    int
}

func (g *swapGetter) Get(context.Context, string) ([]byte, error) {
	v := g.vals[min(g.n, len(g.vals)-1)]
	g.n++
	return append([]byte(nil), v...), nil
}

// flaky is a lookup whose task appears after a while, or fails otherwise.
type flaky struct {
	after time.Time
	err   error
}

func (f flaky) Task(_ context.Context, id string) (*topics.Task, error) {
	if f.err != nil {
		return nil, f.err
	}
	if time.Now().Before(f.after) {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	return &topics.Task{TaskID: id}, nil
}

// TestAwaitIsTheMissingTaskPolicy: a task that appears within the wait is
// found; one that never does makes the record poison (task_not_found) once
// the wait is over; an undecodable task is poison (bad_task); any other
// failure is transient; a cancelled context ends the wait.
func TestAwaitIsTheMissingTaskPolicy(t *testing.T) {
	ctx := context.Background()
	if task, err := Await(ctx, flaky{after: time.Now().Add(200 * time.Millisecond)}, "a", 5*time.Second); err != nil || task.TaskID != "a" {
		t.Fatalf("late task: %v %v", task, err)
	}
	start := time.Now()
	_, err := Await(ctx, NewMemory(nil), "never", 300*time.Millisecond)
	if !topics.IsPoison(err) || !hasLabel(err, "task_not_found") || !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing task: %v", err)
	}
	if el := time.Since(start); el < 300*time.Millisecond || el > 2*time.Second {
		t.Fatalf("missing task: gave up after %v, want the whole 300ms wait and little more", el)
	}
	bad := &topics.Error{Kind: topics.ErrInvalidField, Record: "task", Field: "tests"}
	if _, err := Await(ctx, flaky{err: bad}, "b", time.Minute); !topics.IsPoison(err) || !hasLabel(err, "bad_task") {
		t.Fatalf("bad task: %v", err)
	}
	down := errors.New("broker unavailable")
	if _, err := Await(ctx, flaky{err: down}, "c", time.Minute); !topics.IsTransient(err) || !errors.Is(err, down) {
		t.Fatalf("lookup failure: %v", err)
	}
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := Await(cctx, NewMemory(nil), "never", time.Minute); !errors.Is(err, context.DeadlineExceeded) || topics.IsPoison(err) {
		t.Fatalf("cancelled: %v", err)
	}
}

func hasLabel(err error, want string) bool {
	got, ok := topics.PoisonLabel(err)
	return ok && got == want
}
