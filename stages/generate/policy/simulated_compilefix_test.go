package policy_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/murphy-rl/murphy/stages/generate"
	"github.com/murphy-rl/murphy/stages/generate/policy"
	"github.com/murphy-rl/murphy/tasks"
	"github.com/murphy-rl/murphy/tasks/submit"
	"github.com/murphy-rl/murphy/topics"
)

// cfFixture is a small compile-fix task: a workspace that fails to build,
// its target diagnostics (as the real compiler reports them) and the
// reference repair as `git diff` wrote it.
type cfFixture struct {
	name, lang string
	files      [][2]string // path, content, in prompt order
	sep        string      // written after each file block
	targets    []topics.Diagnostic
	ref        string
	// stub is the statement a stub of the first target's function returns.
	stub string
}

func (f cfFixture) task() *topics.Task {
	var b strings.Builder
	b.WriteString("The build of this repository fails.\n\nDiagnostics:\n")
	for _, d := range f.targets {
		fmt.Fprintf(&b, "%s:%d:%d: error: %s\n", d.File, d.Line, d.Column, d.Message)
	}
	b.WriteString("\nFiles:\n\n")
	for _, fl := range f.files {
		b.WriteString("--- " + fl[0] + " ---\n" + fl[1] + f.sep)
	}
	return &topics.Task{
		SchemaVersion: topics.SchemaVersion, TaskID: "cf/" + f.name, Kind: topics.KindCompileFix,
		Language: f.lang, Prompt: b.String(), ReferencePatch: f.ref, RewardPolicy: topics.RewardTiered,
		CompileFix: &topics.CompileFix{
			Workspace: "sha256:" + strings.Repeat("0", 64), Build: []string{"make"}, Targets: f.targets,
		},
	}
}

// write puts the fixture's files under dir.
func (f cfFixture) write(t *testing.T, dir string) {
	t.Helper()
	for _, fl := range f.files {
		p := filepath.Join(dir, filepath.FromSlash(fl[0]))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(fl[1]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

const cMain = `#include <stdio.h>
#include "util.h"

static int total(const int *xs, int n) {
    int sum = 0;
    for (int i = 0; i < n; i++) {
        sum += xs[i]
    }
    return sum;
}

struct point {
    int x, y;
};

static struct point origin(void) {
    struct point p = {0, 0};
    return p;
}

int main(void) {
    int xs[] = {1, 2, 3};
    struct point o = origin();
    printf("%d %d\n", total(xs, 3), o.x + scale(o.y));
    return 0;
}
`

const cUtil = `#include "util.h"

static const int factor = 3;

int scale(int v) {
    return v * factr;
}
`

const cRef = `diff --git a/src/main.c b/src/main.c
index 9fe8b20..78a148c 100644
--- a/src/main.c
+++ b/src/main.c
@@ -4,7 +4,7 @@
 static int total(const int *xs, int n) {
     int sum = 0;
     for (int i = 0; i < n; i++) {
-        sum += xs[i]
+        sum += xs[i];
     }
     return sum;
 }
diff --git a/src/util.c b/src/util.c
index 2899710..4e0ea84 100644
--- a/src/util.c
+++ b/src/util.c
@@ -3,5 +3,5 @@
 static const int factor = 3;
 
 int scale(int v) {
-    return v * factr;
+    return v * factor;
 }
`

const goMain = `package main

import (
	"fmt"
	"strings"
)

type counter struct {
	n int
}

func (c *counter) add(s string) (int, error) {
	c.n += len(strings.Fields(s))
	return c.n, nill
}

func label(n int) string {
	return fmt.Sprintf("%d words", n)
}

func main() {
	c := &counter{}
	n, _ := c.add("a b c")
	fmt.Println(label(n))
}
`

const goRef = `diff --git a/main.go b/main.go
index 9cd95d8..0e2cc07 100644
--- a/main.go
+++ b/main.go
@@ -11,7 +11,7 @@ type counter struct {
 
 func (c *counter) add(s string) (int, error) {
 	c.n += len(strings.Fields(s))
-	return c.n, nill
+	return c.n, nil
 }
 
 func label(n int) string {
`

const javaApp = `import java.util.List;

public class App {
    static int sum(List<Integer> xs) {
        int total = 0;
        for (int x : xs) {
            total += x;
        }
        return totl;
    }

    static String name() {
        return "app";
    }

    public static void main(String[] args) {
        System.out.println(sum(List.of(1, 2, 3)) + name());
    }
}
`

const javaRef = `diff --git a/App.java b/App.java
index 98d841a..7d4d3a4 100644
--- a/App.java
+++ b/App.java
@@ -6,7 +6,7 @@ public class App {
         for (int x : xs) {
             total += x;
         }
-        return totl;
+        return total;
     }
 
     static String name() {
`

const pyStats = `def mean(xs: list) -> float:
    if not xs:
        return 0.0
    total = sum(xs)
    return total / len(xs


def label(x) -> str:
    return f"mean={x}"
`

const pyRef = `diff --git a/pkg/stats.py b/pkg/stats.py
index 0c59404..c344e15 100644
--- a/pkg/stats.py
+++ b/pkg/stats.py
@@ -2,7 +2,7 @@ def mean(xs: list) -> float:
     if not xs:
         return 0.0
     total = sum(xs)
-    return total / len(xs
+    return total / len(xs)
 
 
 def label(x) -> str:
`

func cfFixtures() []cfFixture {
	return []cfFixture{
		{
			name: "c", lang: "c", sep: "\n",
			files: [][2]string{
				{"Makefile", "app: src/main.c src/util.c src/util.h\n\tcc -Wall -o app src/main.c src/util.c\n"},
				{"src/util.h", "#ifndef UTIL_H\n#define UTIL_H\n\nint scale(int v);\n\n#endif\n"},
				{"src/util.c", cUtil},
				{"src/main.c", cMain},
			},
			targets: []topics.Diagnostic{
				{Tool: "gcc", Severity: "error", File: "src/main.c", Line: 7, Column: 21, Message: "expected ';' before '}' token"},
				{Tool: "gcc", Severity: "error", File: "src/util.c", Line: 6, Column: 16,
					Message: "'factr' undeclared (first use in this function); did you mean 'factor'?"},
			},
			ref: cRef, stub: "return 0;",
		},
		{
			name: "go", lang: "go",
			files: [][2]string{{"go.mod", "module example.com/words\n\ngo 1.22\n"}, {"main.go", goMain}},
			targets: []topics.Diagnostic{
				{Tool: "go", Severity: "error", File: "main.go", Line: 14, Column: 14, Code: "undefined", Message: "undefined: nill"},
			},
			ref: goRef, stub: "return 0, nil",
		},
		{
			name: "java", lang: "java",
			files: [][2]string{{"App.java", javaApp}},
			targets: []topics.Diagnostic{
				{Tool: "javac", Severity: "error", File: "App.java", Line: 9, Column: 16, Message: "cannot find symbol"},
			},
			ref: javaRef, stub: "return 0;",
		},
		{
			name: "python", lang: "python", sep: "\n",
			files: [][2]string{{"pkg/__init__.py", ""}, {"pkg/stats.py", pyStats}},
			targets: []topics.Diagnostic{
				{Tool: "python", Severity: "error", File: "pkg/stats.py", Line: 5, Column: 22, Code: "SyntaxError",
					Message: "'(' was never closed"},
			},
			ref: pyRef, stub: "return 0.0",
		},
	}
}

func cfRoot(t *testing.T, task *topics.Task, g int) *topics.Prompt {
	t.Helper()
	cfg := submit.DefaultConfig()
	cfg.GroupSize = g
	return submit.RootPrompts(cfg, task, time.Unix(1, 0))[0]
}

func cfRefinement(root *topics.Prompt, feedback, parentCode string) *topics.Prompt {
	p := *root
	p.ParentID = topics.NodeID(root.TreeID, root.GroupID, 0)
	p.GroupID, p.Turn = p.ParentID, 2
	p.Feedback, p.ParentCode = feedback, parentCode
	p.Text = root.Text + "\n\nPrevious attempt:\n```diff\n" + parentCode + "```\n\nResult: compile_error.\n" + feedback
	return &p
}

func cfIDs(p *topics.Prompt, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = topics.NodeID(p.TreeID, p.GroupID, i)
	}
	return ids
}

func newSim(t *testing.T, mut func(*policy.SimulatedConfig)) *policy.Simulated {
	t.Helper()
	cfg := policy.DefaultSimulatedConfig()
	if mut != nil {
		mut(&cfg)
	}
	pol, err := policy.NewSimulated(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return pol
}

// patchDryRun runs GNU patch on diff against the fixture's files.
func patchDryRun(t *testing.T, fx cfFixture, diff string) (bool, string) {
	t.Helper()
	bin := "/usr/bin/patch"
	if _, err := os.Stat(bin); err != nil {
		t.Skip("GNU patch is not installed at /usr/bin/patch")
	}
	dir := t.TempDir()
	fx.write(t, dir)
	cmd := exec.Command(bin, "-p1", "--dry-run", "--batch")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(diff)
	out, err := cmd.CombinedOutput()
	return err == nil, string(out)
}

func TestCompileFixDeterministic(t *testing.T) {
	fx := cfFixtures()[0]
	task := fx.task()
	pol := newSim(t, func(c *policy.SimulatedConfig) { c.Seed = 42 })
	p := cfRoot(t, task, 24)
	ids := cfIDs(p, 24)
	a, err := pol.Generate(context.Background(), policy.Request{Prompt: p, Task: task, NodeIDs: ids})
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{23, 5, 0, 11} {
		b, err := pol.Generate(context.Background(), policy.Request{Prompt: p, Task: task, NodeIDs: ids[i : i+1]})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a[i], b[0]) {
			t.Fatalf("sample %d differs when drawn alone", i)
		}
		if o1, d1 := pol.Choose(p, task, ids[i]); true {
			o2, d2 := pol.Choose(p, task, ids[i])
			if o1 != o2 || d1 != d2 {
				t.Fatalf("Choose is not deterministic for %s", ids[i])
			}
		}
	}
	other := newSim(t, func(c *policy.SimulatedConfig) { c.Seed = 43 })
	c, _ := other.Generate(context.Background(), policy.Request{Prompt: p, Task: task, NodeIDs: ids})
	if reflect.DeepEqual(a, c) {
		t.Fatal("another seed gives the same group")
	}
	distinct := map[string]bool{}
	for _, s := range a {
		distinct[s.Code] = true
		if len(s.TokenIDs) == 0 || len(s.TokenIDs) != len(s.Logprobs) || s.FinishReason != "stop" || len(s.PromptTokenIDs) == 0 {
			t.Fatalf("sample columns: %d ids %d logprobs finish %q", len(s.TokenIDs), len(s.Logprobs), s.FinishReason)
		}
		if !reflect.DeepEqual(s.TokenIDs, policy.Tokenize(s.Text)) {
			t.Fatal("token ids are not the simple tokenizer's")
		}
		if s.Code != policy.ExtractCode(s.Text) {
			t.Fatal("code is not what ExtractCode reads from the text")
		}
		if strings.Contains(s.Text, "```python") {
			t.Fatalf("a compile-fix reply in a python block:\n%s", s.Text)
		}
	}
	if len(distinct) < 6 {
		t.Fatalf("a group of 24 has only %d distinct diffs", len(distinct))
	}
}

// TestCompileFixOutcomeMix: the outcomes follow the configured chances:
// the reference with p_reference, then broken patches with p_broken and
// wrong fixes otherwise, each kind of a family equally often (every kind
// applies to the fixture).
func TestCompileFixOutcomeMix(t *testing.T) {
	const n = 2000
	for _, cfg := range []struct{ pRef, pBroken float64 }{{0.3, 0.2}, {0.5, 0.5}} {
		t.Run(fmt.Sprintf("p_reference=%v,p_broken=%v", cfg.pRef, cfg.pBroken), func(t *testing.T) {
			pol := newSim(t, func(c *policy.SimulatedConfig) { c.PReference, c.PBroken = cfg.pRef, cfg.pBroken })
			task := cfFixtures()[0].task()
			p := cfRoot(t, task, 1)
			counts := map[string]int{}
			for i := range n {
				o, _ := pol.Choose(p, task, fmt.Sprint("node-", i))
				k := string(o.Mutation)
				if o.Reference {
					k = "reference"
				}
				counts[k]++
			}
			want := map[string]float64{"reference": cfg.pRef}
			for _, m := range policy.WrongFixes() {
				want[string(m)] = (1 - cfg.pRef) * (1 - cfg.pBroken) / 4
			}
			for _, m := range policy.BrokenPatches() {
				want[string(m)] = (1 - cfg.pRef) * cfg.pBroken / 4
			}
			for k, p := range want {
				got := float64(counts[k]) / n
				tol := 4 * math.Sqrt(p*(1-p)/n)
				if math.Abs(got-p) > tol {
					t.Errorf("%s: %.3f of samples, want %.3f ± %.3f", k, got, p, tol)
				}
			}
			if len(counts) != len(want) {
				t.Errorf("outcomes %v, want exactly %d kinds", counts, len(want))
			}
		})
	}
}

// TestCompileFixPatches: on every fixture, each outcome kind occurs; the
// reference outcome is the task's reference patch; every reference and
// wrong-fix diff applies with GNU patch and every broken one does not; the
// wrong fixes are what they say.
func TestCompileFixPatches(t *testing.T) {
	pol := newSim(t, func(c *policy.SimulatedConfig) { c.PBroken = 0.5 })
	for _, fx := range cfFixtures() {
		t.Run(fx.name, func(t *testing.T) {
			task := fx.task()
			p := cfRoot(t, task, 1)
			byDiff := map[string]policy.Outcome{}
			kinds := map[policy.Mutation]bool{}
			for i := range 600 {
				o, d := pol.Choose(p, task, fmt.Sprint("n", i))
				byDiff[d] = o
				kinds[o.Mutation] = true
				if o.Reference && d != fx.ref {
					t.Fatalf("reference outcome is not the reference patch:\n%s", d)
				}
			}
			for _, m := range append(policy.WrongFixes(), policy.BrokenPatches()...) {
				if !kinds[m] {
					t.Errorf("%s never sampled", m)
				}
			}
			if !kinds[""] {
				t.Error("reference never sampled")
			}
			lines := map[string][]string{}
			for _, f := range fx.files {
				lines[f[0]] = strings.SplitAfter(f[1], "\n")
			}
			broken := map[policy.Mutation]bool{}
			for _, m := range policy.BrokenPatches() {
				broken[m] = true
			}
			for d, o := range byDiff {
				ok, out := patchDryRun(t, fx, d)
				switch {
				case broken[o.Mutation] && ok:
					t.Errorf("%s applies:\n%s\n%s", o.Mutation, d, out)
				case !broken[o.Mutation] && !ok:
					t.Errorf("%s (reference %v) does not apply:\n%s\n%s", o.Mutation, o.Reference, d, out)
				}
				if o.Reference {
					continue
				}
				if d == fx.ref {
					t.Errorf("%s is the reference patch", o.Mutation)
				}
				removed, added := changedLines(d)
				targetLines := map[string]bool{}
				for _, tg := range fx.targets {
					targetLines[lines[tg.File][tg.Line-1]] = true
				}
				switch o.Mutation {
				case policy.DeleteLine:
					if len(removed) != 1 || !targetLines[removed[0]] || len(added) != 0 {
						t.Errorf("delete_line does not delete a target line:\n%s", d)
					}
				case policy.CommentOut:
					if len(removed) != 1 || !targetLines[removed[0]] || len(added) != 1 ||
						!strings.Contains(added[0], commentOf(fx.lang)+" "+strings.TrimSpace(removed[0])) {
						t.Errorf("comment_out does not comment out a target line:\n%s", d)
					}
				case policy.StubFunction:
					if len(added) > 1 || len(removed) < 1 {
						t.Errorf("stub_function is not a body replaced by one return:\n%s", d)
					}
				case policy.WrongSpot:
					for _, r := range removed {
						if targetLines[r] {
							t.Errorf("wrong_spot touches a target line:\n%s", d)
						}
					}
				}
			}
		})
	}
}

func commentOf(lang string) string {
	if lang == "python" {
		return "#"
	}
	return "//"
}

// changedLines are the removed and added lines of a diff (with newlines).
func changedLines(d string) (removed, added []string) {
	for _, l := range strings.SplitAfter(d, "\n") {
		switch {
		case strings.HasPrefix(l, "--- "), strings.HasPrefix(l, "+++ "):
		case strings.HasPrefix(l, "-"):
			removed = append(removed, l[1:])
		case strings.HasPrefix(l, "+"):
			added = append(added, l[1:])
		}
	}
	return removed, added
}

// TestCompileFixStub: the stub returns a zero value of the function's
// result type, language by language, and applies.
func TestCompileFixStub(t *testing.T) {
	fxs := cfFixtures()
	byName := map[string]cfFixture{}
	for _, f := range fxs {
		byName[f.name] = f
	}
	cases := []struct {
		fixture, file string
		line          int
		want          string
	}{
		{"c", "src/main.c", 7, "    return 0;\n"},
		{"c", "src/main.c", 17, "    return (struct point){0};\n"},
		{"c", "src/main.c", 24, "    return 0;\n"},
		{"c", "src/util.c", 6, "    return 0;\n"},
		{"go", "main.go", 14, "\treturn 0, nil\n"},
		{"go", "main.go", 18, "\treturn \"\"\n"},
		{"java", "App.java", 9, "        return 0;\n"},
		{"java", "App.java", 13, "        return null;\n"},
		{"python", "pkg/stats.py", 5, "    return 0.0\n"},
		{"python", "pkg/stats.py", 9, "    return \"\"\n"},
	}
	pol := newSim(t, func(c *policy.SimulatedConfig) { c.PBroken = 0 })
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s:%d", tc.file, tc.line), func(t *testing.T) {
			fx := byName[tc.fixture]
			fx.ref = "" // no reference: every sample is a wrong fix
			fx.targets = []topics.Diagnostic{{File: tc.file, Line: tc.line, Message: "some error"}}
			task := fx.task()
			p := cfRoot(t, task, 1)
			for i := range 200 {
				o, d := pol.Choose(p, task, fmt.Sprint("s", i))
				if o.Reference {
					t.Fatal("reference sampled for a task without one")
				}
				if o.Mutation != policy.StubFunction {
					continue
				}
				_, added := changedLines(d)
				if len(added) > 1 || len(added) == 1 && added[0] != tc.want {
					t.Fatalf("stub adds %q, want %q:\n%s", added, tc.want, d)
				}
				if ok, out := patchDryRun(t, fx, d); !ok {
					t.Fatalf("stub does not apply:\n%s\n%s", d, out)
				}
				return
			}
			t.Fatal("no stub sampled")
		})
	}
	// main's body in Java is void: the stub empties it.
	fx := byName["java"]
	fx.ref, fx.targets = "", []topics.Diagnostic{{File: "App.java", Line: 17, Message: "x"}}
	task := fx.task()
	for i := range 200 {
		if o, d := pol.Choose(cfRoot(t, task, 1), task, fmt.Sprint("v", i)); o.Mutation == policy.StubFunction {
			if _, added := changedLines(d); len(added) != 0 {
				t.Fatalf("void stub adds %q", added)
			}
			return
		}
	}
	t.Fatal("no stub sampled")
}

// TestCompileFixRepairRate: a refinement whose feedback names a target
// diagnostic repairs far more often than one whose feedback says nothing
// useful; a diagnostic elsewhere counts as an error.
func TestCompileFixRepairRate(t *testing.T) {
	const n = 2000
	fx := cfFixtures()[0]
	task := fx.task()
	cfg := policy.DefaultSimulatedConfig()
	pol := newSim(t, nil)
	root := cfRoot(t, task, 1)
	prev := "diff --git a/src/main.c b/src/main.c\n--- a/src/main.c\n+++ b/src/main.c\n@@ -7 +7 @@\n-        sum += xs[i]\n+        // sum += xs[i]\n"
	cases := []struct {
		name, feedback string
		kind           policy.FeedbackKind
		p              float64
	}{
		{"names target location", "Status: compile_error\nTests passed: 0/0\nThe build still fails:\n" +
			"src/main.c:7:21: error[expected]: expected ';' before '}' token\n    7 |         sum += xs[i]\n",
			policy.FeedbackDiagnostic, cfg.PRepairDiagnostic},
		{"names target message", "Status: compile_error\nsrc/util.c:7:16: error: 'factr' undeclared (first use in this function); did you mean 'factor'?\n",
			policy.FeedbackDiagnostic, cfg.PRepairDiagnostic},
		{"other diagnostic", "Status: compile_error\nsrc/main.c:24:44: error[implicit-function-declaration]: implicit declaration of function 'scal'\n",
			policy.FeedbackError, cfg.PRepairError},
		{"timeout", "Status: timeout\nTests passed: 0/0\nThe build exceeded the time limit of 60s.\n",
			policy.FeedbackUninformative, cfg.PRepairUninformative},
		{"bare status", "Status: compile_error\nTests passed: 0/0\n", policy.FeedbackUninformative, cfg.PRepairUninformative},
		{"patch failed", "Status: patch_failed\nTests passed: 0/0\nThe patch does not apply: hunk 1 of src/main.c matches nothing near line 4.\n",
			policy.FeedbackUninformative, cfg.PRepairUninformative},
		{"no feedback", "", policy.FeedbackUninformative, cfg.PRepairUninformative},
	}
	rates := map[string]float64{}
	for _, tc := range cases {
		p := cfRefinement(root, tc.feedback, prev)
		repaired := 0
		for i := range n {
			o, d := pol.Choose(p, task, fmt.Sprint("r", i))
			if o.Feedback != tc.kind {
				t.Fatalf("%s: feedback read as %s, want %s", tc.name, o.Feedback, tc.kind)
			}
			if o.Reference {
				if d != fx.ref {
					t.Fatal("a repair is not the reference patch")
				}
				repaired++
			}
		}
		rate := float64(repaired) / n
		rates[tc.name] = rate
		if tol := 4 * math.Sqrt(tc.p*(1-tc.p)/n); math.Abs(rate-tc.p) > tol {
			t.Errorf("%s: repair rate %.3f, want %.3f ± %.3f", tc.name, rate, tc.p, tol)
		}
	}
	for _, u := range []string{"timeout", "bare status", "patch failed", "no feedback"} {
		if rates["names target location"] < rates[u]+0.3 || rates["names target message"] < rates[u]+0.3 {
			t.Errorf("informative feedback repairs at %.3f/%.3f, %s at %.3f", rates["names target location"],
				rates["names target message"], u, rates[u])
		}
	}
}

func TestClassifyFeedbackDiagnostics(t *testing.T) {
	cases := []struct {
		in   string
		want policy.FeedbackKind
	}{
		{"Status: compile_error\nsrc/main.c:7:21: error[expected]: expected ';' before '}' token", policy.FeedbackDiagnostic},
		{"App.java:9: error: cannot find symbol", policy.FeedbackDiagnostic},
		{"  ./main.go:14:14: error[undefined]: undefined: nill", policy.FeedbackDiagnostic},
		{"x.c:3:1: fatal error: foo.h: No such file or directory", policy.FeedbackDiagnostic},
		// An excerpt that reads like a case is still a diagnostic.
		{"a.c:2:5: error: expected ';'\n  2 | int input = 1; int output = 2\ninput: x\nexpected 1\ngot: 2", policy.FeedbackDiagnostic},
		{"Status: patch_failed\nhunk 1 does not apply at src/main.c line 4", policy.FeedbackUninformative},
		{"x.c:3:1: warning: unused variable 'y'", policy.FeedbackUninformative},
		{"make: *** [Makefile:3: app] Error 1", policy.FeedbackUninformative},
		// Python feedback reads as before.
		{"compile_error: SyntaxError: expected ':'", policy.FeedbackError},
		{"  File \"solution.py\", line 3\n    def f(x)\n           ^\nSyntaxError: expected ':'", policy.FeedbackError},
	}
	for _, tc := range cases {
		if got := policy.ClassifyFeedback(tc.in); got != tc.want {
			t.Errorf("ClassifyFeedback(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

const sampleDiff = `diff --git a/src/main.c b/src/main.c
--- a/src/main.c
+++ b/src/main.c
@@ -6,3 +6,3 @@
     for (int i = 0; i < n; i++) {
-        sum += xs[i]
+        sum += xs[i];
     }
`

func TestExtractCodeDiff(t *testing.T) {
	trailingBlank := "--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n-x = 1\n+x = 2\n \n"
	cases := []struct{ name, in, want string }{
		{"diff fence after prose", "Here is a patch.\n\n```diff\n" + sampleDiff + "```\nThis adds the semicolon.\n", sampleDiff},
		{"patch tag", "```patch\n" + sampleDiff + "```", sampleDiff},
		{"udiff tag over longer python", "```python\nprint('a much longer block than the patch, really much longer')\n" +
			strings.Repeat("x = 1\n", 20) + "```\n```udiff\n" + sampleDiff + "```\n", sampleDiff},
		{"untagged diff over longer untagged text", "```\n" + strings.Repeat("some long explanation\n", 20) +
			"```\n```\n" + sampleDiff + "```\n", sampleDiff},
		{"untagged diff over python", "```python\nx = 1\n```\n```\n" + sampleDiff + "```\n", sampleDiff},
		{"c-tagged diff over python", "```c\n" + sampleDiff + "```\n```python\nx = 1\n```\n", sampleDiff},
		{"hunk only", "```\n@@ -6,3 +6,3 @@\n-a\n+b\n```", "@@ -6,3 +6,3 @@\n-a\n+b\n"},
		{"bare diff", sampleDiff, sampleDiff},
		{"unfenced after prose", "The fix:\n\n" + sampleDiff + "\nThat should compile now.\n", sampleDiff},
		{"unfenced from --- header", "Apply:\n" + strings.TrimPrefix(sampleDiff, "diff --git a/src/main.c b/src/main.c\n") + "\n\nDone.",
			strings.TrimPrefix(sampleDiff, "diff --git a/src/main.c b/src/main.c\n")},
		{"trailing blank context kept", "```diff\n" + trailingBlank + "```\n", trailingBlank},
		{"unfenced trailing blank context kept", trailingBlank + "\n", trailingBlank},
		{"unterminated diff fence", "Patch:\n```diff\n" + sampleDiff[:len(sampleDiff)-9], sampleDiff[:len(sampleDiff)-9] + "\n"},
		{"crlf", strings.ReplaceAll("```diff\n"+sampleDiff+"```\n", "\n", "\r\n"), sampleDiff},
		// Python replies read as before.
		{"python with separator lines", "def f():\n    \"\"\"\n--- a\n    \"\"\"\n    return 1\n", "def f():\n    \"\"\"\n--- a\n    \"\"\"\n    return 1\n"},
		{"python fence", "Here:\n```python\ndef f():\n    return 1\n```\nDone.", "def f():\n    return 1\n"},
		{"prefers python over shell", "```bash\nrun this long command please now\n```\n```py\nx = 1\n```", "x = 1\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := policy.ExtractCode(tc.in); got != tc.want {
				t.Fatalf("ExtractCode = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestCompileFixThroughGenerate: the root prompt asks for a diff, and the
// generate stage's candidates carry the simulated policy's name and the
// extracted diff, at the root and on refinement.
func TestCompileFixThroughGenerate(t *testing.T) {
	fx := cfFixtures()[1]
	task := fx.task()
	text := submit.RootPromptText(task)
	if !strings.Contains(text, "```diff") || strings.Contains(text, "python") || !strings.Contains(text, "unified diff") {
		t.Fatalf("root prompt does not ask for a diff:\n%s", text)
	}
	if py := submit.RootPromptText(&topics.Task{Kind: topics.KindPythonFunction, Prompt: "def f():\n"}); !strings.Contains(py, "```python") {
		t.Fatalf("python prompt changed:\n%s", py)
	}
	cfg := generate.DefaultConfig()
	cfg.InstanceID = "test"
	st, err := generate.NewStage(cfg, tasks.NewMemory([]topics.Task{*task}), topics.Catalog{Prefix: "t.", Partitions: 1}, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	root := cfRoot(t, task, 16)
	cands, err := st.Generate(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	refine := cfRefinement(root, "Status: compile_error\nmain.go:14:14: error[undefined]: undefined: nill\n", cands[0].Code)
	more, err := st.Generate(context.Background(), refine)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range append(cands, more...) {
		if c.Policy != policy.SimulatedName || c.InfraCause != "" {
			t.Fatalf("candidate policy %q infra %q", c.Policy, c.InfraCause)
		}
		if c.Code == "" || c.Code != policy.ExtractCode(c.ResponseText) || !strings.HasPrefix(c.Code, "diff --git a/") {
			t.Fatalf("candidate code is not the reply's diff:\n%s\n---\n%s", c.ResponseText, c.Code)
		}
	}
}

// TestCompileFixNothingToPatch: a task with neither files nor a reference
// gets replies without a diff rather than an error.
func TestCompileFixNothingToPatch(t *testing.T) {
	task := &topics.Task{TaskID: "cf/empty", Kind: topics.KindCompileFix, Prompt: "It does not build.",
		CompileFix: &topics.CompileFix{Targets: []topics.Diagnostic{{File: "a.c", Line: 1, Message: "x"}}}}
	pol := newSim(t, nil)
	p := cfRoot(t, task, 4)
	ss, err := pol.Generate(context.Background(), policy.Request{Prompt: p, Task: task, NodeIDs: cfIDs(p, 4)})
	if err != nil || len(ss) != 4 {
		t.Fatal(err)
	}
	for i, s := range ss {
		if o, _ := pol.Choose(p, task, cfIDs(p, 4)[i]); o.Mutation != policy.NoPatch || strings.Contains(s.Code, "@@") {
			t.Fatalf("sample %d: %s\n%s", i, o.Mutation, s.Text)
		}
	}
}

func TestSimulatedConfigValidateCompileFix(t *testing.T) {
	c := policy.DefaultSimulatedConfig()
	if c.PRepairDiagnostic <= c.PRepairUninformative {
		t.Fatalf("default p_repair_diagnostic %v is not above p_repair_uninformative %v", c.PRepairDiagnostic, c.PRepairUninformative)
	}
	c.PRepairDiagnostic = -0.1
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "p_repair_diagnostic") {
		t.Fatalf("p_repair_diagnostic < 0 accepted: %v", err)
	}
}
