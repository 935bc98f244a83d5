package cilog

import (
	"regexp"
	"strings"

	"github.com/murphy-rl/murphy/compilefix/diag"
)

// Evidence for a log's failure cause. Infrastructure, environment and
// dependency failures are recognised by what the tools say about them
// (messages, never paths or names); compile, test and lint come from the
// log's structure: the failed Maven goal's plugin, Gradle task, Ant task,
// tox command, npm script or CI step command (structure.go), else the kinds
// of the diagnostics found (a compiler's located error, a failed test, a
// linter's finding). The first cause with evidence, in the order infra,
// environment, dependency, failed goal, diagnostics, failed step's command,
// wins: a JDK class-version mismatch reported as a compile error is the
// environment's fault, a lint plugin's errors are lint even when they name
// source lines.
var (
	infraRE = regexp.MustCompile(`(?i)no space left on device|disk quota exceeded|could not checkout|error cloning remote repo|unable to access '[^']*': |could not read from remote repository|unsafe repository|detected dubious ownership|remote end hung up|early eof|runner has received a shutdown signal|lost communication with the server|the operation was canceled|cannot connect to the docker daemon|exceeded the maximum execution time|killed signal terminated|out of memory|oom-?kill|too many open files`)
	// netRE is infrastructure too, unless the diagnostic is a dependency
	// that could not be fetched (then it is the dependency's cause).
	netRE = regexp.MustCompile(`(?i)connection (?:reset|refused|timed out)|temporary failure in name resolution|could not resolve host|no such host|503 service unavailable|returned error: 5\d\d|toomanyrequests|rate limit exceeded`)
	envRE = regexp.MustCompile(`(?i)class file has wrong version|unsupported class file major version|UnsupportedClassVersionError|invalid (?:target|source) release|release version \d+ not supported|source option \d+ is no longer supported|requires Python|GLIBC_\d|toolchain not available|go: go\.mod requires go >=|incompatible (?:jdk|java)|no compiler is provided in this environment|error: externally-managed-environment|InterpreterNotFound|could not find python interpreter|No Java runtime present`)
	// weakEnvRE is the environment's fault only near the failure: a missing
	// command early in a log is usually noise.
	weakEnvRE = regexp.MustCompile(`(?i)JAVA_HOME|command not found|: not found$|No such file or directory.*(?:bin/|python|java|node|gcc)`)
	depRE     = regexp.MustCompile(`(?i)could not resolve dependencies|could not find a package configuration file|could not find (?:package|library)|checksum mismatch|could not be resolved|failed to read artifact descriptor|could not find artifact|could not transfer artifact|could not resolve all (?:files|dependencies|artifacts)|could not find (?:any version|method|a version)|dependencyresolutionexception|pluginresolutionexception|non-resolvable parent pom|cannot find module providing package|missing go\.sum entry|no matching distribution found|could not find a version that satisfies|npm err! (?:404|code E404|code ERESOLVE|code ETARGET)|unable to resolve dependency|failed to download|unresolved dependency|package .* is not in (?:std|GOROOT)|ModuleNotFoundError|no required module provides package|error\[E0463\]: can't find crate|could not install deps|ResolutionImpossible|failed to select a version for`)
	testRE    = regexp.MustCompile(`(?i)there are test failures|there were failing tests|tests? failed|<<< (?:failure|error)!|^--- FAIL|^FAIL\s|failures: [1-9]|errors: [1-9]|\d+ failed|AssertionError|AssertionFailedError|ComparisonFailure|expected:<|test\S* FAILED|execution failed for task '[^']*test'`)
	compileRE = regexp.MustCompile(`(?i)compilation failure|compilation error|compileJava|compileTestJava|compileKotlin|:compile \(|:testCompile \(|cannot find symbol|error: expected|undefined reference|undefined: |SyntaxError|IndentationError|error\[E\d+\]|error TS\d+|does not compile|could not compile`)
)

// compileTools are the diagnostic tools whose errors are compile errors.
var compileTools = map[string]bool{
	diag.ToolGCC: true, diag.ToolClang: true, diag.ToolMake: true, diag.ToolGo: true, diag.ToolJavac: true,
	diag.ToolMaven: true, diag.ToolGradle: true, diag.ToolRustc: true, diag.ToolTsc: true,
}

type evidence struct {
	infra, net, env, dep, compile, test, failedMarker bool
	compileDiag, testDiag, lintDiag                   bool
	// failed holds the causes of the goals, tasks, scripts and commands the
	// log shows failing (structure.go).
	failed map[string]bool
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
	}
	e.dep = e.dep || dep
	e.net = e.net || (net && !dep)
}

// fail records the cause a failed goal, task or command stands for.
func (e *evidence) fail(cause string) {
	if cause == "" {
		return
	}
	if e.failed == nil {
		e.failed = map[string]bool{}
	}
	e.failed[cause] = true
}

// diagnostic looks at a diagnostic's tool and what failed.
func (e *evidence) diagnostic(d *Diagnostic) {
	e.seen++
	switch d.Tool {
	case toolMaven:
		if a, g := mavenGoal(d.Message); a != "" {
			e.fail(mavenPluginCause(a, g))
		}
	case toolGradle:
		if strings.HasPrefix(d.Code, ":") {
			e.fail(gradleTaskCause(d.Code))
		}
	case toolAnt:
		e.fail(antCause(d.Message))
	case toolTox:
		e.fail(commandCause(d.Code))
	case toolNpm:
		e.fail(scriptCause(d.Code))
	}
	switch d.Kind() {
	case KindTest:
		e.testDiag = true
	case KindLint:
		e.lintDiag = true
	case KindCompile:
		if d.Tool == diag.ToolPython && diag.InstalledPackage(d.File) {
			// an installed distribution does not compile on this
			// interpreter: the dependency's version is the fault
			e.dep = true
			break
		}
		e.compileDiag = d.Severity == diag.SeverityError || e.compileDiag
	}
}

// cause names the failure's cause; steps are the log's steps and the
// build tool's (Maven mojos, Gradle tasks), whose failed ones count as
// failed goals and commands.
func (e *evidence) cause(failed, passed, anyDiag bool, steps, tools []Step) string {
	for _, s := range tools {
		if s.Failed {
			if strings.HasPrefix(s.Name, ":") {
				e.fail(gradleTaskCause(s.Name))
			} else if a, g := mojo(s.Name); a != "" {
				e.fail(mavenPluginCause(a, g))
			}
		}
	}
	if c := e.told(); c != "" {
		return c
	}
	if c := e.structural(); c != "" {
		return c
	}
	for i := len(steps) - 1; i >= 0; i-- {
		if steps[i].Failed {
			if c := commandCause(strings.TrimPrefix(steps[i].Name, "Run ")); c != "" {
				return c
			}
		}
	}
	switch {
	case e.compile:
		return CauseCompile
	case e.test:
		return CauseTest
	case passed && !failed && !anyDiag, !failed && !anyDiag && !e.failedMarker:
		return CauseNone
	}
	return CauseUnknown
}

// told is the cause the tools' messages name: infrastructure, the
// environment, a dependency ("" = none).
func (e *evidence) told() string {
	switch {
	case e.infra:
		return CauseInfra
	case e.env, len(e.weakAt) > 0 && e.weakAt[len(e.weakAt)-1] >= e.seen-3:
		return CauseEnvironment
	case e.dep:
		return CauseDependency
	case e.net:
		return CauseInfra
	}
	return ""
}

// structural is the cause of what failed (a goal, task, script), else of
// the diagnostics' kinds ("" = none).
func (e *evidence) structural() string {
	switch {
	case e.failed[CauseCompile]:
		return CauseCompile
	case e.failed[CauseTest]:
		return CauseTest
	case e.failed[CauseLint], e.lintDiag && !e.compileDiag:
		return CauseLint
	case e.compileDiag:
		return CauseCompile
	case e.testDiag:
		return CauseTest
	}
	return ""
}

// mojo parses the name of a Maven mojo step ("maven-compiler-plugin:3.1:compile
// (default-compile) @ app" or "compiler:3.1:compile ...") into its plugin's
// artifact id and goal.
func mojo(name string) (artifact, goal string) {
	coords, _, _ := strings.Cut(name, " ")
	parts := strings.Split(coords, ":")
	if len(parts) < 3 {
		return "", ""
	}
	artifact, goal = parts[len(parts)-3], parts[len(parts)-1]
	if !strings.Contains(artifact, "-") {
		artifact = "maven-" + artifact + "-plugin" // the prefix form
	}
	return artifact, goal
}
