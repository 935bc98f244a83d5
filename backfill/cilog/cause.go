package cilog

import (
	"regexp"
	"strings"

	"github.com/murphy-rl/murphy/compilefix/diag"
)

// Evidence for a log's failure cause, from the lines of its diagnostics
// (and a few whole-log markers). The first cause with evidence, in the
// order infra, environment, dependency, lint, compile, test, wins: a JDK
// class-version mismatch reported as a compile error is the environment's
// fault, a lint plugin's errors are lint even when they name source lines.
var (
	infraRE = regexp.MustCompile(`(?i)no space left on device|disk quota exceeded|could not checkout|error cloning remote repo|unable to access '[^']*': |could not read from remote repository|unsafe repository|detected dubious ownership|remote end hung up|early eof|runner has received a shutdown signal|lost communication with the server|the operation was canceled|cannot connect to the docker daemon|exceeded the maximum execution time|killed signal terminated|out of memory|oom-?kill|too many open files`)
	// netRE is infrastructure too, unless the diagnostic is a dependency
	// that could not be fetched (then it is the dependency's cause).
	netRE = regexp.MustCompile(`(?i)connection (?:reset|refused|timed out)|temporary failure in name resolution|could not resolve host|no such host|503 service unavailable|returned error: 5\d\d|toomanyrequests|rate limit exceeded`)
	envRE = regexp.MustCompile(`(?i)class file has wrong version|unsupported class file major version|UnsupportedClassVersionError|invalid (?:target|source) release|release version \d+ not supported|source option \d+ is no longer supported|requires Python|GLIBC_\d|toolchain not available|go: go\.mod requires go >=|incompatible (?:jdk|java)|no compiler is provided in this environment|error: externally-managed-environment`)
	// weakEnvRE is the environment's fault only near the failure: a missing
	// command early in a log is usually noise.
	weakEnvRE = regexp.MustCompile(`(?i)JAVA_HOME|command not found|: not found$|No such file or directory.*(?:bin/|python|java|node|gcc)`)
	depRE     = regexp.MustCompile(`(?i)could not resolve dependencies|could not find a package configuration file|could not find (?:package|library)|checksum mismatch|could not be resolved|failed to read artifact descriptor|could not find artifact|could not transfer artifact|could not resolve all (?:files|dependencies|artifacts)|could not find (?:any version|method|a version)|dependencyresolutionexception|pluginresolutionexception|cannot find module providing package|missing go\.sum entry|no matching distribution found|could not find a version that satisfies|npm err! (?:404|code E404|code ERESOLVE)|unable to resolve dependency|failed to download|unresolved dependency|package .* is not in (?:std|GOROOT)|ModuleNotFoundError|no required module provides package|error\[E0463\]: can't find crate`)
	lintRE    = regexp.MustCompile(`(?i)checkstyle|spotbugs|findbugs|maven-pmd|pmd failure|spotless|animal-sniffer|signature errors found|revapi|japicmp|apache-rat|forbiddenapis|eslint|prettier|golangci-lint|flake8|pylint|ruff|black --check|would reformat|gofmt|rubocop|clippy|ktlint|detekt|scalafmt|license-maven-plugin|enforcer`)
	testRE    = regexp.MustCompile(`(?i)there are test failures|there were failing tests|tests? failed|<<< (?:failure|error)!|^--- FAIL|^FAIL\s|failures: [1-9]|errors: [1-9]|\d+ failed|AssertionError|AssertionFailedError|ComparisonFailure|expected:<|test\S* FAILED|execution failed for task '[^']*test'`)
	compileRE = regexp.MustCompile(`(?i)compilation failure|compilation error|compileJava|compileTestJava|compileKotlin|:compile \(|:testCompile \(|cannot find symbol|error: expected|undefined reference|undefined: |SyntaxError|IndentationError|error\[E\d+\]|error TS\d+|build failed|does not compile|could not compile`)
)

// compileTools are the diagnostic tools whose errors are compile errors.
var compileTools = map[string]bool{
	diag.ToolGCC: true, diag.ToolClang: true, diag.ToolMake: true, diag.ToolGo: true, diag.ToolJavac: true,
	diag.ToolMaven: true, diag.ToolGradle: true, diag.ToolRustc: true, diag.ToolTsc: true,
}

type evidence struct {
	infra, net, env, dep, lint, compile, test, failedMarker bool
	compileDiag, testDiag, lintDiag                         bool
	// weak[i]: diagnostic i (in report order) showed weak environment
	// evidence; last is the number of diagnostics seen.
	weakAt []int
	seen   int
}

// line looks at every output line for the few markers cheap enough to
// check everywhere.
func (e *evidence) line(l string) {
	if len(l) < 12 {
		return
	}
	switch {
	case strings.Contains(l, "BUILD FAILURE"), strings.Contains(l, "BUILD FAILED"), strings.HasPrefix(l, "FAILURE: "):
		e.failedMarker = true
	}
}

// flagged looks at the lines of a diagnostic.
func (e *evidence) flagged(lines []string) {
	if len(lines) > 64 {
		lines = lines[:64]
	}
	dep, net := false, false
	for _, l := range lines {
		if l == "" {
			continue
		}
		e.infra = e.infra || infraRE.MatchString(l)
		e.env = e.env || envRE.MatchString(l)
		dep = dep || depRE.MatchString(l)
		net = net || netRE.MatchString(l)
		if weakEnvRE.MatchString(l) && (len(e.weakAt) == 0 || e.weakAt[len(e.weakAt)-1] != e.seen) {
			e.weakAt = append(e.weakAt, e.seen)
		}
		e.test = e.test || testRE.MatchString(l)
		e.compile = e.compile || compileRE.MatchString(l)
		if strings.Contains(l, "Failed to execute goal") || strings.Contains(l, "Execution failed for task") || strings.Contains(l, "> Task ") {
			e.lint = e.lint || lintRE.MatchString(l)
		}
	}
	e.dep = e.dep || dep
	e.net = e.net || (net && !dep)
}

// diagnostic looks at a diagnostic's tool.
func (e *evidence) diagnostic(d *Diagnostic) {
	e.seen++
	switch d.Kind() {
	case KindTest:
		e.testDiag = true
	case KindLint:
		e.lintDiag = true
	case KindCompile:
		e.compileDiag = d.Severity == diag.SeverityError || e.compileDiag
	}
}

// cause names the failure's cause.
func (e *evidence) cause(failed, passed, anyDiag bool) string {
	switch {
	case e.infra:
		return CauseInfra
	case e.env, len(e.weakAt) > 0 && e.weakAt[len(e.weakAt)-1] >= e.seen-3:
		return CauseEnvironment
	case e.dep:
		return CauseDependency
	case e.net:
		return CauseInfra
	case e.lint || (e.lintDiag && !e.compileDiag):
		return CauseLint
	case e.compileDiag || (e.compile && !e.testDiag):
		return CauseCompile
	case e.testDiag || e.test:
		return CauseTest
	}
	if passed && !failed && !anyDiag {
		return CauseNone
	}
	if !failed && !anyDiag && !e.failedMarker {
		return CauseNone
	}
	return CauseUnknown
}
