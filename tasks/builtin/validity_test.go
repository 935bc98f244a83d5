package builtin

// Data-validity checks of the task set: every reference solution passes every
// test, and a plausible wrong program for each task fails some hidden test.
// This runs programs directly with python3; it is not the product's sandboxed
// executor.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/topics"
)

// driver runs the program argv[1] of kind argv[2] (entry point argv[3]) on
// every case of the JSON file argv[4] in one interpreter and writes one
// result per case to argv[5]. python-function: import the module, evaluate
// the call, compare with == and type equality against the expected literal.
// stdio: run the program as __main__ with the case's stdin and capture
// stdout, which the Go side compares.
const driver = `
import ast, importlib.util, io, json, runpy, sys
src, kind, entry, cases_path, out_path = sys.argv[1:6]
with open(cases_path) as f:
    cases = json.load(f)
results = []
if kind == "python-function":
    spec = importlib.util.spec_from_file_location("solution", src)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fn = getattr(module, entry)
    for case in cases:
        try:
            want = ast.literal_eval(case["expected"])
            got = eval("__fn(" + case["args"] + ")", {"__fn": fn})
            results.append({"ok": type(got) is type(want) and got == want, "detail": repr(got)})
        except Exception as e:
            results.append({"ok": False, "detail": type(e).__name__ + ": " + str(e)})
else:
    real_in, real_out = sys.stdin, sys.stdout
    for case in cases:
        out = io.BytesIO()
        sys.stdin = io.TextIOWrapper(io.BytesIO(case.get("stdin", "").encode()), encoding="utf-8")
        sys.stdout = io.TextIOWrapper(out, encoding="utf-8")
        ok, detail = True, ""
        try:
            runpy.run_path(src, run_name="__main__")
        except SystemExit as e:
            if e.code not in (None, 0):
                ok, detail = False, "exit " + str(e.code)
        except Exception as e:
            ok, detail = False, type(e).__name__ + ": " + str(e)
        sys.stdout.flush()
        stdout = out.getvalue().decode("utf-8", "replace")
        sys.stdin, sys.stdout = real_in, real_out
        results.append({"ok": ok, "stdout": stdout, "detail": detail or stdout[-300:]})
with open(out_path, "w") as f:
    json.dump(results, f)
`

const runTimeout = time.Minute

type caseResult struct {
	OK     bool   `json:"ok"`
	Stdout string `json:"stdout"`
	Detail string `json:"detail"`
}

// runCases runs program against every test of task and reports, per test,
// whether it passed.
func runCases(ctx context.Context, t *testing.T, task topics.Task, program string) []caseResult {
	t.Helper()
	dir := t.TempDir()
	files := map[string][]byte{"solution.py": []byte(program), "driver.py": []byte(driver)}
	cases, err := json.Marshal(task.Tests)
	if err != nil {
		t.Fatal(err)
	}
	files["cases.json"] = cases
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "python3", "-I", "driver.py", "solution.py", task.Kind, task.EntryPoint, "cases.json", "results.json")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		// The program failed to load (or the run timed out): every case fails.
		results := make([]caseResult, len(task.Tests))
		for i := range results {
			results[i].Detail = fmt.Sprintf("%v: %s", err, tail(string(out)))
		}
		return results
	}
	raw, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var results []caseResult
	if err := json.Unmarshal(raw, &results); err != nil || len(results) != len(task.Tests) {
		t.Fatalf("driver results %q: %v", raw, err)
	}
	if task.Kind == topics.KindStdio {
		for i := range results {
			results[i].OK = results[i].OK && sameOutput(results[i].Stdout, task.Tests[i].Expected, task.FloatTolerance)
		}
	}
	return results
}

// sameOutput compares stdout line by line after dropping trailing whitespace
// and trailing blank lines, token by token within a line, numbers within tol
// (absolute or relative) when tol > 0.
func sameOutput(got, want string, tol float64) bool {
	g, w := normalizedLines(got), normalizedLines(want)
	if len(g) != len(w) {
		return false
	}
	for i := range g {
		gt, wt := strings.Fields(g[i]), strings.Fields(w[i])
		if len(gt) != len(wt) {
			return false
		}
		for j := range gt {
			if gt[j] == wt[j] {
				continue
			}
			gf, gerr := strconv.ParseFloat(gt[j], 64)
			wf, werr := strconv.ParseFloat(wt[j], 64)
			if tol == 0 || gerr != nil || werr != nil || math.Abs(gf-wf) > tol*math.Max(1, math.Abs(wf)) {
				return false
			}
		}
	}
	return true
}

func normalizedLines(s string) []string {
	lines := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " \t\r")
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

func tail(s string) string {
	if len(s) > 300 {
		return "..." + s[len(s)-300:]
	}
	return s
}

func requirePython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Fatalf("python3 is required (see install-test-deps.sh): %v", err)
	}
}

func TestTaskDataReferencesPassAllTests(t *testing.T) {
	requirePython(t)
	tasks, err := Tasks()
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		t.Run(task.TaskID, func(t *testing.T) {
			t.Parallel()
			for i, r := range runCases(t.Context(), t, task, task.Reference) {
				if !r.OK {
					tc := task.Tests[i]
					t.Errorf("%s: args=%q stdin=%q expected=%q, reference gave %s", tc.Name, tc.Args, tc.Stdin, tc.Expected, r.Detail)
				}
			}
		})
	}
}

// mutants holds, per task, one plausible wrong program written as a single
// replacement in the reference: off-by-one, wrong operator, missed edge case.
var mutants = map[string]struct{ old, new string }{
	"murphy/longest-plateau":         {"return max(best, run)", "return best"},
	"murphy/second-largest-distinct": {"sorted(set(nums), reverse=True)", "sorted(nums, reverse=True)"},
	"murphy/range-summary":           {"if j - i + 1 >= 3:", "if j - i + 1 >= 2:"},
	"murphy/brackets-balanced":       {"return not stack", "return True"},
	"murphy/split-even":              {"1 if i < extra else 0", "1 if i <= extra else 0"},
	"murphy/parse-duration":          {`(\d+)\s*`, `(\d)\s*`},
	"murphy/count-islands-diagonal": {
		"STEPS = [(-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1)]",
		"STEPS = [(-1, 0), (0, -1), (0, 1), (1, 0)]"},
	"murphy/next-palindrome": {"m = n + 1", "m = n"},
	"murphy/shift-letters":   {`% 26 + ord("A")`, `% 26 + ord("a")`},
	"murphy/settle-ledger":   {"balances[name] >= amount", "balances[name] > amount"},
	"murphy/fewest-coins": {
		`    best = [0] + [None] * amount
    for value in range(1, amount + 1):
        for coin in coins:
            if coin <= value and best[value - coin] is not None:
                candidate = best[value - coin] + 1
                if best[value] is None or candidate < best[value]:
                    best[value] = candidate
    return -1 if best[amount] is None else best[amount]`,
		`    count = 0
    for coin in sorted(coins, reverse=True):
        count += amount // coin
        amount %= coin
    return count if amount == 0 else -1`},
	"murphy/rotate-clockwise":    {"matrix[rows - 1 - r][c]", "matrix[r][c]"},
	"murphy/weekday-after":       {"DAYS[(DAYS.index(day) + offset) % 7]", "DAYS[DAYS.index(day) + offset % 7]"},
	"murphy/sum-of-evens":        {"data[1:1 + n]", "data[1:n]"},
	"murphy/grade-histogram":     {"if score >= 90:", "if score > 90:"},
	"murphy/top-words":           {"key=lambda item: (-item[1], item[0])", "key=lambda item: -item[1]"},
	"murphy/window-maximum":      {"if window[0] <= i - k:", "if window[0] < i - k:"},
	"murphy/grid-paths":          {"ways[r][c] = total % MOD", "ways[r][c] = total"},
	"murphy/maze-shortest-path":  {"queue.popleft()", "queue.pop()"},
	"murphy/mean-and-median":     {"(values[n // 2 - 1] + values[n // 2]) / 2", "values[n // 2]"},
	"murphy/total-time":          {"{total % 60:02d}", "{total % 60}"},
	"murphy/single-server-queue": {"start = max(arrival, free_at)", "start = free_at"},
	"murphy/stab-intervals":      {", key=lambda iv: iv[1])", ")"},
	"murphy/widest-prime-gap":    {"int(hi ** 0.5) + 1", "int(hi ** 0.5)"},
	"murphy/base-conversion":     {"    if value == 0:\n        return \"0\"\n", ""},
	"murphy/league-table":        {"\n            elif scored == conceded:\n                s[0] += 1", ""},
}

func TestTaskDataMutantsFailHiddenTests(t *testing.T) {
	requirePython(t)
	tasks, err := Tasks()
	if err != nil {
		t.Fatal(err)
	}
	if len(mutants) != len(tasks) {
		t.Errorf("%d mutants for %d tasks", len(mutants), len(tasks))
	}
	for _, task := range tasks {
		t.Run(task.TaskID, func(t *testing.T) {
			t.Parallel()
			m, ok := mutants[task.TaskID]
			if !ok {
				t.Fatal("no mutant for this task")
			}
			if n := strings.Count(task.Reference, m.old); n != 1 {
				t.Fatalf("mutant text occurs %d times in the reference, want 1", n)
			}
			program := strings.Replace(task.Reference, m.old, m.new, 1)
			passed, hiddenFailed := 0, 0
			for i, r := range runCases(t.Context(), t, task, program) {
				switch {
				case r.OK:
					passed++
				case task.Tests[i].Hidden:
					hiddenFailed++
				}
			}
			// A mutant that passes nothing is not a plausible near miss; one
			// that fails no hidden test shows the hidden tests do not discriminate.
			if passed == 0 {
				t.Errorf("mutant passes no test at all")
			}
			if hiddenFailed == 0 {
				t.Errorf("mutant passes every hidden test (passed %d of %d)", passed, len(task.Tests))
			}
		})
	}
}

func TestTaskDataFileMatchesGenerator(t *testing.T) {
	requirePython(t)
	out, err := exec.CommandContext(t.Context(), "python3", "-I", "tasks_gen.py").Output()
	if err != nil {
		t.Fatalf("tasks_gen.py: %v", err)
	}
	if !bytes.Equal(out, tasksJSONL) {
		t.Error("tasks.jsonl differs from tasks_gen.py output; run go generate ./tasks/builtin")
	}
}
