package cilog

import (
	"path/filepath"
	"testing"
)

// causeCases are excerpts of failing CI logs as each build tool prints its
// failure, in projects named after linters and test tools: the cause comes
// from what failed (the goal's plugin, the task, the script, the command,
// the diagnostics' kind), never from a word in a path or a project name.
var causeCases = []struct {
	name, log, cause string
}{
	{"ant javac, project named after a linter", `$ ant -noinput -buildfile build.xml test
Buildfile: /home/travis/build/u/checkstyle-addons/build.xml

compile:
    [javac] Compiling 212 source files to /home/travis/build/u/checkstyle-addons/build/classes
    [javac] /home/travis/build/u/checkstyle-addons/src/org/u/File.java:73: error: cannot find symbol
    [javac]         Lint.check(x);
    [javac]         ^
    [javac]   symbol:   variable Lint
    [javac]   location: class File
    [javac] 1 error

BUILD FAILED
/home/travis/build/u/checkstyle-addons/build.xml:45: Compile failed; see the compiler error output for details.

Total time: 9 seconds
`, CauseCompile},
	{"ant junit", `test:
    [junit] Running org.u.ParserTest
    [junit] Tests run: 4, Failures: 1, Errors: 0, Skipped: 0, Time elapsed: 0.03 sec
    [junit] Test org.u.ParserTest FAILED

BUILD FAILED
/home/travis/build/u/pmd-rules/build.xml:88: Test org.u.ParserTest failed

Total time: 14 seconds
`, CauseTest},
	{"maven compile, project named after a linter", `[INFO] --- maven-compiler-plugin:3.8.1:compile (default-compile) @ checkstyle-config ---
[INFO] Compiling 12 source files to /home/runner/work/checkstyle-config/checkstyle-config/target/classes
[INFO] -------------------------------------------------------------
[ERROR] COMPILATION ERROR : 
[INFO] -------------------------------------------------------------
[ERROR] /home/runner/work/checkstyle-config/checkstyle-config/src/main/java/org/u/checkstyle/Rule.java:[12,8] cannot find symbol
  symbol:   class Severity
  location: package org.u.checkstyle
[INFO] 1 error
[INFO] BUILD FAILURE
[ERROR] Failed to execute goal org.apache.maven.plugins:maven-compiler-plugin:3.8.1:compile (default-compile) on project checkstyle-config: Compilation failure
[ERROR] /home/runner/work/checkstyle-config/checkstyle-config/src/main/java/org/u/checkstyle/Rule.java:[12,8] cannot find symbol
[ERROR]   symbol:   class Severity
[ERROR]   location: package org.u.checkstyle
[ERROR] -> [Help 1]
`, CauseCompile},
	{"maven checkstyle, project named after a compiler", `[INFO] --- maven-checkstyle-plugin:3.1.2:check (validate) @ javac-utils ---
[ERROR] src/main/java/org/u/Main.java:[14,5] (javadoc) MissingJavadocMethod: Missing a Javadoc comment.
[INFO] BUILD FAILURE
[ERROR] Failed to execute goal org.apache.maven.plugins:maven-checkstyle-plugin:3.1.2:check (validate) on project javac-utils: You have 1 Checkstyle violation. -> [Help 1]
`, CauseLint},
	{"maven surefire, project named after a linter", `[INFO] --- maven-surefire-plugin:2.22.2:test (default-test) @ pmd-java ---
[ERROR] Tests run: 3, Failures: 1, Errors: 0, Skipped: 0, Time elapsed: 0.1 s <<< FAILURE! - in org.u.RuleTest
[ERROR] org.u.RuleTest.detects(org.u.RuleTest)  Time elapsed: 0.01 s  <<< FAILURE!
java.lang.AssertionError: expected:<1> but was:<0>
	at org.u.RuleTest.detects(RuleTest.java:22)
[INFO] BUILD FAILURE
[ERROR] Failed to execute goal org.apache.maven.plugins:maven-surefire-plugin:2.22.2:test (default-test) on project pmd-java: There are test failures.
`, CauseTest},
	{"maven, unresolvable parent", `[ERROR] [ERROR] Some problems were encountered while processing the POMs:
[FATAL] Non-resolvable parent POM for org.u:spotbugs-ext:1.0: Could not find artifact org.u:parent:pom:3 in central (https://repo.maven.apache.org/maven2) and 'parent.relativePath' points at wrong local POM @ line 5, column 11
[ERROR] The build could not read 1 project -> [Help 1]
`, CauseDependency},
	{"gradle compileJava, project named after linters", `> Task :eslint-bridge:compileJava FAILED
/home/runner/work/sonar/sonar/eslint-bridge/src/main/java/org/u/Bridge.java:31: error: cannot find symbol
        Linter l = new Linter();
        ^
  symbol:   class Linter
  location: class Bridge
1 error

FAILURE: Build failed with an exception.

* What went wrong:
Execution failed for task ':eslint-bridge:compileJava'.
> Compilation failed; see the compiler error output for details.

* Try:
> Run with --stacktrace option to get the stack trace.

BUILD FAILED in 12s
`, CauseCompile},
	{"gradle checkstyle, project named after a test tool", `> Task :junit-helpers:checkstyleMain FAILED
[ant:checkstyle] [ERROR] /home/runner/work/x/x/junit-helpers/src/main/java/org/u/A.java:3:1: Wrong order for import. [ImportOrder]

FAILURE: Build failed with an exception.

* What went wrong:
Execution failed for task ':junit-helpers:checkstyleMain'.
> Checkstyle rule violations were found. See the report at: file:///home/runner/work/x/x/junit-helpers/build/reports/checkstyle/main.html

BUILD FAILED in 7s
`, CauseLint},
	{"make and gcc, project named after a linter", `make[1]: Entering directory '/home/runner/work/cpplint-c/cpplint-c/src'
gcc -Wall -O2 -c lint.c -o lint.o
lint.c: In function 'check':
lint.c:17:5: error: implicit declaration of function 'report' [-Werror=implicit-function-declaration]
   17 |     report(x);
      |     ^~~~~~
cc1: some warnings being treated as errors
make[1]: *** [Makefile:9: lint.o] Error 1
make[1]: Leaving directory '/home/runner/work/cpplint-c/cpplint-c/src'
make: *** [Makefile:4: all] Error 2
`, CauseCompile},
	{"go build, module named after a linter", `$ go build ./...
# github.com/u/golangci-lint-rules/rules
rules/naming.go:41:9: undefined: lintResult
The command "go build ./..." exited with 1.
`, CauseCompile},
	{"go test, module named after a linter", `$ go test ./...
--- FAIL: TestNaming (0.00s)
    naming_test.go:12: got 2 issues, want 1
FAIL
FAIL	github.com/u/golint-extra	0.004s
The command "go test ./..." exited with 1.
`, CauseTest},
	{"cargo build, crate named after a linter", `   Compiling clippy-helpers v0.1.0 (/home/runner/work/clippy-helpers/clippy-helpers)
error[E0425]: cannot find value ` + "`lints`" + ` in this scope
 --> src/lib.rs:7:5
  |
7 |     lints.len()
  |     ^^^^^ not found in this scope

error: could not compile ` + "`clippy-helpers`" + ` (lib) due to 1 previous error
`, CauseCompile},
	{"npm test with jest, package named after a linter", `> eslint-config-u@1.2.0 test
> jest

FAIL src/rules.test.js
  ● rules › exports every rule

    expect(received).toBe(expected)

      at Object.toBe (src/rules.test.js:9:27)

Tests:       1 failed, 3 passed, 4 total
npm ERR! Lifecycle script ` + "`test`" + ` failed with error:
npm ERR! Error: command failed
npm ERR!   in workspace: eslint-config-u@1.2.0
`, CauseTest},
	{"npm lint, package named after a test tool", `> jest-helpers@0.3.1 lint /home/travis/build/u/jest-helpers
> eslint src

/home/travis/build/u/jest-helpers/src/index.js
  3:7  error  'unused' is assigned a value but never used  no-unused-vars

✖ 1 problem (1 error, 0 warnings)

npm ERR! code ELIFECYCLE
npm ERR! errno 1
npm ERR! jest-helpers@0.3.1 lint: ` + "`eslint src`" + `
npm ERR! Exit status 1
`, CauseLint},
	{"tox pytest, project named after a linter", `py38 run-test: commands[0] | pytest tests
============================= test session starts ==============================
collected 12 items

tests/test_checker.py ..F.........                                       [100%]

=================================== FAILURES ===================================
________________________________ test_messages _________________________________

    def test_messages():
>       assert run("x = 1") == []
E       AssertionError: assert ['C0103'] == []

tests/test_checker.py:14: AssertionError
=========================== short test summary info ============================
FAILED tests/test_checker.py::test_messages - AssertionError: assert ['C0103...
========================= 1 failed, 11 passed in 0.31s =========================
ERROR: InvocationError for command /home/travis/build/u/pylint-plugin/.tox/py38/bin/pytest tests (exited with code 1)
___________________________________ summary ____________________________________
ERROR:   py38: commands failed
`, CauseTest},
	{"tox flake8, project named after a test tool", `flake8 run-test: commands[0] | flake8 src
src/pytest_mock_ext/plugin.py:12:1: F401 'os' imported but unused
ERROR: InvocationError for command /home/travis/build/u/pytest-mock-ext/.tox/flake8/bin/flake8 src (exited with code 1)
___________________________________ summary ____________________________________
ERROR:   flake8: commands failed
`, CauseLint},
	{"pytest collection error, project named after a linter", `==================================== ERRORS ====================================
__________________ ERROR collecting tests/test_bugbear.py ___________________
tests/test_bugbear.py:3: in <module>
    from flake8_bugbear_ext import checks
E     File "/home/runner/work/flake8-bugbear-ext/flake8-bugbear-ext/flake8_bugbear_ext/checks.py", line 40
E       except ValueError, e:
E              ^^^^^^^^^^^^^
E   SyntaxError: multiple exception types must be parenthesized
=========================== short test summary info ============================
ERROR tests/test_bugbear.py
!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!
`, CauseCompile},
	{"plain script, missing tool", `+ ./configure
+ make
./build.sh: line 4: cmake: command not found
`, CauseEnvironment},
	{"tox interpreter missing", `ERROR: InterpreterNotFound: python3.4
___________________________________ summary ____________________________________
ERROR:  py34: InterpreterNotFound: python3.4
`, CauseEnvironment},
	{"gha step command, no diagnostics", "2024-01-01T10:00:00.0000000Z Requested labels: ubuntu-latest\n" +
		"2024-01-01T10:00:01.0000000Z ##[group]Run npm run lint\n" +
		"2024-01-01T10:00:01.0000000Z \x1b[36;1mnpm run lint\x1b[0m\n" +
		"2024-01-01T10:00:01.0000000Z ##[endgroup]\n" +
		"2024-01-01T10:00:02.0000000Z \n" +
		"2024-01-01T10:00:02.1000000Z ##[error]Process completed with exit code 1.\n", CauseLint},
}

func TestCausesFromStructure(t *testing.T) {
	t.Parallel()
	for _, c := range causeCases {
		rep := parse(t, c.log)
		if rep.Cause != c.cause {
			t.Errorf("%s: cause %s, want %s; diagnostics:", c.name, rep.Cause, c.cause)
			for _, d := range rep.Diagnostics {
				t.Logf("  %s %s:%d [%s] %q", d.Tool, d.File, d.Line, d.Code, d.Message)
			}
		}
	}
}

// TestCausesOfRealPairs: the shared BugSwarm pairs' failing logs.
func TestCausesOfRealPairs(t *testing.T) {
	t.Parallel()
	dir := "../../../shared/data/cilogs/bugswarm-pairs"
	for _, c := range []struct{ logCase, cause string }{
		{"davidmoten-rxjava-jdbc-65230625", CauseCompile},
		// a SyntaxError inside coverage, installed for Python 3.2
		{"marshallward-f90nml-81508928", CauseDependency},
	} {
		rep, err := ParseFile(filepath.Join(dir, c.logCase, "failing.log"))
		if err != nil {
			t.Skipf("no BugSwarm pairs: %v", err)
		}
		if rep.Cause != c.cause {
			t.Errorf("%s: cause %s, want %s", c.logCase, rep.Cause, c.cause)
		}
		if rep, err := ParseFile(filepath.Join(dir, c.logCase, "passing.log")); err != nil || rep.Cause != CauseNone {
			t.Errorf("%s passing: %v %+v", c.logCase, err, rep)
		}
	}
}

// TestStructureClassifiers: the goal, task, script and command
// classifiers on their own.
func TestStructureClassifiers(t *testing.T) {
	t.Parallel()
	for cmd, want := range map[string]string{
		"coverage run --source f90nml test_f90nml.py":    CauseTest,
		"python -m pytest -x tests":                      CauseTest,
		"CI=1 npm run lint":                              CauseLint,
		"yarn test":                                      CauseTest,
		"make check":                                     CauseTest,
		"./gradlew :app:compileDebugJavaWithJavac":       CauseCompile,
		"go vet ./...":                                   CauseLint,
		"cargo clippy -- -D warnings":                    CauseLint,
		"mvn -B compile":                                 CauseCompile,
		"sudo -E python3 setup.py install":               "",
		"/home/u/.tox/py/bin/pytest tests":               CauseTest,
		"npm install":                                    "",
		"python -m flake8 --max-line-length 100 pytest/": CauseLint,
	} {
		if got := commandCause(cmd); got != want {
			t.Errorf("commandCause(%q) = %q, want %q", cmd, got, want)
		}
	}
	for _, c := range []struct{ artifact, goal, want string }{
		{"maven-compiler-plugin", "testCompile", CauseCompile},
		{"animal-sniffer-maven-plugin", "check", CauseLint},
		{"maven-failsafe-plugin", "verify", CauseTest},
		{"jacoco-maven-plugin", "check", CauseLint},
		{"jacoco-maven-plugin", "prepare-agent", ""},
		{"exec-maven-plugin", "java", ""},
	} {
		if got := mavenPluginCause(c.artifact, c.goal); got != c.want {
			t.Errorf("mavenPluginCause(%s, %s) = %q, want %q", c.artifact, c.goal, got, c.want)
		}
	}
	for task, want := range map[string]string{":compileJava": CauseCompile, ":lib:test": CauseTest, ":detektMain": CauseLint,
		":checkstyle-rules:integrationTest": CauseTest, ":jar": ""} {
		if got := gradleTaskCause(task); got != want {
			t.Errorf("gradleTaskCause(%s) = %q, want %q", task, got, want)
		}
	}
}

// TestPytestQuotedSyntaxError: the error pytest quotes while collecting is
// one diagnostic over its "E" lines, located at the SyntaxError's header.
func TestPytestQuotedSyntaxError(t *testing.T) {
	t.Parallel()
	var log string
	for _, c := range causeCases {
		if c.name == "pytest collection error, project named after a linter" {
			log = c.log
		}
	}
	d := find(t, parse(t, log), "multiple exception types")
	if d.Tool != "python" || d.Code != "SyntaxError" || d.Line != 40 || d.LogLines != [2]int{5, 8} ||
		filepath.Base(d.File) != "checks.py" || d.Kind() != KindCompile {
		t.Errorf("%+v", d)
	}
}
