package cilog

import (
	"path"
	"regexp"
	"strings"
)

// The structure of a failure: which goal, task, script or command failed,
// read from the shape the build tool prints it in, never from words in
// paths or project names. A Maven project called "checkstyle-tools" whose
// maven-compiler-plugin goal fails failed to compile; a tox environment
// whose flake8 command fails failed a linter.

var (
	// mvnGoalPartsRE: "Failed to execute goal G:A:V:GOAL (EXEC) on project P: ...".
	mvnGoalPartsRE = regexp.MustCompile(`^Failed to execute goal ([\w.-]+):([\w.-]+):([^:\s]+):([\w.-]+)(?: \([^)]*\))? on project `)
	// gradleExecRE: "Execution failed for task ':a:b:compileJava'."
	gradleExecRE = regexp.MustCompile(`Execution failed for task '([^']+)'`)
	// antFailRE: the line after Ant's "BUILD FAILED": the build file, its
	// line and the failed task's message.
	antFailRE = regexp.MustCompile(`^(\S+\.xml):(\d+): (.+)$`)
	// npmScriptRE: the script npm ran when it failed (npm 6 and 7+).
	npmScriptRE = regexp.MustCompile("^npm (?:ERR!|error) (?:Failed at the \\S+ (\\S+) script|Lifecycle script `([^`]+)` failed|\\S+@\\S+ ([\\w:.-]+): `)")
	// toxInvocationRE: tox 3's failed command; toxExitRE: tox 4's.
	toxInvocationRE = regexp.MustCompile(`^ERROR: InvocationError for command (.+?)(?: \(exited with code -?\d+\))?$`)
	toxExitRE       = regexp.MustCompile(`^[\w.-]+: exit -?[1-9]\d* \([\d.]+ seconds\) \S*> (.+?)(?: pid=\d+)?$`)
)

// mavenGoal returns the plugin's artifact id and the goal of a Maven goal
// failure message ("" when it names none: a dependency resolution failure
// names no plugin).
func mavenGoal(msg string) (artifact, goal string) {
	m := mvnGoalPartsRE.FindStringSubmatch(msg)
	if m == nil {
		return "", ""
	}
	return m[2], m[4]
}

// goalCode is the code of a Maven goal failure: "artifact:goal".
func goalCode(msg string) string {
	if a, g := mavenGoal(msg); a != "" {
		return a + ":" + g
	}
	return ""
}

// gradleTask is the path of the task a Gradle failure names.
func gradleTask(msg string) string {
	if m := gradleExecRE.FindStringSubmatch(msg); m != nil {
		return m[1]
	}
	return ""
}

// npmScript is the script npm's error lines say it ran.
func npmScript(lines []string) string {
	for _, l := range lines {
		if m := npmScriptRE.FindStringSubmatch(l); m != nil {
			return m[1] + m[2] + m[3]
		}
	}
	return ""
}

// mavenPluginCause is the cause a failed goal of a plugin stands for.
func mavenPluginCause(artifact, goal string) string {
	stem := strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(artifact, "maven-"), "-maven-plugin"), "-plugin")
	switch stem {
	case "compiler", "kotlin", "scala", "gmavenplus", "groovy-eclipse-compiler", "aspectj", "protobuf", "protoc-jar", "kapt":
		return CauseCompile
	case "surefire", "failsafe", "scalatest", "invoker", "pitest", "surefire-report":
		return CauseTest
	case "checkstyle", "pmd", "spotbugs", "findbugs", "spotless", "animal-sniffer", "revapi", "japicmp", "apache-rat", "rat",
		"forbiddenapis", "license", "enforcer", "sortpom", "formatter", "fmt", "javadoc", "modernizer", "dependency-check",
		"duplicate-finder", "jdepend", "clirr", "ktlint", "detekt", "impsort", "editorconfig", "xml-format", "prettier":
		return CauseLint
	case "jacoco", "cobertura":
		if strings.Contains(goal, "check") {
			return CauseLint
		}
	case "dependency":
		if strings.HasPrefix(goal, "analyze") {
			return CauseLint
		}
		return CauseDependency
	}
	return ""
}

// gradleTaskCause is the cause a failed Gradle task stands for, by its
// name (the last component of its path).
func gradleTaskCause(task string) string {
	name := task[strings.LastIndex(task, ":")+1:]
	l := strings.ToLower(name)
	switch {
	case strings.HasPrefix(l, "compile") || strings.HasPrefix(l, "kapt") || strings.HasSuffix(l, "javawithjavac"):
		return CauseCompile
	case strings.HasPrefix(l, "checkstyle"), strings.HasPrefix(l, "pmd"), strings.HasPrefix(l, "spotbugs"), strings.HasPrefix(l, "findbugs"),
		strings.HasPrefix(l, "spotless"), strings.HasPrefix(l, "ktlint"), strings.HasPrefix(l, "detekt"), strings.HasPrefix(l, "lint"),
		strings.HasPrefix(l, "apicheck"), strings.HasPrefix(l, "javadoc"), strings.HasPrefix(l, "verifygooglejavaformat"),
		strings.HasPrefix(l, "license"), strings.HasPrefix(l, "rat"), strings.HasPrefix(l, "forbiddenapis"):
		return CauseLint
	case l == "test" || strings.HasPrefix(l, "test") || strings.HasSuffix(l, "test") || strings.HasSuffix(l, "tests"):
		return CauseTest
	}
	return ""
}

// antCause is the cause behind the message of Ant's failed task.
func antCause(msg string) string {
	switch l := strings.ToLower(msg); {
	case strings.HasPrefix(l, "compile failed"):
		return CauseCompile
	case strings.HasPrefix(l, "test ") && strings.Contains(l, "failed"), strings.HasPrefix(l, "tests failed"),
		strings.Contains(l, "junit"), strings.Contains(l, "testng"):
		return CauseTest
	case strings.Contains(l, "checkstyle"), strings.Contains(l, "pmd"), strings.Contains(l, "findbugs"), strings.Contains(l, "spotbugs"):
		// the failed task is a linter's (its message names the task)
		return CauseLint
	}
	return ""
}

// scriptCause is the cause a failed package-manager script (npm, yarn,
// make target, Ant target) stands for, by the conventional script names.
func scriptCause(script string) string {
	s := strings.ToLower(script)
	if i := strings.IndexAny(s, ":"); i > 0 {
		s = s[:i] // "test:unit", "lint:js"
	}
	switch s {
	case "test", "tests", "check", "unit", "e2e", "integration", "coverage", "cover", "jest", "mocha", "spec":
		return CauseTest
	case "lint", "eslint", "tslint", "stylelint", "prettier", "format", "fmt", "style", "typecheck", "type-check", "types", "vet":
		return CauseLint
	case "build", "compile", "tsc", "all", "dist", "bundle", "webpack":
		return CauseCompile
	}
	return ""
}

// toolCause is the cause behind a failing run of a named tool (an
// executable, a Python module run with -m, a cargo or go subcommand).
func toolCause(name string) string {
	n := strings.ToLower(path.Base(name))
	n = strings.TrimSuffix(strings.TrimSuffix(n, ".exe"), ".cmd")
	switch n {
	case "pytest", "py.test", "nosetests", "nose", "nose2", "unittest", "trial", "green", "stestr", "testr", "ward",
		"jest", "mocha", "karma", "vitest", "ava", "tap", "jasmine", "rspec", "phpunit", "ctest", "prove", "bats":
		return CauseTest
	case "flake8", "pylint", "pycodestyle", "pep8", "pyflakes", "mypy", "pyright", "pytype", "black", "isort", "ruff", "bandit",
		"pydocstyle", "doc8", "codespell", "yapf", "autopep8", "pre-commit", "eslint", "tslint", "prettier", "stylelint",
		"golangci-lint", "golint", "gofmt", "goimports", "staticcheck", "revive", "errcheck", "rubocop", "checkstyle",
		"ktlint", "detekt", "shellcheck", "hadolint", "markdownlint", "clippy", "cargo-clippy", "rustfmt", "clang-format",
		"clang-tidy", "cpplint", "cppcheck", "yamllint", "jshint", "jscs", "standard", "xo", "vale", "check-manifest", "twine":
		return CauseLint
	case "javac", "gcc", "g++", "cc", "c++", "clang", "clang++", "tsc", "rustc", "kotlinc", "scalac", "go-build", "compileall", "py_compile":
		return CauseCompile
	}
	return ""
}

// commandCause is the cause behind a failed command line: the tool it runs
// once environment assignments and wrappers (sudo, time, env, coverage run,
// python -m) are set aside, the subcommand of go, cargo, npm, yarn, make,
// ant, gradle and mvn, and test scripts by their conventional names
// (test_*.py, *_test.py, run_tests...).
func commandCause(cmd string) string {
	w := strings.Fields(strings.Trim(strings.TrimSpace(cmd), "\"'"))
	for len(w) > 0 {
		first := w[0]
		base := strings.ToLower(path.Base(first))
		if strings.Contains(first, "=") && !strings.HasPrefix(first, "-") || wrappers[base] {
			w = w[1:] // VAR=value, sudo, time...
			continue
		}
		if next, ok := unwrap(base, w); ok {
			w = next
			continue
		}
		if sub, ok := subcommands[base]; ok {
			return sub(w[1:])
		}
		if c := toolCause(first); c != "" {
			return c
		}
		return scriptFileCause(first)
	}
	return ""
}

// wrappers run the command that follows them.
var wrappers = map[string]bool{"sudo": true, "time": true, "env": true, "xvfb-run": true, "nice": true, "eval": true, "exec": true}

// unwrap returns the command a Python interpreter or coverage runs as a
// module (python -m X, coverage run -m X); ok is false when base is
// neither or names a script (then scriptArgs decides).
func unwrap(base string, w []string) ([]string, bool) {
	switch {
	case strings.HasPrefix(base, "python") || base == "py" || strings.HasPrefix(base, "pypy"):
		if len(w) > 2 && w[1] == "-m" {
			return w[2:], true
		}
	case base == "coverage" || base == "coverage3":
		rest := w[1:]
		if len(rest) > 0 && rest[0] == "run" {
			rest = rest[1:]
		}
		rest = skipOptions(rest)
		if len(rest) > 1 && rest[0] == "-m" {
			return rest[1:], true
		}
	}
	return nil, false
}

// skipOptions drops coverage run's options and their values.
func skipOptions(rest []string) []string {
	for len(rest) > 0 && strings.HasPrefix(rest[0], "-") && rest[0] != "-m" {
		takesValue := strings.HasPrefix(rest[0], "--") && !strings.Contains(rest[0], "=") && len(rest) > 1 &&
			!strings.HasPrefix(rest[1], "-") && rest[0] != "--branch" && rest[0] != "--parallel-mode" && rest[0] != "--append"
		if takesValue {
			rest = rest[1:]
		}
		rest = rest[1:]
	}
	return rest
}

// subcommands classify a tool's run by its arguments.
var subcommands = map[string]func(args []string) string{
	"go":    goSubcommandCause,
	"cargo": cargoCause,
	"npm":   scriptsCause, "yarn": scriptsCause, "pnpm": scriptsCause, "npx": scriptsCause,
	"make": scriptsCause, "gmake": scriptsCause, "ant": scriptsCause, "rake": scriptsCause,
	"gradle": gradleArgsCause, "gradlew": gradleArgsCause,
	"mvn": mavenArgsCause, "mvnw": mavenArgsCause,
	"coverage": scriptArgs, "coverage3": scriptArgs,
	"python": scriptArgs, "python3": scriptArgs, "python2": scriptArgs, "pypy": scriptArgs, "pypy3": scriptArgs, "py": scriptArgs,
}

// scriptArgs: an interpreter (or coverage run) given a script.
func scriptArgs(args []string) string {
	if len(args) > 0 && args[0] == "run" {
		args = skipOptions(args[1:])
	}
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return scriptFileCause(args[0])
	}
	return ""
}

// cargoCause: cargo build/test/clippy.
func cargoCause(args []string) string {
	if len(args) == 0 {
		return ""
	}
	switch args[0] {
	case "build", "check", "b", "c":
		return CauseCompile
	case "test", "t", "nextest", "bench":
		return CauseTest
	case "clippy", "fmt":
		return CauseLint
	}
	return ""
}

// scriptsCause: the script or target npm, yarn, make or ant ran.
func scriptsCause(args []string) string {
	for _, a := range args {
		if a == "run" || a == "run-script" || strings.HasPrefix(a, "-") || strings.Contains(a, "=") {
			continue
		}
		if c := scriptCause(a); c != "" {
			return c
		}
		return toolCause(a)
	}
	return ""
}

// gradleArgsCause: the tasks gradle ran.
func gradleArgsCause(args []string) string {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			if c := gradleTaskCause(a); c != "" {
				return c
			}
		}
	}
	return ""
}

// mavenArgsCause: the phases and goals mvn ran that say what failed.
func mavenArgsCause(args []string) string {
	for _, a := range args {
		switch a {
		case "compile", "test-compile":
			return CauseCompile
		case "checkstyle:check", "pmd:check", "spotbugs:check", "spotless:check", "enforcer:enforce", "apache-rat:check":
			return CauseLint
		}
	}
	return ""
}

// goSubcommandCause: go build/vet/test.
func goSubcommandCause(args []string) string {
	if len(args) == 0 {
		return ""
	}
	switch args[0] {
	case "build", "install", "run":
		return CauseCompile
	case "test":
		return CauseTest
	case "vet", "fmt":
		return CauseLint
	}
	return ""
}

// scriptFileCause: a script named as a test by the conventions of its
// language's test runners.
func scriptFileCause(p string) string {
	b := strings.ToLower(path.Base(p))
	stem := strings.TrimSuffix(b, path.Ext(b))
	switch {
	case strings.HasPrefix(stem, "test_"), strings.HasSuffix(stem, "_test"), strings.HasSuffix(stem, "_tests"),
		stem == "test" || stem == "tests" || stem == "runtests" || stem == "run_tests" || stem == "run-tests" || stem == "test-all":
		return CauseTest
	case stem == "setup" && path.Ext(b) == ".py":
		return "" // setup.py: the command after it decides
	}
	return toolCause(b)
}
