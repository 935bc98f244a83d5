package cilog

import (
	"bytes"
	"compress/gzip"
	"errors"
	"strings"
	"testing"
)

func parse(t *testing.T, log string) *Report {
	t.Helper()
	rep, err := Parse(strings.NewReader(log), "test.log")
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// find returns the diagnostic whose message contains sub.
func find(t *testing.T, rep *Report, sub string) Diagnostic {
	t.Helper()
	for _, d := range rep.Diagnostics {
		if strings.Contains(d.Message, sub) {
			return d
		}
	}
	t.Fatalf("no diagnostic with %q in %+v", sub, rep.Diagnostics)
	return Diagnostic{}
}

func failedSteps(rep *Report) []string {
	var out []string
	for _, s := range rep.Steps {
		if s.Failed {
			out = append(out, s.Name)
		}
	}
	return out
}

func TestGitHubActionsRaw(t *testing.T) {
	log := "2024-01-01T10:00:00.0000000Z Requested labels: ubuntu-latest\n" + // 1
		"2024-01-01T10:00:00.1000000Z ##[group]Operating System\n" + // 2
		"2024-01-01T10:00:00.1000000Z Ubuntu\n" + // 3
		"2024-01-01T10:00:00.1000000Z ##[endgroup]\n" + // 4
		"2024-01-01T10:00:01.0000000Z ##[group]Run go build ./...\n" + // 5
		"2024-01-01T10:00:01.0000000Z \x1b[36;1mgo build ./...\x1b[0m\n" + // 6
		"2024-01-01T10:00:01.0000000Z ##[endgroup]\n" + // 7
		"2024-01-01T10:00:02.0000000Z # example.com/m\n" + // 8
		"2024-01-01T10:00:02.0000000Z ./main.go:7:2: undefined: fmt.Printx\n" + // 9
		"2024-01-01T10:00:02.0000000Z ::error file=main.go,line=7,col=2::undefined: fmt.Printx\n" + // 10
		"2024-01-01T10:00:02.1000000Z ##[error]Process completed with exit code 1.\n" + // 11
		"2024-01-01T10:00:03.0000000Z Post job cleanup.\n" + // 12
		"2024-01-01T10:00:03.0000000Z [command]/usr/bin/git version\n" // 13
	rep := parse(t, log)
	if rep.CI != CIGitHubActions || rep.Lines != 13 || rep.Cause != CauseCompile {
		t.Fatalf("ci %s lines %d cause %s", rep.CI, rep.Lines, rep.Cause)
	}
	if got := failedSteps(rep); len(got) != 1 || got[0] != "Run go build ./..." {
		t.Fatalf("failed steps %v (%+v)", got, rep.Steps)
	}
	var run Step
	for _, s := range rep.Steps {
		if s.Name == "Run go build ./..." {
			run = s
		}
	}
	if run.LogLines != [2]int{5, 11} {
		t.Errorf("step lines %v", run.LogLines)
	}
	d := find(t, rep, "undefined: fmt.Printx")
	if d.Tool != "go" || d.File != "main.go" || d.Line != 7 || d.Column != 2 || d.LogLines != [2]int{9, 9} {
		t.Errorf("go diagnostic %+v", d)
	}
	var ann *Diagnostic
	for i := range rep.Diagnostics {
		if rep.Diagnostics[i].Tool == "annotation" {
			ann = &rep.Diagnostics[i]
		}
	}
	if ann == nil || ann.File != "main.go" || ann.Line != 7 || ann.LogLines != [2]int{10, 10} {
		t.Errorf("annotation %+v", ann)
	}
	for _, d := range rep.Diagnostics {
		if strings.Contains(d.Message, "exit code") {
			t.Errorf("the runner's exit line is not a diagnostic: %+v", d)
		}
	}
}

func TestGitHubCLI(t *testing.T) {
	log := "build\tSet up job\t2024-01-01T10:00:00.0Z Current runner version: '2.3'\n" +
		"build\tRun make\t2024-01-01T10:00:01.0Z gcc -c a.c\n" +
		"build\tRun make\t2024-01-01T10:00:01.1Z a.c:3:5: error: 'x' undeclared (first use in this function)\n" +
		"build\tRun make\t2024-01-01T10:00:01.1Z     3 |     x = 1;\n" +
		"build\tRun make\t2024-01-01T10:00:01.1Z       |     ^\n" +
		"build\tRun make\t2024-01-01T10:00:01.2Z make: *** [Makefile:2: a.o] Error 1\n" +
		"build\tRun make\t2024-01-01T10:00:01.3Z ##[error]Process completed with exit code 2.\n" +
		"build\tPost Run actions/checkout@v4\t2024-01-01T10:00:02.0Z Post job cleanup.\n"
	rep := parse(t, log)
	if rep.CI != CIGitHubCLI || rep.Cause != CauseCompile {
		t.Fatalf("ci %s cause %s", rep.CI, rep.Cause)
	}
	if len(rep.Steps) != 3 || rep.Steps[1].Name != "Run make" || rep.Steps[1].LogLines != [2]int{2, 7} || !rep.Steps[1].Failed || rep.Steps[0].Failed {
		t.Fatalf("steps %+v", rep.Steps)
	}
	d := find(t, rep, "undeclared")
	if d.File != "a.c" || d.Line != 3 || d.LogLines != [2]int{3, 5} || d.Step != "Run make" {
		t.Errorf("gcc diagnostic %+v", d)
	}
}

func TestGitLab(t *testing.T) {
	log := "Running with gitlab-runner 16.0.0\n" + // 1
		"section_start:1700000000:prepare_script\r\x1b[0KPreparing environment\n" + // 2,3
		"Running on runner-1\n" + // 4
		"section_end:1700000001:prepare_script\r\x1b[0K\n" + // 5,6
		"section_start:1700000002:step_script\r\x1b[0KExecuting \"step_script\" stage\n" + // 7,8
		"$ python -m compileall -q src\n" + // 9
		"  File \"src/app.py\", line 4\n" + // 10
		"    def f(:\n" + // 11
		"          ^\n" + // 12
		"SyntaxError: invalid syntax\n" + // 13
		"section_end:1700000003:step_script\r\x1b[0K\n" + // 14,15
		"ERROR: Job failed: exit code 1\n" // 16
	rep := parse(t, log)
	if rep.CI != CIGitLab || rep.Lines != 16 || rep.Cause != CauseCompile {
		t.Fatalf("ci %s lines %d cause %s %+v", rep.CI, rep.Lines, rep.Cause, rep.Diagnostics)
	}
	if got := failedSteps(rep); len(got) != 1 || got[0] != "step_script" {
		t.Fatalf("failed steps %v %+v", got, rep.Steps)
	}
	d := find(t, rep, "invalid syntax")
	if d.File != "src/app.py" || d.Line != 4 || d.Tool != "python" {
		t.Errorf("python diagnostic %+v", d)
	}
}

func TestTravis(t *testing.T) {
	log := "Worker information\n" + // 1
		"travis_fold:start:install\r\x1b[0K$ npm ci\n" + // 2,3
		"added 10 packages\n" + // 4
		"travis_fold:end:install\r\x1b[0K\n" + // 5,6
		"travis_time:start:abc\r\x1b[0K$ npx tsc --noEmit\n" + // 7,8
		"src/index.ts(3,7): error TS2322: Type 'string' is not assignable to type 'number'.\n" + // 9
		"travis_time:end:abc:start=1,finish=2,duration=1\r\x1b[0K\n" + // 10,11
		"The command \"npx tsc --noEmit\" exited with 2.\n" + // 12
		"Done. Your build exited with 1.\n" // 13
	rep := parse(t, log)
	if rep.CI != CITravis || rep.Cause != CauseCompile {
		t.Fatalf("ci %s cause %s", rep.CI, rep.Cause)
	}
	if got := failedSteps(rep); len(got) != 1 || got[0] != "npx tsc --noEmit" {
		t.Fatalf("failed steps %v %+v", got, rep.Steps)
	}
	d := find(t, rep, "not assignable")
	if d.Tool != "tsc" || d.File != "src/index.ts" || d.Line != 3 || d.Column != 7 || d.Code != "TS2322" || d.LogLines != [2]int{9, 9} {
		t.Errorf("tsc diagnostic %+v", d)
	}
}

func TestJenkinsPipeline(t *testing.T) {
	log := "Started by user admin\n" + // 1
		"[Pipeline] Start of Pipeline\n" + // 2
		"[Pipeline] stage\n" + // 3
		"[Pipeline] { (Build)\n" + // 4
		"[Pipeline] sh\n" + // 5
		"+ cargo build\n" + // 6
		"error[E0425]: cannot find value `y` in this scope\n" + // 7
		" --> src/main.rs:2:13\n" + // 8
		"  |\n" + // 9
		"2 |     let x = y;\n" + // 10
		"  |             ^ not found in this scope\n" + // 11
		"\n" + // 12
		"error: could not compile `demo` (bin \"demo\") due to 1 previous error\n" + // 13
		"[Pipeline] }\n" + // 14
		"[Pipeline] // stage\n" + // 15
		"[Pipeline] End of Pipeline\n" + // 16
		"ERROR: script returned exit code 101\n" + // 17
		"Finished: FAILURE\n" // 18
	rep := parse(t, log)
	if rep.CI != CIJenkins || rep.Cause != CauseCompile {
		t.Fatalf("ci %s cause %s %+v", rep.CI, rep.Cause, rep.Diagnostics)
	}
	var build *Step
	for i := range rep.Steps {
		if rep.Steps[i].Name == "Build" {
			build = &rep.Steps[i]
		}
	}
	if build == nil || build.LogLines != [2]int{4, 14} {
		t.Fatalf("steps %+v", rep.Steps)
	}
	d := find(t, rep, "cannot find value")
	if d.Tool != "rustc" || d.File != "src/main.rs" || d.Line != 2 || d.Code != "E0425" || d.LogLines[0] != 7 || d.LogLines[1] < 11 {
		t.Errorf("rustc diagnostic %+v", d)
	}
}

func TestBuildkite(t *testing.T) {
	log := "\x1b_bk;t=1700000000000\x07~~~ Preparing working directory\n" +
		"\x1b_bk;t=1700000000001\x07$ git clone repo\n" +
		"\x1b_bk;t=1700000000002\x07--- :go: test\n" +
		"\x1b_bk;t=1700000000003\x07--- FAIL: TestAdd (0.00s)\n" +
		"\x1b_bk;t=1700000000004\x07    add_test.go:9: got 3, want 4\n" +
		"\x1b_bk;t=1700000000005\x07FAIL\texample.com/m\t0.01s\n" +
		"\x1b_bk;t=1700000000006\x07🚨 Error: The command exited with status 1\n"
	rep := parse(t, log)
	if rep.CI != CIBuildkite || rep.Cause != CauseTest {
		t.Fatalf("ci %s cause %s %+v", rep.CI, rep.Cause, rep.Diagnostics)
	}
	if got := failedSteps(rep); len(got) != 1 || got[0] != ":go: test" {
		t.Fatalf("failed steps %v %+v", got, rep.Steps)
	}
	d := find(t, rep, "--- FAIL: TestAdd")
	if d.LogLines != [2]int{4, 5} {
		t.Errorf("go test failure %+v", d)
	}
}

func TestLineEndingsAndBytes(t *testing.T) {
	// CRLF, CR-only progress, invalid UTF-8, ANSI colours: line numbers
	// count each terminator as CiDiff does.
	log := "Downloading 10%\rDownloading 50%\rDownloading 100%\r\n" + // 1,2,3
		"\x1b[31mmain.c:2:1: error: expected ';' before '}' token\x1b[0m\r\n" + // 4
		"caf\xe9 \xff\xfe\n" + // 5
		"main.c:9:1: error: unknown type name 'strin'\r" // 6
	rep := parse(t, log)
	if rep.Lines != 6 {
		t.Fatalf("lines %d", rep.Lines)
	}
	if d := find(t, rep, "expected ';'"); d.LogLines != [2]int{4, 4} || d.File != "main.c" {
		t.Errorf("%+v", d)
	}
	if d := find(t, rep, "unknown type name"); d.LogLines != [2]int{6, 6} {
		t.Errorf("%+v", d)
	}
}

func TestGoTestJSON(t *testing.T) {
	log := `{"Action":"start","Package":"example.com/m"}` + "\n" +
		`{"Action":"run","Package":"example.com/m","Test":"TestAdd"}` + "\n" +
		`{"Action":"output","Package":"example.com/m","Test":"TestAdd","Output":"=== RUN   TestAdd\n"}` + "\n" +
		`{"Action":"output","Package":"example.com/m","Test":"TestAdd","Output":"    add_test.go:9: got 3, want 4\n"}` + "\n" +
		`{"Action":"output","Package":"example.com/m","Test":"TestAdd","Output":"--- FAIL: TestAdd (0.00s)\n"}` + "\n" +
		`{"Action":"fail","Package":"example.com/m","Test":"TestAdd"}` + "\n"
	rep := parse(t, log)
	d := find(t, rep, "--- FAIL: TestAdd")
	if d.LogLines != [2]int{4, 5} || d.File != "add_test.go" || d.Line != 9 || rep.Cause != CauseTest {
		t.Errorf("%+v cause %s", d, rep.Cause)
	}
}

func TestPytestAndTraceback(t *testing.T) {
	log := "============ FAILURES ============\n" + // 1
		"___________ test_mean ___________\n" + // 2
		"    def test_mean():\n" + // 3
		">       assert mean([1, 2]) == 2\n" + // 4
		"E       assert 1.5 == 2\n" + // 5
		"\n" + // 6
		"tests/test_stats.py:4: AssertionError\n" + // 7
		"=========== short test summary info ===========\n" + // 8
		"FAILED tests/test_stats.py::test_mean - assert 1.5 == 2\n" + // 9
		"======= 1 failed, 3 passed in 0.05s =======\n" // 10
	rep := parse(t, log)
	if rep.Cause != CauseTest {
		t.Fatalf("cause %s %+v", rep.Cause, rep.Diagnostics)
	}
	d := find(t, rep, "FAILED tests/test_stats.py::test_mean")
	if d.Tool != "pytest" || d.File != "tests/test_stats.py" || d.Code != "test_mean" || d.LogLines != [2]int{9, 9} {
		t.Errorf("%+v", d)
	}
	loc := find(t, rep, "AssertionError")
	if loc.File != "tests/test_stats.py" || loc.Line != 4 {
		t.Errorf("%+v", loc)
	}
	tb := parse(t, "Traceback (most recent call last):\n  File \"run.py\", line 3, in <module>\n    import yaml\nModuleNotFoundError: No module named 'yaml'\n")
	d = find(t, tb, "yaml")
	if d.LogLines != [2]int{1, 4} || d.File != "run.py" || d.Line != 3 || tb.Cause != CauseDependency {
		t.Errorf("%+v cause %s", d, tb.Cause)
	}
}

func TestMavenEchoFolded(t *testing.T) {
	log := "[INFO] --- maven-compiler-plugin:3.1:compile (default-compile) @ app ---\n" + // 1
		"[ERROR] /w/src/main/java/A.java:[3,9] cannot find symbol\n" + // 2
		"  symbol:   class Strin\n" + // 3
		"  location: class A\n" + // 4
		"[INFO] 1 error\n" + // 5
		"[INFO] BUILD FAILURE\n" + // 6
		"[ERROR] Failed to execute goal org.apache.maven.plugins:maven-compiler-plugin:3.1:compile (default-compile) on project app: Compilation failure\n" + // 7
		"[ERROR] /w/src/main/java/A.java:[3,9] cannot find symbol\n" + // 8
		"[ERROR]   symbol:   class Strin\n" + // 9
		"[ERROR]   location: class A\n" + // 10
		"[ERROR] -> [Help 1]\n" // 11
	rep := parse(t, log)
	n := 0
	for _, d := range rep.Diagnostics {
		if strings.Contains(d.Message, "cannot find symbol") {
			n++
			if d.LogLines != [2]int{2, 4} || len(d.Ranges) != 2 || d.Ranges[1] != [2]int{8, 10} {
				t.Errorf("folded diagnostic %+v", d)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d reports of one error: %+v", n, rep.Diagnostics)
	}
	goal := find(t, rep, "Failed to execute goal")
	if goal.LogLines != [2]int{7, 11} {
		t.Errorf("goal %+v", goal)
	}
	if len(rep.Steps) != 1 || !rep.Steps[0].Failed || rep.Cause != CauseCompile {
		t.Errorf("steps %+v cause %s", rep.Steps, rep.Cause)
	}
}

func TestCauses(t *testing.T) {
	for _, c := range []struct{ log, cause string }{
		{"fatal: unable to access 'https://github.com/x/y.git/': Could not resolve host: github.com\n", CauseInfra},
		{"fatal: detected dubious ownership in repository at '/w'\n", CauseInfra},
		{"[ERROR] Failed to execute goal on project x: Could not resolve dependencies for project a:b:jar:1: Could not find artifact c:d:jar:2\n", CauseDependency},
		{"main.go:3:2: no required module provides package github.com/x/y; to add it:\n", CauseDependency},
		{"[ERROR] /w/A.java:[1,1] cannot access Foo\n  bad class file: /r/foo.jar(Foo.class)\n    class file has wrong version 61.0, should be 55.0\n", CauseEnvironment},
		{"[ERROR] Failed to execute goal org.apache.maven.plugins:maven-checkstyle-plugin:3.1:check (validate) on project x: You have 2 Checkstyle violations.\n", CauseLint},
		{"[INFO] BUILD SUCCESS\nFinished: SUCCESS\n", CauseNone},
		{"Started by user\nsomething odd happened\nFinished: FAILURE\n", CauseUnknown},
	} {
		if got := parse(t, c.log).Cause; got != c.cause {
			t.Errorf("%q: cause %s, want %s", c.log, got, c.cause)
		}
	}
}

func TestJUnitXML(t *testing.T) {
	xml := `<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="com.x.CalcTest" tests="2" failures="1">
  <testcase name="adds" classname="com.x.CalcTest" time="0.01"/>
  <testcase name="divides" classname="com.x.CalcTest" time="0.01">
    <failure message="expected:&lt;2&gt; but was:&lt;3&gt;" type="org.opentest4j.AssertionFailedError">org.opentest4j.AssertionFailedError: expected:&lt;2&gt; but was:&lt;3&gt;
	at com.x.CalcTest.divides(CalcTest.java:14)
</failure>
  </testcase>
</testsuite>
`
	rep, err := Parse(strings.NewReader(xml), "TEST-com.x.CalcTest.xml")
	if err != nil {
		t.Fatal(err)
	}
	if rep.CI != CIJUnit || rep.Cause != CauseTest || len(rep.Diagnostics) != 1 {
		t.Fatalf("%+v", rep)
	}
	d := rep.Diagnostics[0]
	if d.Code != "com.x.CalcTest.divides" || d.File != "CalcTest.java" || d.Line != 14 || d.LogLines[0] != 5 || d.LogLines[1] != 7 {
		t.Errorf("%+v", d)
	}
	if len(rep.Steps) != 1 || !rep.Steps[0].Failed {
		t.Errorf("%+v", rep.Steps)
	}
}

func TestCompressedAndBadInput(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write([]byte("a.c:1:1: error: expected identifier\n" + strings.Repeat("ok\n", 5000))); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	rep, err := Parse(bytes.NewReader(gz.Bytes()), "x.log.gz")
	if err != nil || rep.Lines != 5001 || len(rep.Diagnostics) != 1 {
		t.Fatalf("gzip: %v %+v", err, rep)
	}
	// Truncated gzip: what was read comes back with a clear error.
	rep, err = Parse(bytes.NewReader(gz.Bytes()[:gz.Len()/2]), "cut.log.gz")
	if err == nil || rep == nil || !strings.Contains(err.Error(), "unexpected EOF") {
		t.Fatalf("truncated gzip: %v %+v", err, rep)
	}
	// Binary garbage and archives are refused by name.
	if _, err := Parse(bytes.NewReader([]byte("\x00\x01\x02garbage\x00\xff\xfe")), "bin"); !errors.Is(err, ErrBinary) {
		t.Errorf("binary: %v", err)
	}
	var fe *FormatError
	if _, err := Parse(strings.NewReader("PK\x03\x04rest"), "logs.zip"); !errors.As(err, &fe) {
		t.Errorf("zip: %v", err)
	}
	// An empty file is a log without diagnostics.
	if rep := parse(t, ""); rep.Lines != 0 || len(rep.Diagnostics) != 0 {
		t.Errorf("empty: %+v", rep)
	}
	// A line longer than MaxLine counts once and parses.
	long := strings.Repeat("x", 3*MaxLine) + "\nmain.go:1:1: undefined: y\n"
	if rep := parse(t, long); rep.Lines != 2 || len(rep.Diagnostics) != 1 || rep.Diagnostics[0].LogLines != [2]int{2, 2} {
		t.Errorf("long line: %+v", rep)
	}
}

// TestTestRunnersAndLinters: one log per runner or checker, its
// diagnostic's tool, location and lines, and the log's cause.
func TestTestRunnersAndLinters(t *testing.T) {
	for _, c := range []struct {
		name, log, tool, file string
		line                  int
		lines                 [2]int
		cause                 string
	}{
		{"go test -v", "=== RUN   TestAdd\n    add_test.go:9: got 3, want 4\n--- FAIL: TestAdd (0.00s)\nFAIL\nFAIL\texample.com/m\t0.01s\n",
			"go-test", "add_test.go", 9, [2]int{2, 3}, CauseTest},
		{"go vet", "# example.com/m\nvet: ./main.go:5:2: fmt.Printf format %d has arg x of wrong type string\n", "go-vet", "main.go", 5, [2]int{2, 2}, CauseLint},
		{"cargo test", "running 1 test\ntest tests::it_works ... FAILED\n\nfailures:\n\n---- tests::it_works stdout ----\nthread 'tests::it_works' panicked at src/lib.rs:10:5:\nassertion `left == right` failed\n  left: 4\n right: 5\nnote: run with `RUST_BACKTRACE=1`\n",
			"cargo-test", "src/lib.rs", 10, [2]int{7, 10}, CauseTest},
		{"jest", "FAIL src/sum.test.js\n  ● sum › adds 1 + 2\n\n    expect(received).toBe(expected)\n\n      at Object.toBe (src/sum.test.js:4:21)\n\nTests:       1 failed, 1 total\n",
			"jest", "src/sum.test.js", 4, [2]int{2, 6}, CauseTest},
		{"eslint", "\n/home/u/p/src/index.js\n  1:7   error  'x' is assigned a value but never used  no-unused-vars\n\n✖ 1 problem (1 error, 0 warnings)\n",
			"eslint", "/home/u/p/src/index.js", 1, [2]int{3, 3}, CauseLint},
		{"flake8", "src/app.py:1:1: F401 'os' imported but unused\n", "flake8", "src/app.py", 1, [2]int{1, 1}, CauseLint},
		{"mypy", "src/app.py:3: error: Incompatible types in assignment  [assignment]\nFound 1 error in 1 file\n", "mypy", "src/app.py", 3, [2]int{1, 1}, CauseLint},
		{"cmake", "CMake Error at CMakeLists.txt:12 (find_package):\n  Could not find a package configuration file provided by \"Foo\"\n", "cmake", "CMakeLists.txt", 12, [2]int{1, 2}, CauseDependency},
		{"javac", "src/A.java:3: error: cannot find symbol\n    Strin s;\n    ^\n  symbol:   class Strin\n  location: class A\n1 error\n", "javac", "src/A.java", 3, [2]int{1, 5}, CauseCompile},
	} {
		rep := parse(t, c.log)
		if len(rep.Diagnostics) == 0 {
			t.Errorf("%s: no diagnostic", c.name)
			continue
		}
		var d *Diagnostic
		for i := range rep.Diagnostics {
			if rep.Diagnostics[i].Tool == c.tool && rep.Diagnostics[i].File == c.file && rep.Diagnostics[i].Line == c.line {
				d = &rep.Diagnostics[i]
				break
			}
		}
		if d == nil || d.File != c.file || d.Line != c.line || d.LogLines != c.lines || rep.Cause != c.cause {
			t.Errorf("%s: %+v, cause %s", c.name, rep.Diagnostics, rep.Cause)
		}
	}
}
