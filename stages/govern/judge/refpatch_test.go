package judge

import (
	"context"
	"testing"

	"github.com/murphy-rl/murphy/topics"
)

// udiff builds a one-file unified diff of path from hunks (each a header
// line's body after "@@ " plus its lines).
func udiff(path string, hunks ...string) string {
	s := "--- a/" + path + "\n+++ b/" + path + "\n"
	for _, h := range hunks {
		s += h
	}
	return s
}

// TestPatchesEquivalentTokens: patches are compared token by token, whatever
// their spacing, line wrapping, trailing commas, comments, hunk order and
// context; a real difference in code, strings or Python indentation is not
// equivalent.
func TestPatchesEquivalentTokens(t *testing.T) {
	const ref = "--- a/add.py\n+++ b/add.py\n@@ -1,3 +1,3 @@\n def add(a, b):\n-    return a - b\n+    return f(a, b)\n \n"
	twoHunks := udiff("calc.py",
		"@@ -1,3 +1,3 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n \n",
		"@@ -10,3 +10,3 @@\n def mul(a, b):\n-    return a + b\n+    return a * b\n \n")
	cases := []struct {
		name string
		a, b string
		want bool
	}{
		{"spacing around operators",
			udiff("add.py", "@@ -2 +2 @@\n-    return a-b\n+    return a+b\n"),
			udiff("add.py", "@@ -2 +2 @@\n-    return a - b\n+    return a + b\n"), true},
		{"trailing comma in a call",
			ref, udiff("add.py", "@@ -1,3 +1,3 @@\n def add(a, b):\n-    return a - b\n+    return f(a, b,)\n \n"), true},
		{"trailing comma in a list",
			udiff("x.py", "@@ -1 +1 @@\n-xs = [1, 2]\n+xs = [1, 2, 3]\n"),
			udiff("x.py", "@@ -1 +1 @@\n-xs = [1, 2,]\n+xs = [\n+    1,\n+    2,\n+    3,\n+]\n"), true},
		{"line wrapping inside brackets",
			ref, udiff("add.py", "@@ -1,3 +1,4 @@\n def add(a, b):\n-    return a - b\n+    return f(a,\n+             b)\n \n"), true},
		{"python comment",
			ref, udiff("add.py", "@@ -1,3 +1,4 @@\n def add(a, b):\n-    return a - b  # wrong sign\n+    # call f, as the task asks\n+    return f(a, b)  # fixed\n \n"), true},
		{"C block and line comments",
			udiff("src/add.c", "@@ -3,3 +3,3 @@\n int add(int a, int b) {\n-  return a - b;\n+  return a + b;\n }\n"),
			udiff("src/add.c", "@@ -3,3 +3,4 @@\n int add(int a, int b) {\n-  return a - b; /* bug */\n+  // the sum, not the difference\n+  return a /* left */ + b;\n }\n"), true},
		{"Go comments and gofmt spacing",
			udiff("add.go", "@@ -1,3 +1,3 @@\n func add(a, b int) int {\n-\treturn a - b\n+\treturn a + b\n }\n"),
			udiff("add.go", "@@ -1,3 +1,3 @@\n func add(a, b int) int {\n-\treturn a-b\n+\treturn a+b // fixed\n }\n"), true},
		{"hunk order", twoHunks, udiff("calc.py",
			"@@ -10,3 +10,3 @@\n def mul(a, b):\n-    return a + b\n+    return a * b\n \n",
			"@@ -1,3 +1,3 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n \n"), true},
		{"context lines and line numbers", twoHunks, udiff("calc.py",
			"@@ -2 +2 @@\n-    return a - b\n+    return a + b\n",
			"@@ -8,4 +8,4 @@\n \n \n def mul(a, b):\n-    return a + b\n+    return a * b\n"), true},
		{"one hunk or two", twoHunks, udiff("calc.py",
			"@@ -1,11 +1,11 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n \n \n \n \n \n \n \n def mul(a, b):\n-    return a + b\n+    return a * b\n"), true},
		{"git headers and a/ b/ prefixes", ref, "diff --git a/add.py b/add.py\nindex 83db48f..bf269f4 100644\n" + ref, true},

		{"different operator",
			udiff("add.py", "@@ -2 +2 @@\n-    return a - b\n+    return a + b\n"),
			udiff("add.py", "@@ -2 +2 @@\n-    return a - b\n+    return a * b\n"), false},
		{"python floor division is not a comment",
			udiff("div.py", "@@ -2 +2 @@\n-    return a / b\n+    return a // b\n"),
			udiff("div.py", "@@ -2 +2 @@\n-    return a / b\n+    return a\n"), false},
		{"C preprocessor lines are code",
			udiff("a.c", "@@ -1 +1 @@\n-#include <a.h>\n+#include <b.h>\n"),
			udiff("a.c", "@@ -1 +1 @@\n-#include <a.h>\n+#include <c.h>\n"), false},
		{"python indentation",
			udiff("f.py", "@@ -1,3 +1,3 @@\n if ok:\n     run()\n-stop()\n+    stop(1)\n"),
			udiff("f.py", "@@ -1,3 +1,3 @@\n if ok:\n     run()\n-stop()\n+stop(1)\n"), false},
		{"string contents",
			udiff("s.py", "@@ -1 +1 @@\n-x = 'a b'\n+x = 'a c'\n"),
			udiff("s.py", "@@ -1 +1 @@\n-x = 'a b'\n+x = 'a  c'\n"), false},
		{"a one-element tuple keeps its comma",
			udiff("t.py", "@@ -1 +1 @@\n-x = a\n+x = (a,)\n"),
			udiff("t.py", "@@ -1 +1 @@\n-x = a\n+x = (a)\n"), false},
		{"another file", ref, "--- a/sub.py\n+++ b/sub.py\n@@ -1,3 +1,3 @@\n def add(a, b):\n-    return a - b\n+    return f(a, b)\n \n", false},
		{"a hunk missing", twoHunks, udiff("calc.py", "@@ -1,3 +1,3 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n \n"), false},
		{"the same change at another place",
			udiff("calc.py", "@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n"),
			udiff("calc.py", "@@ -5,2 +5,2 @@\n def sub(a, b):\n-    return a - b\n+    return a + b\n"), false},

		{"whole programs: formatting and comments",
			"def add(a, b):\n    # sum\n    return a+b\n",
			"def add(a,b):\n\n    return a + b  # the sum\n", true},
		{"whole programs: different code",
			"def add(a, b):\n    return a + b\n", "def add(a, b):\n    return b + a\n", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := PatchesEquivalent(tc.a, tc.b); got != tc.want {
				t.Errorf("PatchesEquivalent = %v, want %v\n--- a\n%s--- b\n%s", got, tc.want, tc.a, tc.b)
			}
			if got := PatchesEquivalent(tc.b, tc.a); got != tc.want {
				t.Errorf("PatchesEquivalent (swapped) = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestReferencePatchWholeProgram: a whole-program candidate is compared with
// the program the reference patch makes (here the task's reference
// solution), token by token.
func TestReferencePatchWholeProgram(t *testing.T) {
	const patch = "--- a/add.py\n+++ b/add.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n"
	task := testTask()
	task.Kind, task.ReferencePatch = topics.KindCompileFix, patch
	j := ReferencePatch{MismatchAbstains: false}
	for _, tc := range []struct {
		code string
		want Verdict
	}{
		{"def add(a,b):\n    return a+b  # fixed\n", Correct},
		{"def add(a, b):\n    return a - b\n", Wrong},
		{"def add(a, b):\n    return sum((a, b))\n", Wrong},
	} {
		v, err := j.Judge(context.Background(), task, execution(func(e *topics.Execution) { e.Code = tc.code }))
		if err != nil || v != tc.want {
			t.Errorf("%q: %v %v, want %v", tc.code, v, err, tc.want)
		}
	}
	// Without any program the patch could be applied to, a whole program
	// cannot be compared with a patch: abstain, whatever mismatch_abstains.
	task.Reference = ""
	v, err := j.Judge(context.Background(), task, execution(func(e *topics.Execution) { e.Code = "def add(a, b):\n    return a + b\n" }))
	if err != nil || v != Abstain {
		t.Errorf("nothing to apply the reference to: %v %v, want abstain", v, err)
	}
}

// TestReferencePatchApplies: where the original program is known (the
// judge's Original, or the reference solution with the reference patch
// undone), patches are compared by what they make of it, token by token.
func TestReferencePatchApplies(t *testing.T) {
	const original = "def f():\n    return 1\n\n\ndef g():\n    return 2\n"
	const fixed = "def g():\n    return 2\n\n\ndef f():\n    return 1\n"
	// The reference moves g up; the candidate moves f down (zero-context
	// hunks, as diff -U0 writes them): different edits, the same program.
	const refPatch = "--- a/m.py\n+++ b/m.py\n@@ -1,6 +1,6 @@\n+def g():\n+    return 2\n+\n+\n def f():\n     return 1\n-\n-\n-def g():\n-    return 2\n"
	const candPatch = "--- a/m.py\n+++ b/m.py\n@@ -1,4 +0,0 @@\n-def f():\n-    return 1\n-\n-\n@@ -6,0 +3,4 @@\n+\n+\n+def f():\n+    return 1\n"
	// The reference with the wrong line numbers a model might write.
	const sloppyRef = "--- a/m.py\n+++ b/m.py\n@@ -40,3 +40,3 @@\n def g():\n-    return 2\n+    return 3\n"
	if PatchesEquivalent(refPatch, candPatch) {
		t.Fatal("the test needs patches whose edits differ")
	}
	orig := func(*topics.Task, *topics.Execution) string { return original }
	cases := []struct {
		name      string
		refPatch  string
		reference string // Task.Reference
		original  func(*topics.Task, *topics.Execution) string
		code      string
		want      Verdict
	}{
		{"diffs, original given", refPatch, "", orig, candPatch, Correct},
		{"diffs, original from the reference solution", refPatch, fixed, nil, candPatch, Correct},
		{"diffs, no original: compared as diffs", refPatch, "", nil, candPatch, Wrong},
		{"program against a diff, original given", refPatch, "", orig, "def g():\n    return 2\n\ndef f():  # moved\n    return 1\n", Correct},
		{"program against a diff, wrong", refPatch, "", orig, original, Wrong},
		{"diff against a whole reference program", fixed, "", orig, candPatch, Correct},
		{"diff against a whole reference program, wrong", fixed, "", orig, "--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n def f():\n-    return 1\n+    return 2\n", Wrong},
		{"diff against a whole program, no original", fixed, "", nil, candPatch, Abstain},
		{"lenient application", sloppyRef, "", orig, "def f():\n    return 1\n\n\ndef g():\n    return 3\n", Correct},
		{"a reference solution the patch does not fit is not used", refPatch, "def g():\n    return 7\n", nil, fixed, Abstain},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			task := testTask()
			task.Kind, task.ReferencePatch, task.Reference = topics.KindCompileFix, tc.refPatch, tc.reference
			j := ReferencePatch{Original: tc.original}
			v, err := j.Judge(context.Background(), task, execution(func(e *topics.Execution) { e.Code = tc.code }))
			if err != nil || v != tc.want {
				t.Fatalf("verdict %v (%v), want %v", v, err, tc.want)
			}
		})
	}
}

// FuzzPatchesEquivalent: any text compares without panicking, and equal to
// itself.
func FuzzPatchesEquivalent(f *testing.F) {
	f.Add("--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-x = 'a\n+x = \"\"\"b\n", "def f(:\n\t  return (a,)\n")
	f.Add("--- a/x.c\n+++ b/x.c\n@@ -1,2 +1,2 @@\n /* open\n-int x = 1;\n+int x = 2; // \\\n", "@@\n+++ \n--- \n")
	f.Add("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -3,0 +4 @@\n+`raw\n", "")
	f.Fuzz(func(t *testing.T, a, b string) {
		if !PatchesEquivalent(a, a) {
			t.Fatalf("%q is not equivalent to itself", a)
		}
		PatchesEquivalent(a, b)
		task := &topics.Task{TaskID: "t", Kind: topics.KindCompileFix, ReferencePatch: a, Reference: b}
		compareWithReference(task, b, a)
	})
}

func testTask() *topics.Task {
	return &topics.Task{
		SchemaVersion: topics.SchemaVersion, TaskID: "t1", Kind: topics.KindPythonFunction,
		Prompt:    "def add(a, b):\n    \"\"\"Return the sum of a and b.\"\"\"\n",
		Reference: "def add(a, b):\n    return a + b\n",
	}
}

func execution(mut func(*topics.Execution)) *topics.Execution {
	ex := &topics.Execution{Status: topics.StatusPassed, TestsPassed: 1, TestsTotal: 1}
	ex.TaskID = "t1"
	mut(ex)
	return ex
}
