package diag

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/murphy-rl/murphy/topics"
)

// utf8Env makes gcc print its ‘curly’ quotes; targets in the tests use
// ASCII ones and match through NormalizeMessage.
var utf8Env = []string{"LC_ALL=C.UTF-8", "LANG=C.UTF-8"}

// TestParseGCCMake builds a Makefile with make -k: a missing header
// (fatal error), a syntax error and an unused function warning, an
// implicit declaration warning and linker errors without and with debug
// information. make's "*** [...] Error 1" lines, gcc's "In function" and
// "At top level" context and collect2's summary are no diagnostics.
func TestParseGCCMake(t *testing.T) {
	lookTool(t, "gcc")
	mk := lookTool(t, "make")
	dir := tempRoot(t)
	writeFiles(t, dir, map[string]string{
		"Makefile": "all: a.o b c cg\n" +
			"a.o: a.c\n\tgcc -Wall -c a.c\n" +
			"b: b.c\n\tgcc -Wall -Wextra -o b b.c\n" +
			"c: c.c\n\tgcc -Wall -o c c.c\n" +
			"cg: cg.c\n\tgcc -g -o cg cg.c\n",
		"a.c": "#include <stdio.h>\n#include \"missing.h\"\n",
		"b.c": "#include <stdio.h>\nint bar(int);\nstatic int unused(void) { return 1; }\n" +
			"int main(void) {\n    int x = 1\n    printf(\"%d\\n\", x);\n    return bar(x);\n}\n",
		"c.c":  "int bar(int);\nint main(void) { return bar(1) + baz(); }\n",
		"cg.c": "int qux(void);\nint main(void) {\n    return qux();\n}\n",
	})
	out := build(t, dir, utf8Env, mk, "-k")
	wants := []want{
		{SeverityError, "a.c", 2, 10, "", "missing.h: No such file or directory"},
		{SeverityError, "b.c", 6, 5, "", "expected ',' or ';' before 'printf'"},
		{SeverityWarning, "b.c", 3, 12, "-Wunused-function", "'unused' defined but not used"},
		{SeverityWarning, "c.c", 2, 34, "-Wimplicit-function-declaration", "implicit declaration of function 'baz'"},
		{SeverityError, "c.c", 0, 0, "", "undefined reference to 'bar'"},
		{SeverityError, "c.c", 0, 0, "", "undefined reference to 'baz'"},
		{SeverityError, "cg.c", 3, 0, "", "undefined reference to 'qux'"},
	}
	for _, hint := range []string{"make", "gcc", ""} {
		t.Run("hint="+hint, func(t *testing.T) {
			got := Parse(hint, out, dir)
			check(t, got, wants)
			checkTools(t, got, ToolGCC)
		})
	}
	// The same build seen from outside the root: paths stay as given.
	got := Parse("make", out, "/elsewhere")
	if len(got) == 0 || got[len(got)-1].File != filepath.Join(dir, "cg.c") {
		t.Errorf("outside the root: %s", showAll(got))
	}
}

// TestParseMakeSubdir follows make's "Entering directory" messages: gcc
// names files relative to the sub-make's directory.
func TestParseMakeSubdir(t *testing.T) {
	lookTool(t, "gcc")
	mk := lookTool(t, "make")
	dir := tempRoot(t)
	writeFiles(t, dir, map[string]string{
		"Makefile":      "all:\n\t$(MAKE) -C lib\n\tgcc -c top.c\n",
		"top.c":         "int f(void) { return undefined_top; }\n",
		"lib/Makefile":  "all:\n\tgcc -c x.c\n",
		"lib/x.c":       "int g(void) { return undefined_x; }\n",
		"lib/unused.md": "",
	})
	out := build(t, dir, utf8Env, mk, "-k")
	x := []want{
		{SeverityError, "lib/x.c", 1, 22, "", "'undefined_x' undeclared"},
		{SeverityNote, "lib/x.c", 1, 22, "", "each undeclared identifier is reported only once"},
	}
	check(t, Parse("make", out, dir), x)
	// make stops at the failing sub-make; after it has left lib/, names
	// are relative to the top again.
	out = append(out, build(t, dir, utf8Env, "gcc", "-c", "top.c")...)
	check(t, Parse("make", out, dir), append(x,
		want{SeverityError, "top.c", 1, 22, "", "'undefined_top' undeclared"},
		want{SeverityNote, "top.c", 1, 22, "", "each undeclared identifier is reported only once"},
	))
}

// TestParseGCCColorCRLF: colour escapes and CRLF line ends parse the same
// as plain output.
func TestParseGCCColorCRLF(t *testing.T) {
	gcc := lookTool(t, "gcc")
	dir := tempRoot(t)
	writeFiles(t, dir, map[string]string{
		"b.c": "static int unused(void) { return 1; }\nint main(void) {\n    int x = 1\n    return x;\n}\n",
	})
	plain := build(t, dir, utf8Env, gcc, "-Wall", "-c", "b.c")
	color := build(t, dir, utf8Env, gcc, "-Wall", "-fdiagnostics-color=always", "-fdiagnostics-urls=always", "-c", "b.c")
	if !bytes.Contains(color, []byte("\x1b[")) {
		t.Fatalf("no escapes in coloured output")
	}
	crlf := bytes.ReplaceAll(color, []byte("\n"), []byte("\r\n"))
	base := Parse("gcc", plain, dir)
	check(t, base, []want{
		{SeverityError, "b.c", 4, 5, "", "expected ',' or ';' before 'return'"},
		{SeverityWarning, "b.c", 3, 9, "-Wunused-variable", "unused variable 'x'"},
		{SeverityWarning, "b.c", 1, 12, "-Wunused-function", "'unused' defined but not used"},
	})
	sameDiagnostics(t, "coloured", base, Parse("gcc", color, dir))
	sameDiagnostics(t, "coloured CRLF", base, Parse("", crlf, dir))
}

// TestParseClangGolden reads recorded clang 14 output (testdata/README.md):
// fatal error, -Werror brackets, ld.lld's ">>> referenced by" location,
// GNU ld through clang, notes in system headers outside the root, and
// clang's "N errors generated" and "linker command failed" summaries.
func TestParseClangGolden(t *testing.T) {
	out := readTestdata(t, "clang.txt")
	wants := []want{
		{SeverityError, "a.c", 2, 10, "", "'missing.h' file not found"},
		{SeverityError, "b.c", 5, 14, "", "expected ';' at end of declaration"},
		{SeverityError, "b.c", 7, 12, "-Wimplicit-function-declaration", "implicit declaration of function 'undeclared'"},
		{SeverityError, "c.c", 2, 0, "", "undefined symbol: bar"},
		{SeverityError, "c.c", 0, 0, "", "undefined reference to `bar'"},
		{SeverityError, "d.cpp", 2, 36, "", "no matching member function for call to 'push_back'"},
		{SeverityNote, "/usr/include/c++/12/bits/stl_vector.h", 1276, 7, "", "candidate function not viable"},
		{SeverityNote, "/usr/include/c++/12/bits/stl_vector.h", 1293, 7, "", "candidate function not viable"},
	}
	for _, hint := range []string{"clang", ""} {
		got := Parse(hint, out, "/work")
		check(t, got, wants)
		checkTools(t, got, ToolClang)
	}
	got := Parse("", readTestdata(t, "clang-color.txt"), "/work")
	check(t, got, []want{{SeverityWarning, "e.c", 2, 9, "-Wunused-variable", "unused variable 'unused'"}})
}

// TestParseClangReal runs clang where it is installed.
func TestParseClangReal(t *testing.T) {
	clang := lookTool(t, "clang")
	dir := tempRoot(t)
	writeFiles(t, dir, map[string]string{
		"src/m.c": "int main(void) {\n    int unused;\n    return missing_fn(1);\n}\n",
	})
	out := build(t, dir, nil, clang, "-Wall", "-c", "src/m.c", "-o", "/dev/null")
	got := Parse("", out, dir)
	found := false
	for _, d := range got {
		if d.Tool != ToolClang {
			t.Errorf("tool: %s", show(d))
		}
		// an error from clang 15 on, a warning before
		found = found || d.File == "src/m.c" && d.Line == 3 && d.Column == 12 && strings.Contains(d.Message, "missing_fn") &&
			d.Code == "-Wimplicit-function-declaration"
	}
	if !found {
		t.Errorf("no implicit declaration at src/m.c:3:12:%s", showAll(got))
	}
}

// goEnv builds a scratch module on its own, with the shared build cache.
var goEnv = []string{"GOWORK=off", "GO111MODULE=on", "GOTOOLCHAIN=local", "GOPROXY=off", "GOFLAGS=-mod=mod"}

// TestParseGo runs go build, go build -json and go vet on a module with
// errors in two packages, and a file with more than ten errors ("too many
// errors" is no diagnostic). "# pkg" headers and vet's "vet: " prefix are
// handled.
func TestParseGo(t *testing.T) {
	gob := lookTool(t, "go")
	dir := tempRoot(t)
	writeFiles(t, dir, map[string]string{
		"go.mod": "module example.com/broken\n\ngo 1.22\n",
		"main.go": "package main\n\nimport (\n\t\"fmt\"\n\t\"os\"\n)\n\nfunc main() {\n" +
			"\tx := 1\n\tfmt.Println(foo)\n\tvar s string = 3\n}\n",
		"sub/s.go": "package sub\n\nfunc F() int {\n\treturn \"x\"\n}\n",
	})
	env := goEnv
	wants := []want{
		{SeverityError, "main.go", 5, 2, "", `"os" imported and not used`},
		{SeverityError, "main.go", 9, 2, "", "declared and not used: x"},
		{SeverityError, "main.go", 10, 14, "", "undefined: foo"},
		{SeverityError, "main.go", 11, 6, "", "declared and not used: s"},
		{SeverityError, "main.go", 11, 17, "", "cannot use 3 (untyped int constant) as string value"},
		{SeverityError, "sub/s.go", 4, 9, "", `cannot use "x" (untyped string constant) as int value`},
	}
	out := build(t, dir, env, gob, "build", "./...")
	for _, hint := range []string{"go", ""} {
		got := Parse(hint, out, dir)
		checkUnordered(t, got, wants)
		checkTools(t, got, ToolGo)
	}
	checkUnordered(t, Parse("go", build(t, dir, env, gob, "build", "-json", "./..."), dir), wants)

	vet := Parse("go", build(t, dir, env, gob, "vet", "./..."), dir)
	for _, d := range vet {
		if strings.HasPrefix(d.File, "vet") || d.Severity != SeverityError || d.Line == 0 {
			t.Errorf("vet: %s", show(d))
		}
	}
	if !containsDiag(vet, "sub/s.go", 4) || !containsDiag(vet, "main.go", 10) {
		t.Errorf("vet: %s", showAll(vet))
	}

	// A vet finding in code that compiles.
	writeFiles(t, dir, map[string]string{
		"sub/s.go": "package sub\n\nimport \"fmt\"\n\nfunc G() { fmt.Printf(\"%d\\n\", \"s\") }\n",
	})
	check(t, Parse("go", build(t, dir, env, gob, "vet", "./sub/"), dir), []want{
		{SeverityError, "sub/s.go", 5, 24, "", `fmt.Printf format %d has arg "s" of wrong type string`},
	})

	// More than ten errors.
	var b strings.Builder
	b.WriteString("package main\nfunc main() {\n")
	for i := 1; i <= 14; i++ {
		b.WriteString("\t_ = undefined" + string(rune('a'+i)) + "\n")
	}
	b.WriteString("}\n")
	many := tempRoot(t)
	writeFiles(t, many, map[string]string{"go.mod": "module m\n\ngo 1.22\n", "main.go": b.String()})
	got := Parse("go", build(t, many, env, gob, "build", "."), many)
	if len(got) != 10 {
		t.Errorf("too many errors: got %d diagnostics:%s", len(got), showAll(got))
	}
	for _, d := range got {
		if strings.Contains(d.Message, "too many errors") {
			t.Errorf("summary parsed: %s", show(d))
		}
	}
}

func containsDiag(ds []topics.Diagnostic, file string, line int) bool {
	for _, d := range ds {
		if d.File == file && d.Line == line {
			return true
		}
	}
	return false
}

// TestParseJavac runs javac: the column comes from the caret line (tabs
// expanded as javac counts them), symbol:/location: lines are folded into
// the message, -Xlint warnings carry their key as code, and
// -XDrawDiagnostics gives compiler.err.* codes.
func TestParseJavac(t *testing.T) {
	javac := lookTool(t, "javac")
	dir := tempRoot(t)
	writeFiles(t, dir, map[string]string{
		"src/com/ex/App.java": "package com.ex;\n\nimport java.util.List;\nimport java.util.Missing;\n\n" +
			"public class App {\n    public static void main(String[] args) {\n        int x = foo(3);\n" +
			"        String s = 5;\n        List<String> l = null;\n        l.add(bar);\n    }\n}\n",
		"src/com/ex/Tabs.java": "package com.ex;\n\nclass Tabs {\n\tint f() {\n\t\treturn g(1);\n\t}\n" +
			"\tInteger h() {\n\t\treturn new Integer(5);\n\t}\n}\n",
	})
	out := build(t, dir, nil, javac, "-Xlint:all", "-d", filepath.Join(dir, "out"), "src/com/ex/App.java", "src/com/ex/Tabs.java")
	wants := []want{
		{SeverityError, "src/com/ex/App.java", 4, 17, "", "cannot find symbol\nsymbol: class Missing\nlocation: package java.util"},
		{SeverityError, "src/com/ex/App.java", 8, 17, "", "cannot find symbol\nsymbol: method foo(int)\nlocation: class App"},
		{SeverityError, "src/com/ex/App.java", 9, 20, "", "incompatible types: int cannot be converted to String"},
		{SeverityError, "src/com/ex/App.java", 11, 15, "", "cannot find symbol\nsymbol: variable bar"},
		{SeverityError, "src/com/ex/Tabs.java", 5, 24, "", "cannot find symbol\nsymbol: method g(int)\nlocation: class Tabs"},
		{SeverityWarning, "src/com/ex/Tabs.java", 8, 24, "removal", "Integer(int) in Integer has been deprecated and marked for removal"},
	}
	for _, hint := range []string{"javac", ""} {
		got := Parse(hint, out, dir)
		check(t, got, wants)
		checkTools(t, got, ToolJavac)
	}
	// The message keeps its continuation lines.
	if got := Parse("javac", out, dir); len(got) > 0 && strings.Count(got[0].Message, "\n") != 2 {
		t.Errorf("folded message: %q", got[0].Message)
	}

	raw := build(t, dir, nil, javac, "-XDrawDiagnostics", "-d", filepath.Join(dir, "out"), "src/com/ex/App.java")
	check(t, Parse("javac", raw, dir), []want{
		// javac names the file by its base name in this mode.
		{SeverityError, "App.java", 4, 17, "compiler.err.cant.resolve.location", "kindname.class, Missing"},
		{SeverityError, "App.java", 8, 17, "compiler.err.cant.resolve.location.args", "kindname.method, foo"},
		{SeverityError, "App.java", 9, 20, "compiler.err.prob.found.req", "compiler.misc.inconvertible.types"},
		{SeverityError, "App.java", 11, 15, "compiler.err.cant.resolve.location", "kindname.variable, bar"},
	})
}

// TestParseMavenGolden reads recorded Maven output: the javac block and
// the build-failure summary repeating it under [ERROR] fold into one
// diagnostic each; a Java stack trace is no diagnostic.
func TestParseMavenGolden(t *testing.T) {
	wants := []want{
		{SeverityError, "src/main/java/com/ex/App.java", 4, 17, "", "cannot find symbol\nsymbol: class Missing\nlocation: package java.util"},
		{SeverityError, "src/main/java/com/ex/App.java", 8, 17, "", "cannot find symbol\nsymbol: method foo(int)\nlocation: class com.ex.App"},
		{SeverityError, "src/main/java/com/ex/App.java", 9, 20, "", "incompatible types: int cannot be converted to java.lang.String"},
		{SeverityError, "src/main/java/com/ex/App.java", 11, 15, "", "cannot find symbol\nsymbol: variable bar\nlocation: class com.ex.App"},
	}
	for _, f := range []string{"maven-compile.log", "maven-quiet.log"} {
		for _, hint := range []string{"maven", "mvn", ""} {
			got := Parse(hint, readTestdata(t, f), "/work")
			check(t, got, wants)
			checkTools(t, got, ToolMaven)
		}
	}
	check(t, Parse("maven", readTestdata(t, "maven-warning.log"), "/work"), []want{
		{SeverityWarning, "src/main/java/com/ex/Util.java", 5, 16, "", "Integer(int) in java.lang.Integer has been deprecated"},
		{SeverityError, "src/main/java/com/ex/Util.java", 9, 17, "", "cannot find symbol\nsymbol: method lenght()\nlocation: variable s of type java.lang.String"},
	})
	// Synthetic lines of the other forms Maven plugins print.
	check(t, Parse("maven", []byte(
		"[ERROR] /work/src/main/java/A.java:[3] error: ';' expected\n"+
			"[ERROR] file:///work/src/main/kotlin/K.kt:5:10 Unresolved reference: foo\n"+
			"[WARNING] /work/src/main/kotlin/Old.kt: (7, 3) Parameter 'x' is never used\n"+
			"[ERROR] Failed to execute goal org.apache.maven.plugins:maven-compiler-plugin:3.1:compile\n"), "/work"), []want{
		{SeverityError, "src/main/java/A.java", 3, 0, "", "';' expected"},
		{SeverityError, "src/main/kotlin/K.kt", 5, 10, "", "Unresolved reference: foo"},
		{SeverityWarning, "src/main/kotlin/Old.kt", 7, 3, "", "Parameter 'x' is never used"},
	})
}

// TestParseGradleGolden reads the assembled Gradle log: Kotlin e:/w: lines
// (file:// URIs, percent-escapes, the older "(line, col)" form) and javac
// output with tabs through Gradle.
func TestParseGradleGolden(t *testing.T) {
	wants := []want{
		{SeverityError, "app/src/main/kotlin/Main.kt", 5, 13, "", "Unresolved reference: foo"},
		{SeverityWarning, "app/src/main/kotlin/Main.kt", 3, 9, "", "Variable 'unused' is never used"},
		{SeverityError, "app/src/main/kotlin/Util Extra.kt", 2, 23, "", "Type mismatch: inferred type is String but Int was expected"},
		{SeverityError, "app/src/main/kotlin/Old.kt", 4, 5, "", "Unresolved reference: bar"},
		{SeverityError, "lib/src/main/java/com/ex/App.java", 5, 25, "", "cannot find symbol\nsymbol: method foo(int)\nlocation: class App"},
	}
	for _, hint := range []string{"gradle", "./gradlew", ""} {
		got := Parse(hint, readTestdata(t, "gradle.log"), "/work")
		check(t, got, wants)
		checkTools(t, got, ToolGradle)
	}
}

func rustc(t *testing.T) string {
	home, _ := os.UserHomeDir()
	return lookTool(t, "rustc", filepath.Join(home, ".cargo", "bin", "rustc"))
}

// TestParseRustc runs rustc in its human, short and JSON formats on the
// same file: the three agree. A warnings-only file gives lint names as
// codes (from the "#[warn(...)]" note, and code.code in JSON).
func TestParseRustc(t *testing.T) {
	rc := rustc(t)
	dir := tempRoot(t)
	writeFiles(t, dir, map[string]string{
		"src/main.rs": "fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n\nfn main() {\n" +
			"    println!(\"{}\", y);\n    let s: String = add(1, 2);\n    undefined_fn();\n}\n",
		"src/warn.rs": "fn main() {\n    let unused = 1;\n}\n",
	})
	args := []string{"--edition", "2021", "--crate-type", "bin", "-o", filepath.Join(dir, "out")}
	human := build(t, dir, nil, rc, append(args, "src/main.rs")...)
	wants := []want{
		{SeverityError, "src/main.rs", 6, 20, "E0425", "cannot find value `y` in this scope"},
		{SeverityError, "src/main.rs", 7, 21, "E0308", "mismatched types"},
		{SeverityError, "src/main.rs", 8, 5, "E0425", "cannot find function `undefined_fn` in this scope"},
	}
	for _, hint := range []string{"rustc", "cargo", ""} {
		got := Parse(hint, human, dir)
		check(t, got, wants)
		checkTools(t, got, ToolRustc)
	}
	short := build(t, dir, nil, rc, append(args, "--error-format=short", "src/main.rs")...)
	check(t, Parse("", short, dir), wants)
	js := build(t, dir, nil, rc, append(args, "--error-format=json", "src/main.rs")...)
	jsd := Parse("", js, dir)
	check(t, jsd, wants)
	sameDiagnostics(t, "human and JSON", Parse("rustc", human, dir), jsd)

	ww := []want{{SeverityWarning, "src/warn.rs", 2, 9, "unused_variables", "unused variable: `unused`"}}
	check(t, Parse("rustc", build(t, dir, nil, rc, append(args, "src/warn.rs")...), dir), ww)
	check(t, Parse("rustc", build(t, dir, nil, rc, append(args, "--error-format=json", "src/warn.rs")...), dir), ww)
}

// TestParseCargoJSON reads recorded cargo --message-format=json output
// with cargo's stderr ("could not compile" is no diagnostic).
func TestParseCargoJSON(t *testing.T) {
	for _, hint := range []string{"cargo", ""} {
		check(t, Parse(hint, readTestdata(t, "cargo-json.txt"), "/work"), []want{
			{SeverityError, "src/main.rs", 4, 20, "E0425", "cannot find value `missing` in this scope"},
			{SeverityError, "src/main.rs", 5, 18, "E0308", "mismatched types"},
		})
	}
}

// TestParseRustJSONMacro: a primary span inside a macro defined outside
// the workspace is reported at the macro's call site (synthetic record in
// rustc's schema).
func TestParseRustJSONMacro(t *testing.T) {
	line := `{"$message_type":"diagnostic","message":"mismatched types","code":{"code":"E0308","explanation":null},` +
		`"level":"error","spans":[{"file_name":"/rustc/abc/library/core/src/macros/mod.rs","line_start":40,"column_start":9,"is_primary":true,` +
		`"expansion":{"span":{"file_name":"src/lib.rs","line_start":3,"column_start":5,"is_primary":false,"expansion":null},"macro_decl_name":"assert_eq!"}}],` +
		`"children":[],"rendered":"error[E0308]: mismatched types\n"}` + "\n" +
		`{"$message_type":"diagnostic","message":"aborting due to 1 previous error","code":null,"level":"error","spans":[],"children":[],"rendered":"error: aborting\n"}` + "\n"
	check(t, Parse("rustc", []byte(line), "/work"), []want{
		{SeverityError, "src/lib.rs", 3, 5, "E0308", "mismatched types"},
	})
}

// TestParseTscGolden reads recorded tsc 5.9 output, plain and --pretty:
// the message chain is folded into the message, the pretty form's
// excerpts and related information are not diagnostics, and a config
// error has a code but no file.
func TestParseTscGolden(t *testing.T) {
	wants := []want{
		{SeverityError, "src/a.ts", 1, 7, "TS2322", "Type 'string' is not assignable to type 'number'."},
		{SeverityError, "src/a.ts", 2, 13, "TS2304", "Cannot find name 'x'."},
		{SeverityError, "src/a.ts", 5, 12, "TS2551", "Property 'lenght' does not exist on type 'string'. Did you mean 'length'?"},
		{SeverityError, "src/c.ts", 3, 6, "TS2345", "is not assignable to parameter of type 'A'.\nThe types of 'a.b' are incompatible between these types.\nType 'number' is not assignable to type 'string'."},
	}
	for _, hint := range []string{"tsc", ""} {
		got := Parse(hint, readTestdata(t, "tsc.txt"), "/work")
		check(t, got, append(wants, want{SeverityError, "", 0, 0, "TS18003", "No inputs were found in config file"}))
		checkTools(t, got, ToolTsc)
		pretty := Parse(hint, readTestdata(t, "tsc-pretty.txt"), "/work")
		check(t, pretty, wants)
	}
}

// TestParseTscReal runs tsc where it is on PATH (or $DIAG_TSC names it).
func TestParseTscReal(t *testing.T) {
	tsc := os.Getenv("DIAG_TSC")
	if tsc == "" {
		var err error
		if tsc, err = exec.LookPath("tsc"); err != nil {
			t.Skip("tsc not installed (set DIAG_TSC to a tsc binary); testdata/tsc*.txt cover its output")
		}
	}
	dir := tempRoot(t)
	writeFiles(t, dir, map[string]string{
		"tsconfig.json": `{"compilerOptions":{"strict":true,"noEmit":true},"include":["src"]}`,
		"src/a.ts":      "const n: number = \"s\";\nconsole.log(y);\nexport {};\n",
	})
	for _, pretty := range []string{"false", "true"} {
		got := Parse("", build(t, dir, nil, tsc, "-p", ".", "--pretty", pretty), dir)
		check(t, got, []want{
			{SeverityError, "src/a.ts", 1, 7, "TS2322", "Type 'string' is not assignable to type 'number'"},
			{SeverityError, "src/a.ts", 2, 13, "TS2304", "Cannot find name 'y'"},
		})
	}
}

// TestParsePython runs py_compile, compileall (quiet and verbose) and
// scripts that raise: SyntaxError/IndentationError with file and line,
// compileall's header naming the file that "Sorry:" gives by base name,
// the exception class as code, tracebacks reported at their last frame in
// the workspace, and a warning.
func TestParsePython(t *testing.T) {
	py := lookTool(t, "python3")
	dir := tempRoot(t)
	writeFiles(t, dir, map[string]string{
		"pkg/a.py":  "def f(:\n    pass\n",
		"pkg/b.py":  "def g():\n    x = 1\n      y = 2\n",
		"pkg/ok.py": "import os\n\ndef ok():\n    return os.sep\n",
		"pkg/d.py":  "x = (1,\n",
		"div.py":    "def f():\n    return 1/0\n\nf()\n",
		"imp.py":    "import pkg.a\n",
		"js.py":     "import json\n\njson.loads('{')\n",
		"esc.py":    "s = '\\d'\n",
	})
	env := []string{"PYTHONDONTWRITEBYTECODE=1", "PYTHONPYCACHEPREFIX=" + filepath.Join(dir, ".pyc")}
	check(t, Parse("python", build(t, dir, env, py, "-m", "py_compile", "pkg/a.py"), dir), []want{
		{SeverityError, "pkg/a.py", 1, 0, "SyntaxError", "invalid syntax"},
	})
	got := Parse("python", build(t, dir, env, py, "-m", "py_compile", "pkg/b.py"), dir)
	if len(got) != 1 || got[0].Line != 3 || got[0].Code != "IndentationError" || !strings.HasSuffix("pkg/b.py", got[0].File) {
		t.Errorf("py_compile b.py: %s", showAll(got))
	}
	compileWants := []want{
		{SeverityError, "pkg/a.py", 1, 0, "SyntaxError", "invalid syntax"},
		{SeverityError, "pkg/b.py", 3, 0, "IndentationError", "unexpected indent"},
		{SeverityError, "pkg/d.py", 1, 0, "SyntaxError", "'(' was never closed"},
	}
	for _, args := range [][]string{{"-m", "compileall", "-q", "pkg"}, {"-m", "compileall", "pkg"}} {
		out := build(t, dir, env, py, args...)
		for _, hint := range []string{"python", ""} {
			got := Parse(hint, out, dir)
			check(t, got, compileWants)
			checkTools(t, got, ToolPython)
		}
	}
	check(t, Parse("python", build(t, dir, env, py, "div.py"), dir), []want{
		{SeverityError, "div.py", 2, 0, "ZeroDivisionError", "division by zero"},
	})
	check(t, Parse("", build(t, dir, env, py, "imp.py"), dir), []want{
		{SeverityError, "pkg/a.py", 1, 0, "SyntaxError", "invalid syntax"},
	})
	// The last frame is in the standard library: the workspace's is used.
	check(t, Parse("python", build(t, dir, env, py, "js.py"), dir), []want{
		{SeverityError, "js.py", 3, 0, "json.decoder.JSONDecodeError", "Expecting property name enclosed in double quotes"},
	})
	// Only Python 3.12+ warns about the escape at compile time by default.
	wout := build(t, dir, env, py, "-W", "always", "-m", "py_compile", "esc.py")
	if ws := Parse("python", wout, dir); len(ws) > 0 {
		d := ws[0]
		if d.Severity != SeverityWarning || d.File != "esc.py" || d.Line != 1 || !strings.HasSuffix(d.Code, "Warning") {
			t.Errorf("warning: %s", showAll(ws))
		}
	} else {
		t.Logf("no warning parsed from %q", wout)
	}
}

// TestParsePythonGlued: py_compile can print "Sorry: ..." without a
// newline before what follows.
func TestParsePythonGlued(t *testing.T) {
	out := "Sorry: IndentationError: unexpected indent (b.py, line 3)Traceback (most recent call last):\n" +
		"  File \"/work/run.py\", line 1, in <module>\n    import nope\nModuleNotFoundError: No module named 'nope'\n"
	check(t, Parse("python", []byte(out), "/work"), []want{
		{SeverityError, "b.py", 3, 0, "IndentationError", "unexpected indent"},
		{SeverityError, "run.py", 1, 0, "ModuleNotFoundError", "No module named 'nope'"},
	})
}

// TestParseFold: repeated identical diagnostics fold into one; different
// columns or messages do not.
func TestParseFold(t *testing.T) {
	out := strings.Repeat("a.c:3:5: error: 'x' undeclared (first use in this function)\n", 3) +
		"a.c:3:9: error: 'x' undeclared (first use in this function)\n" +
		"a.c:3:5: error: 'xy' undeclared (first use in this function)\n"
	check(t, Parse("gcc", []byte(out), ""), []want{
		{SeverityError, "a.c", 3, 5, "", "'x' undeclared"},
		{SeverityError, "a.c", 3, 9, "", "'x' undeclared"},
		{SeverityError, "a.c", 3, 5, "", "'xy' undeclared"},
	})
}

// TestParseLongLines: a line longer than bufio's default token does not
// stop the line-oriented parsers.
func TestParseLongLines(t *testing.T) {
	out := strings.Repeat("x", 200<<10) + "\n./main.go:3:2: undefined: foo\n" +
		"src/a.c:1:1: error: " + strings.Repeat("y", 10<<10) + "\n"
	got := Parse("", []byte(out), "")
	if !containsDiag(got, "main.go", 3) || !containsDiag(got, "src/a.c", 1) {
		t.Errorf("got %s", showAll(got))
	}
	for _, d := range got {
		if len(d.Message) > maxMessage+len("…") {
			t.Errorf("message of %d bytes", len(d.Message))
		}
	}
}

// TestParseNoise: text with no diagnostics in it gives none.
func TestParseNoise(t *testing.T) {
	for _, s := range []string{
		"",
		"\n\n",
		"make: *** [Makefile:3: all] Error 1\nmake: Target 'all' not remade because of errors.\n",
		"2024-01-01 10:20:30 INFO starting\nBUILD SUCCESSFUL in 3s\nok  \texample.com/m\t0.01s\n",
		"Exception in thread \"main\" java.lang.IllegalStateException: boom\n\tat com.ex.App.main(App.java:5)\n",
		"collect2: error: ld returned 1 exit status\n",
		"1 error generated.\nerror: aborting due to 2 previous errors\n",
	} {
		if got := Parse("", []byte(s), "/work"); len(got) != 0 {
			t.Errorf("%q: %s", s, showAll(got))
		}
	}
}

// TestParseCIPrefixes: CI timestamps and annotations before each line.
func TestParseCIPrefixes(t *testing.T) {
	out := "2024-05-01T10:00:00.1234567Z /home/runner/work/r/r/src/a.c:4:2: error: unknown type name 'foo'\r\n" +
		"2024-05-01T10:00:00.2Z ##[error]src/b.c:1:1: warning: empty file [-Wempty-translation-unit]\r\n"
	check(t, Parse("", []byte(out), "/home/runner/work/r/r"), []want{
		{SeverityError, "src/a.c", 4, 2, "", "unknown type name 'foo'"},
		{SeverityWarning, "src/b.c", 1, 1, "-Wempty-translation-unit", "empty file"},
	})
}

// TestParseConcurrent: Parse shares compiled formats between goroutines.
func TestParseConcurrent(t *testing.T) {
	out := readTestdata(t, "maven-compile.log")
	base := Parse("", out, "/work")
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sameDiagnostics(t, "concurrent", base, Parse("", out, "/work"))
		}()
	}
	wg.Wait()
}

func TestRelPath(t *testing.T) {
	for _, c := range []struct{ root, in, want string }{
		{"/work", "/work/src/a.c", "src/a.c"},
		{"/work/", "/work//src/./a.c", "src/a.c"},
		{"/work", "./src/a.c", "src/a.c"},
		{"/work", "src/a.c", "src/a.c"},
		{"/work", "/usr/include/stdio.h", "/usr/include/stdio.h"},
		{"/work", "/workspace/a.c", "/workspace/a.c"},
		{"/work", "../other/a.c", "../other/a.c"},
		{"/work", "file:///work/app/My%20File.kt", "app/My File.kt"},
		{"/work", "<stdin>", "<stdin>"},
		{"/work", "<frozen importlib._bootstrap>", "<frozen importlib._bootstrap>"},
		{"/work", `C:\src\a.c`, `C:\src\a.c`},
		{"", "/abs/a.c", "/abs/a.c"},
		{"", "./a.c", "a.c"},
		{"/work", "", ""},
	} {
		if got := RelPath(c.root, c.in); got != c.want {
			t.Errorf("RelPath(%q, %q) = %q, want %q", c.root, c.in, got, c.want)
		}
	}
}

func TestNormalizeTool(t *testing.T) {
	for in, want := range map[string]string{
		"g++": ToolGCC, "/usr/bin/gcc-12": ToolGCC, "clang++": ToolClang, "cargo": ToolRustc, "mvn": ToolMaven,
		"./gradlew": ToolGradle, "python3.11": ToolPython, "npx tsc": ToolTsc, "ninja": ToolMake, "GO": ToolGo,
		"javac": ToolJavac, "": "", "perl": "",
	} {
		if got := NormalizeTool(in); got != want {
			t.Errorf("NormalizeTool(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestParseLinker runs gcc's link step: a missing library, a symbol
// defined twice (the driver's temporary object names are replaced, so two
// builds read alike) and an undefined reference from a named object.
func TestParseLinker(t *testing.T) {
	gcc := lookTool(t, "gcc")
	dir := tempRoot(t)
	writeFiles(t, dir, map[string]string{
		"main.c":  "int twice = 1;\nint helper(void);\nint main(void) { return helper(); }\n",
		"other.c": "int twice = 2;\n",
	})
	out := build(t, dir, utf8Env, gcc, "main.c", "other.c", "-lnonexistent_lib_xyz", "-o", "/dev/null")
	check(t, Parse("gcc", out, dir), []want{
		{SeverityError, "", 0, 0, "", "multiple definition of 'twice'; <tmp>.o:(.data+0x0): first defined here"},
		{SeverityError, "", 0, 0, "", "cannot find -lnonexistent_lib_xyz: No such file or directory"},
	})
	out = build(t, dir, utf8Env, gcc, "main.c", "other.c", "-o", filepath.Join(dir, "a.out"))
	got := Parse("gcc", out, dir)
	check(t, got, []want{
		{SeverityError, "", 0, 0, "", "multiple definition of 'twice'; <tmp>.o"},
		{SeverityError, "main.c", 0, 0, "", "undefined reference to 'helper'"},
	})
	sameDiagnostics(t, "two links", got, Parse("gcc", build(t, dir, utf8Env, gcc, "main.c", "other.c", "-o", filepath.Join(dir, "a.out")), dir))

	build(t, dir, utf8Env, gcc, "-c", "main.c", "other.c")
	out = build(t, dir, utf8Env, gcc, "main.o", "other.o", "-o", filepath.Join(dir, "a.out"))
	check(t, Parse("", out, dir), []want{
		{SeverityError, "other.o", 0, 0, "", "multiple definition of 'twice'; main.o:(.data+0x0): first defined here"},
		{SeverityError, "main.c", 0, 0, "", "undefined reference to 'helper'"},
	})
}

// TestParseMakeErrors: make's own errors (a missing rule, a Makefile
// syntax error) are errors; "*** [...] Error 1" is not.
func TestParseMakeErrors(t *testing.T) {
	mk := lookTool(t, "make")
	dir := tempRoot(t)
	writeFiles(t, dir, map[string]string{"Makefile": "all: gone.o\n"})
	check(t, Parse("make", build(t, dir, nil, mk), dir), []want{
		{SeverityError, "", 0, 0, "", "No rule to make target 'gone.o', needed by 'all'"},
	})
	writeFiles(t, dir, map[string]string{"Makefile": "all:\n    echo spaces\n"})
	got := Parse("", build(t, dir, nil, mk), dir)
	check(t, got, []want{{SeverityError, "Makefile", 2, 0, "", "missing separator"}})
	checkTools(t, got, ToolMake)
}

// bigLogSize is the size of bigLog.
var bigLogSize = 8 << 20

// bigLog is about bigLogSize bytes of mixed build output.
func bigLog() []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < bigLogSize; i++ {
		b.WriteString("[INFO] Compiling 1 source file to /work/target/classes\n")
		b.WriteString("src/a" + strconv.Itoa(i%50) + ".c:" + strconv.Itoa(i%900+1) + ":5: error: 'x" + strconv.Itoa(i) + "' undeclared\n")
		b.WriteString("    5 |     return x;\n      |            ^\n")
		b.WriteString("./pkg/f.go:" + strconv.Itoa(i%700+1) + ":2: undefined: y" + strconv.Itoa(i) + "\n")
		b.WriteString("Traceback (most recent call last):\n  File \"/work/t.py\", line 3, in <module>\nValueError: bad " + strconv.Itoa(i) + "\n")
	}
	return b.Bytes()
}

// TestParseBig: a large log parses in bounded time and output.
func TestParseBig(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	got := Parse("", bigLog(), "/work")
	if len(got) != MaxDiagnostics {
		t.Errorf("%d diagnostics, want the cap %d", len(got), MaxDiagnostics)
	}
}

func BenchmarkParse(b *testing.B) {
	log := bigLog()
	b.SetBytes(int64(len(log)))
	for i := 0; i < b.N; i++ {
		Parse("", log, "/work")
	}
}

// TestParseDriverMessages: the compiler driver's own errors have no file;
// other programs' "name: error:" lines are not diagnostics.
func TestParseDriverMessages(t *testing.T) {
	gcc := lookTool(t, "gcc")
	dir := tempRoot(t)
	out := build(t, dir, nil, gcc, "-c", "nosuch.c")
	out = append(out, "tar: error: is not a compiler\n"...)
	check(t, Parse("", out, dir), []want{
		{SeverityError, "", 0, 0, "", "nosuch.c: No such file or directory"},
	})
}
