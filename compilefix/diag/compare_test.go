package diag

import (
	"strings"
	"testing"

	"github.com/murphy-rl/murphy/topics"
)

// goBuild writes main.go into a fresh module and returns the parsed
// diagnostics of go build.
func goBuild(t *testing.T, gob, src string) []topics.Diagnostic {
	t.Helper()
	dir := tempRoot(t)
	writeFiles(t, dir, map[string]string{"go.mod": "module m\n\ngo 1.22\n", "main.go": src})
	return Parse("go", build(t, dir, goEnv, gob, "build", "."), dir)
}

const compareBase = `package main

import "fmt"

func main() {
	fmt.Println(total(3))
	fmt.Println(missing)
}

func total(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += i
	}
	return s + undefinedHelper(n)
}
`

// TestCompareGo compares real go builds of a baseline with two errors and
// candidate patches, against targets as a CI log would give them (an
// absolute CI path; a line of 0 and a part of the message).
func TestCompareGo(t *testing.T) {
	gob := lookTool(t, "go")
	baseline := goBuild(t, gob, compareBase)
	check(t, baseline, []want{
		{SeverityError, "main.go", 7, 14, "", "undefined: missing"},
		{SeverityError, "main.go", 15, 13, "", "undefined: undefinedHelper"},
	})
	targets := []topics.Diagnostic{
		{Tool: "go", File: "/home/runner/work/m/m/main.go", Line: 7, Column: 14, Message: "undefined: missing"},
		{Tool: "go", File: "main.go", Message: "undefinedHelper"},
	}
	cases := []struct {
		name      string
		src       string
		fixed     []int // indexes into targets
		remaining []int // patched lines of the remaining targets
		newErrs   []string
	}{
		{
			name:  "both fixed",
			src:   strings.Replace(compareBase, "func total", "var missing = 1\n\nfunc undefinedHelper(n int) int { return n }\n\nfunc total", 1),
			fixed: []int{0, 1},
		},
		{
			name:      "shifted by a comment",
			src:       strings.Replace(compareBase, "package main\n", "// Package main.\n//\n// It prints.\npackage main\n", 1),
			remaining: []int{10, 18},
		},
		{
			name:      "one fixed, one new error",
			src:       strings.Replace(compareBase, "fmt.Println(missing)", "var missing string = 1\n\tfmt.Println(missing)", 1),
			fixed:     []int{0},
			remaining: []int{16},
			newErrs:   []string{"cannot use 1 (untyped int constant) as string value"},
		},
		{
			name:      "moved below",
			src:       strings.Replace(compareBase, "\tfmt.Println(missing)\n", "", 1) + "\nfunc later() { _ = missing }\n",
			remaining: []int{17, 14},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			patched := goBuild(t, gob, c.src)
			cmp := Compare(targets, baseline, patched)
			if len(cmp.FixedTargets) != len(c.fixed) {
				t.Errorf("fixed %d, want %d:%s", len(cmp.FixedTargets), len(c.fixed), showAll(cmp.FixedTargets))
			}
			for k, i := range c.fixed {
				if k < len(cmp.FixedTargets) && cmp.FixedTargets[k] != targets[i] {
					t.Errorf("fixed %d: %s, want %s", k, show(cmp.FixedTargets[k]), show(targets[i]))
				}
			}
			if len(cmp.RemainingTargets) != len(c.remaining) {
				t.Errorf("remaining %d, want %d:%s", len(cmp.RemainingTargets), len(c.remaining), showAll(cmp.RemainingTargets))
			}
			for k, line := range c.remaining {
				if k < len(cmp.RemainingTargets) && (cmp.RemainingTargets[k].Line != line || cmp.RemainingTargets[k].File != "main.go") {
					t.Errorf("remaining %d: %s, want main.go:%d", k, show(cmp.RemainingTargets[k]), line)
				}
			}
			if len(cmp.New) != len(c.newErrs) {
				t.Errorf("new %d, want %d:%s", len(cmp.New), len(c.newErrs), showAll(cmp.New))
			}
			for k, m := range c.newErrs {
				if k < len(cmp.New) && !strings.Contains(cmp.New[k].Message, m) {
					t.Errorf("new %d: %s, want %q", k, show(cmp.New[k]), m)
				}
			}
		})
	}
}

// TestCompareDuplicates: the same message on several lines. The patch
// inserts lines at the top and removes the first use; the shift the
// unique error shows tells which use is gone.
func TestCompareDuplicates(t *testing.T) {
	gob := lookTool(t, "go")
	src := "package main\n\nfunc main() {\n\t_ = foo\n\t_ = unique1\n\t_ = foo\n}\n"
	baseline := goBuild(t, gob, src)
	check(t, baseline, []want{
		{SeverityError, "main.go", 4, 6, "", "undefined: foo"},
		{SeverityError, "main.go", 5, 6, "", "undefined: unique1"},
		{SeverityError, "main.go", 6, 6, "", "undefined: foo"},
	})
	patchedSrc := "package main\n\n// one\n// two\n// three\n\nfunc main() {\n\t_ = unique1\n\t_ = foo\n}\n"
	patched := goBuild(t, gob, patchedSrc)
	targets := []topics.Diagnostic{baseline[0], baseline[2]}
	cmp := Compare(targets, baseline, patched)
	if len(cmp.FixedTargets) != 1 || cmp.FixedTargets[0].Line != 4 {
		t.Errorf("fixed:%s", showAll(cmp.FixedTargets))
	}
	if len(cmp.RemainingTargets) != 1 || cmp.RemainingTargets[0].Line != 9 {
		t.Errorf("remaining:%s", showAll(cmp.RemainingTargets))
	}
	if len(cmp.New) != 0 {
		t.Errorf("new:%s", showAll(cmp.New))
	}
}

// TestCompareGCC uses real gcc output (curly quotes) against targets with
// ASCII quotes and no line.
func TestCompareGCC(t *testing.T) {
	gcc := lookTool(t, "gcc")
	run := func(src string) []topics.Diagnostic {
		dir := tempRoot(t)
		writeFiles(t, dir, map[string]string{"src/a.c": src})
		return Parse("gcc", build(t, dir, utf8Env, gcc, "-Wall", "-c", "src/a.c", "-o", "/dev/null"), dir)
	}
	base := "struct s { int a; };\nint f(struct s *p) {\n    return p->b;\n}\nint g(void) { return undeclared_v; }\n"
	baseline := run(base)
	targets := []topics.Diagnostic{
		{Tool: "gcc", File: "src/a.c", Message: "'struct s' has no member named 'b'"},
		{Tool: "gcc", File: "/work/src/a.c", Line: 5, Message: "error: 'undeclared_v' undeclared (first use in this function)"},
	}
	// Fix the member, move g down by two lines.
	patched := run(strings.Replace(strings.Replace(base, "p->b", "p->a", 1), "int g", "\n\nint g", 1))
	cmp := Compare(targets, baseline, patched)
	if len(cmp.FixedTargets) != 1 || cmp.FixedTargets[0] != targets[0] {
		t.Errorf("fixed:%s", showAll(cmp.FixedTargets))
	}
	if len(cmp.RemainingTargets) != 1 || cmp.RemainingTargets[0].Line != 7 {
		t.Errorf("remaining:%s", showAll(cmp.RemainingTargets))
	}
	if len(cmp.New) != 0 {
		t.Errorf("new:%s", showAll(cmp.New))
	}
	// A warning the patch adds is not a new error.
	patched = run(strings.Replace(base, "p->b", "p->a", 1) + "static int unused_fn(void) { return 0; }\n")
	if cmp := Compare(targets, baseline, patched); len(cmp.New) != 0 {
		t.Errorf("warning counted as new:%s", showAll(cmp.New))
	}
}

// TestCompareTargetNotInBaseline: a target the baseline build does not
// reproduce is looked for in the patched build directly, and not counted
// as new there too.
func TestCompareTargetNotInBaseline(t *testing.T) {
	target := topics.Diagnostic{File: "a.go", Line: 3, Message: "undefined: x"}
	patched := []topics.Diagnostic{{Severity: "error", File: "a.go", Line: 3, Column: 2, Message: "undefined: x"}}
	cmp := Compare([]topics.Diagnostic{target}, nil, patched)
	if len(cmp.RemainingTargets) != 1 || len(cmp.New) != 0 || len(cmp.FixedTargets) != 0 {
		t.Errorf("%+v", cmp)
	}
	cmp = Compare([]topics.Diagnostic{target}, nil, nil)
	if len(cmp.FixedTargets) != 1 {
		t.Errorf("%+v", cmp)
	}
}

func TestMatch(t *testing.T) {
	d := func(file string, line int, code, msg string) topics.Diagnostic {
		return topics.Diagnostic{Severity: "error", File: file, Line: line, Code: code, Message: msg}
	}
	base := d("src/a.c", 10, "", "implicit declaration of function ‘foo’")
	for _, c := range []struct {
		name string
		b    topics.Diagnostic
		want bool
	}{
		{"identical", base, true},
		{"ascii quotes", d("src/a.c", 10, "", "implicit declaration of function 'foo'"), true},
		{"backtick quotes", d("src/a.c", 10, "", "implicit declaration of function `foo'"), true},
		{"absolute path", d("/work/src/a.c", 10, "", "implicit declaration of function 'foo'"), true},
		{"base name", d("a.c", 10, "", "implicit declaration of function 'foo'"), true},
		{"other directory", d("lib/a.c", 10, "", "implicit declaration of function 'foo'"), false},
		{"other file", d("src/b.c", 10, "", "implicit declaration of function 'foo'"), false},
		{"shifted within tolerance", d("src/a.c", 18, "", "implicit declaration of function 'foo'"), true},
		{"far away", d("src/a.c", 40, "", "implicit declaration of function 'foo'"), false},
		{"line unknown", d("src/a.c", 0, "", "implicit declaration of function 'foo'"), true},
		{"substring", d("src/a.c", 0, "", "declaration of function 'foo'"), true},
		{"with prefix and flag", d("src/a.c", 10, "", "error: implicit declaration of function 'foo' [-Wimplicit-function-declaration]"), true},
		{"other name", d("src/a.c", 10, "", "implicit declaration of function 'foobar'"), false},
		{"short part", d("src/a.c", 10, "", "foo"), false},
		{"warning", topics.Diagnostic{Severity: "warning", File: "src/a.c", Line: 10, Message: "implicit declaration of function 'foo'"}, false},
		{"severity unknown", topics.Diagnostic{File: "src/a.c", Line: 10, Message: "implicit declaration of function 'foo'"}, true},
		{"no file", d("", 0, "", "implicit declaration of function 'foo'"), true},
	} {
		if got := Match(base, c.b); got != c.want {
			t.Errorf("%s: Match = %v, want %v", c.name, got, c.want)
		}
		if got := Match(c.b, base); got != c.want {
			t.Errorf("%s (reversed): Match = %v, want %v", c.name, got, c.want)
		}
	}
	ts := d("src/a.ts", 3, "TS2322", "Type 'string' is not assignable to type 'number'.")
	for _, c := range []struct {
		name string
		b    topics.Diagnostic
		want bool
	}{
		{"same code, other types, same place", d("src/a.ts", 4, "TS2322", "Type 'boolean' is not assignable to type 'number'."), true},
		{"same code, far", d("src/a.ts", 9, "TS2322", "Type 'boolean' is not assignable to type 'number'."), false},
		{"other code", d("src/a.ts", 3, "TS2304", "Type 'string' is not assignable to type 'number'."), false},
		{"code missing", d("src/a.ts", 3, "", "error TS2322: Type 'string' is not assignable to type 'number'"), true},
		{"code case", d("src/a.ts", 3, "ts2322", "Type 'string' is not assignable to type 'number'"), true},
	} {
		if got := Match(ts, c.b); got != c.want {
			t.Errorf("%s: Match = %v, want %v", c.name, got, c.want)
		}
	}
	py := topics.Diagnostic{Severity: "error", File: "x.py", Line: 3, Code: "SyntaxError", Message: "invalid syntax"}
	if !Match(py, topics.Diagnostic{File: "./x.py", Line: 3, Message: "SyntaxError: invalid syntax"}) {
		t.Error("python target with the class in the message")
	}
}

func TestNormalizeMessage(t *testing.T) {
	for _, c := range []struct{ msg, code, want string }{
		{"implicit declaration of function ‘foo’ [-Wimplicit-function-declaration]", "", "implicit declaration of function 'foo'"},
		{"error[E0425]: cannot find value `y` in this scope", "E0425", "cannot find value 'y' in this scope"},
		{"error TS2304: Cannot find name 'x'.", "", "cannot find name 'x'"},
		{"SyntaxError: invalid syntax", "SyntaxError", "invalid syntax"},
		{"fatal error: missing.h: No such file or directory", "", "missing.h: no such file or directory"},
		{"cannot find symbol\n  symbol:   class Missing", "", "cannot find symbol symbol: class missing"},
		{"\x1b[01;31mundefined: “foo”\x1b[m", "", "undefined: 'foo'"},
	} {
		if got := NormalizeMessage(c.msg, c.code); got != c.want {
			t.Errorf("NormalizeMessage(%q) = %q, want %q", c.msg, got, c.want)
		}
	}
}

func TestErrorsInScope(t *testing.T) {
	ds := []topics.Diagnostic{
		{Severity: "error", File: "src/a.c"},
		{Severity: "warning", File: "src/b.c"},
		{Severity: "note", File: "lib/c.c"},
		{Severity: "error", File: "lib/d.c"},
		{Severity: "error", Message: "linker"},
	}
	if got := Errors(ds); len(got) != 3 || got[1].File != "lib/d.c" {
		t.Errorf("Errors:%s", showAll(got))
	}
	if got := InScope(ds, []string{"src/", "./lib/d.c"}); len(got) != 4 {
		t.Errorf("InScope:%s", showAll(got))
	}
	if got := InScope(ds, []string{"sr"}); len(got) != 1 {
		t.Errorf("InScope partial component:%s", showAll(got))
	}
	if got := InScope(ds, nil); len(got) != len(ds) {
		t.Errorf("InScope nil:%s", showAll(got))
	}
}
