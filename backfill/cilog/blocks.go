package cilog

import (
	"regexp"
	"strconv"
	"strings"
)

// Log-level error blocks: what CI services, build tools, test runners and
// runtimes print when something fails, that no compiler format covers.
// A block is a head line and its continuation lines.

// Block kinds: the Tool of the diagnostic a block becomes.
const (
	toolMaven     = "maven"
	toolSurefire  = "surefire"
	toolGradle    = "gradle"
	toolJava      = "java"
	toolJenkins   = "jenkins"
	toolGit       = "git"
	toolShell     = "shell"
	toolCI        = "ci"
	toolPython    = "python"
	toolGoTest    = "go-test"
	toolPytest    = "pytest"
	toolNpm       = "npm"
	toolRuntime   = "runtime"
	toolCargoTest = "cargo-test"
	toolCMake     = "cmake"
	toolJest      = "jest"
	toolESLint    = "eslint"
	toolMypy      = "mypy"
	toolPyLint    = "flake8"
	toolGoVet     = "go-vet"
	toolAnt       = "ant"
	toolTox       = "tox"
	maxBlockLines = 400
)

var (
	mvnGoalRE     = regexp.MustCompile(`^\[ERROR\] Failed to execute goal `)
	mvnLevelRE    = regexp.MustCompile(`^\[(ERROR|FATAL)\]( |$)`)
	mvnTestRE     = regexp.MustCompile(`^\[ERROR\] (?:(\S+)\((\S+)\)|(\S+?)\.(\w+)(?:\(\))?)\s+(?:--\s+)?Time elapsed: .*<<< (?:FAILURE|ERROR)!`)
	mvnTestsRunRE = regexp.MustCompile(`^\[ERROR\] Tests run: \d+, Failures: \d+, Errors: \d+.*<<< (?:FAILURE|ERROR)!`)
	jenkinsErrRE  = regexp.MustCompile(`^(ERROR|FATAL): \S`)
	javaExcRE     = regexp.MustCompile(`^\s*(?:Exception in thread "[^"]*" )?(?:[a-z_$][\w$]*\.)+[A-Z][\w$]*(?:Exception|Error|Throwable|Failure|Failed)(?::\s.*| at \S+:\d+)?$`)
	frameRE       = regexp.MustCompile(`^\s+at [\w$.<>/]+\(([^():]*)(?::(\d+))?\)`)
	gradleFailRE  = regexp.MustCompile(`^FAILURE: Build (?:failed|completed) with`)
	gradleTestRE  = regexp.MustCompile(`^(\S+) > (.+) FAILED$`)
	gitFatalRE    = regexp.MustCompile(`^(fatal|error): \S`)
	toolErrRE     = regexp.MustCompile(`^(?:/[\w./-]+/)?([a-z][\w.+-]*)(?:\[\d+\])?: (?:\d+: )?(.*)$`)
	toolErrWords  = regexp.MustCompile(`(?i)\b(?:error|errors|failed|failure|fatal|cannot|can't|unable|not found|no such file|denied|refused|exiting with failure|does not look like|not a|invalid|missing|killed|abort)\b`)
	genericErrRE  = regexp.MustCompile(`^(?:Error|ERROR|FATAL|Fatal error)(?::|!| -) \S`)
	phraseRE      = regexp.MustCompile(`No space left on device|Something went wrong|Segmentation fault|\(core dumped\)|command not found|OutOfMemoryError|Out of memory|Killed\s*$|The operation was canceled|has received a shutdown signal|lost communication with the server|exceeded the maximum execution time|Cannot connect to the Docker daemon`)
	tracebackRE   = regexp.MustCompile(`^\s*Traceback \(most recent call last\):`)
	pyFrameRE     = regexp.MustCompile(`^\s+File "([^"]+)", line (\d+)`)
	pyExcRE       = regexp.MustCompile(`^\s*([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning)|[A-Z]\w*Error)(?::\s*(.*))?$`)
	goFailRE      = regexp.MustCompile(`^\s*--- FAIL: (\S+)`)
	goPanicRE     = regexp.MustCompile(`^panic: `)
	pytestSumRE   = regexp.MustCompile(`^(?:FAILED|ERROR) (\S+?\.py)(?:::(\S+))?(?: - (.*))?$`)
	pytestLocRE   = regexp.MustCompile(`^(\S+\.py):(\d+): (\w+(?:Error|Exception)|Failed)$`)
	cargoTestRE   = regexp.MustCompile(`^test (\S+) \.\.\. FAILED$`)
	rustPanicRE   = regexp.MustCompile(`^thread '([^']*)' panicked at (?:'.*', )?([^\s:]+):(\d+):(\d+)`)
	cmakeErrRE    = regexp.MustCompile(`^CMake Error(?: at ([^:\s]+):(\d+))?`)
	jestFailRE    = regexp.MustCompile(`^FAIL (\S+\.\w+)$`)
	jestCaseRE    = regexp.MustCompile(`^\s*● (.+)$`)
	pyLintRE      = regexp.MustCompile(`^(\S+\.pyi?):(\d+):(?:(\d+):)? ([A-Z]+\d{2,4}):? (.*)$`)
	mypyRE        = regexp.MustCompile(`^(\S+\.pyi?):(\d+):(?:(\d+):)? error: (.*?)(?:\s+\[([\w-]+)\])?$`)
	eslintRE      = regexp.MustCompile(`^\s+(\d+):(\d+)\s+error\s+(.+?)(?:\s{2,}(\S+))?$`)
	npmErrRE      = regexp.MustCompile(`^npm (?:ERR!|error) `)
	contRE        = regexp.MustCompile(`^(?:\s+\S|\d+\s+\||\s*\|$|Caused by|Caused: |Also: |Suppressed: |stdout: |stderr: |\s*\.\.\. \d+ (?:more|common frames omitted))`)
	jenkinsMarkRE = regexp.MustCompile(`^Build step '.+' marked build as failure`)
	locHeadRE     = regexp.MustCompile(`^(?:\[(?:ERROR|WARNING)\] )?(?:[A-Za-z]:)?[\w./\\$-]+\.\w+:(?:\[\d+(?:,\d+)?\]|\d+[:,]?) `)
	ignoreErrRE   = regexp.MustCompile(`(?i)^\[ERROR\] (?:-> \[Help|To see the full stack|Re-run Maven|For more information about|\[Help \d|After correcting|\s+mvn <)`)
)

// A block is a run of lines [start, end] of a chunk forming one error.
type block struct {
	start, end int
	tool       string
	message    string
	file       string
	line       int
	// absorb: a compiler diagnostic found inside the block lends it its
	// location and message (a Python traceback's last frame).
	absorb bool
	code   string
	// extra are further ranges of the same error (Gradle's "What went
	// wrong" section after its FAILURE line).
	extra [][2]int
}

// blocks finds the error blocks of a chunk of build output.
func blocks(lines []string, annotated []bool) []block {
	var out []block
	for i := 0; i < len(lines); i++ {
		b, ok := head(lines, i, annotated != nil && annotated[i])
		if !ok {
			continue
		}
		out = append(out, b)
		if b.end > i && (b.tool == toolMaven || b.tool == toolPython || b.tool == toolNpm || b.tool == toolGradle) {
			// The body of these blocks holds no other head worth a second
			// diagnostic (compiler errors inside Maven's summary are found
			// by the compiler formats, and fold with their first report).
			i = b.end
		}
	}
	return out
}

// headPrefixes and headPhrases are what every head rule needs to see in
// a line: lines with none of them are skipped without a regexp.
var (
	headPrefixes = []string{"[ERROR]", "[FATAL]", "ERROR", "FATAL", "Error", "Fatal", "fatal:", "error:", "FAILURE:", "FAILED ", "BUILD FAILED", pytestQuote,
		"--- FAIL", "panic: ", "npm ", "Exception in thread", "Build step '", "test ", "thread '", "CMake Error", "FAIL ", "●", "✕"}
	headPhrases = []string{"Traceback (most recent call last)", " FAILED", ".py:", "--- FAIL:", "No space left on device", "Something went wrong",
		"Segmentation fault", "(core dumped)", "command not found", "OutOfMemoryError", "Out of memory", "Killed",
		"The operation was canceled", "shutdown signal", "lost communication with the server", "maximum execution time",
		"Docker daemon", "  error  ", ".py:", ": exit "}
)

// mayHead is the cheap test before head's regular expressions.
func mayHead(l string, annotated bool) bool {
	if annotated {
		return true
	}
	t := strings.TrimLeft(l, " \t")
	for _, p := range headPrefixes {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	for _, p := range headPhrases {
		if strings.Contains(l, p) {
			return true
		}
	}
	return toolWord(l)
}

// toolWord reports whether l starts with "word: " (a tool naming itself,
// "tar: ...", "/bin/sh: 1: ...").
func toolWord(l string) bool {
	i := strings.Index(l, ": ")
	if i <= 0 || i > 64 {
		return false
	}
	c := l[0]
	if !(c >= 'a' && c <= 'z') && c != '/' {
		return false
	}
	return !strings.ContainsAny(l[:i], " \t[]()")
}

// head reports whether line i starts a block, and the block. The rules
// are grouped by what prints the line; the groups' patterns do not
// overlap, and within a group the first rule that matches decides.
func head(lines []string, i int, annotated bool) (block, bool) {
	l := lines[i]
	if !mayHead(l, annotated) {
		return block{}, false
	}
	t := strings.TrimSpace(l)
	if t == "" {
		return block{}, false
	}
	if b, ok := runnerHead(lines, i, t); ok {
		return b, true
	}
	h := headLine{lines: lines, i: i, l: l, t: t, annotated: annotated}
	for _, rules := range headRules {
		if b, v := rules(h); v != undecided {
			return b, v == isHead
		}
	}
	if m := toolErrRE.FindStringSubmatch(l); m != nil && toolErrWords.MatchString(m[2]) && !knownNoise(m[1]) && !javaExcRE.MatchString(l) {
		b := h.block(toolShell, l)
		b.code = m[1]
		return b, true
	}
	return block{}, false
}

// headLine is the line head looks at, with its neighbours.
type headLine struct {
	lines     []string
	i         int
	l, t      string // the line, and the line trimmed
	annotated bool
}

// block is a one-line block of tool with message msg at the line.
func (h headLine) block(tool, msg string) block {
	return block{start: h.i, end: h.i, tool: tool, message: msg}
}

// continuation is the last line of the block h starts.
func (h headLine) continuation() int { return continuation(h.lines, h.i, false) }

// verdict is what a group of head rules says of a line.
type verdict int

const (
	undecided verdict = iota // no rule of the group matched
	notHead                  // a rule matched, and the line starts no block
	isHead                   // a rule matched, and the line starts a block
)

// headRules are head's groups of rules, in the order they are tried.
var headRules = []func(headLine) (block, verdict){buildToolHead, testHead, linterHead, failureHead}

// buildToolHead is the heads of build tools and CI servers: Maven, Jenkins,
// Gradle, the JVM, CMake.
func buildToolHead(h headLine) (block, verdict) {
	lines, i, l := h.lines, h.i, h.l
	switch {
	case mvnGoalRE.MatchString(l):
		b := h.block(toolMaven, strings.TrimPrefix(l, "[ERROR] "))
		b.end = levelRun(lines, i, false)
		b.code = goalCode(b.message)
		return b, isHead
	case mvnTestRE.MatchString(l) || mvnTestsRunRE.MatchString(l):
		b := h.block(toolSurefire, strings.TrimPrefix(l, "[ERROR] "))
		b.end = h.continuation()
		b.file, b.line = firstFrame(lines, i+1, b.end)
		return b, isHead
	case mvnLevelRE.MatchString(l):
		msg := strings.TrimSpace(l[strings.Index(l, "]")+1:])
		if msg == "" || ignoreErrRE.MatchString(l) {
			return block{}, notHead
		}
		b := h.block(toolMaven, msg)
		b.end = levelRun(lines, i, true)
		return b, isHead
	case jenkinsErrRE.MatchString(l):
		b := h.block(toolJenkins, l)
		b.end = h.continuation()
		// "ERROR: Step ‘X’ failed: MSG" repeats the line before it
		if _, msg, ok := strings.Cut(l, " failed: "); ok && i > 0 && strings.TrimSpace(lines[i-1]) == strings.TrimSpace(msg) {
			b.start = i - 1
		}
		return b, isHead
	case jenkinsMarkRE.MatchString(l):
		return h.block(toolJenkins, l), isHead
	case gradleFailRE.MatchString(l):
		b := h.block(toolGradle, l)
		b.end = gradleFailure(lines, i, &b)
		b.code = gradleTask(b.message)
		return b, isHead
	case gradleTestRE.MatchString(l):
		m := gradleTestRE.FindStringSubmatch(l)
		b := h.block(toolGradle, m[1]+" > "+m[2]+" FAILED")
		b.code = "test"
		b.end = h.continuation()
		b.file, b.line = firstFrame(lines, i+1, b.end)
		return b, isHead
	case strings.HasPrefix(h.t, "Exception in thread ") && javaExcRE.MatchString(l):
		b := h.block(toolJava, h.t)
		b.end = h.continuation()
		b.file, b.line = firstFrame(lines, i+1, b.end)
		return b, isHead
	case cmakeErrRE.MatchString(l):
		m := cmakeErrRE.FindStringSubmatch(l)
		b := h.block(toolCMake, l)
		b.file, b.line = m[1], atoi(m[2])
		b.end = h.continuation()
		return b, isHead
	}
	return block{}, undecided
}

// testHead is the heads of test runners and the tracebacks they print:
// Python, go test, cargo test, Jest, pytest.
func testHead(h headLine) (block, verdict) {
	lines, i, l := h.lines, h.i, h.l
	switch {
	case tracebackRE.MatchString(l):
		return traceback(lines, i), isHead
	case goFailRE.MatchString(l):
		return goTestHead(h), isHead
	case cargoTestRE.MatchString(l):
		m := cargoTestRE.FindStringSubmatch(l)
		b := h.block(toolCargoTest, l)
		b.code = m[1]
		return b, isHead
	case rustPanicRE.MatchString(l):
		m := rustPanicRE.FindStringSubmatch(l)
		b := h.block(toolCargoTest, l)
		b.code, b.file, b.line = m[1], m[2], atoi(m[3])
		for j := i + 1; j < len(lines) && j-i < 20 && strings.TrimSpace(lines[j]) != "" && !strings.HasPrefix(lines[j], "note: "); j++ {
			b.end = j
		}
		return b, isHead
	case jestFailRE.MatchString(l):
		m := jestFailRE.FindStringSubmatch(l)
		b := h.block(toolJest, l)
		b.file = m[1]
		return b, isHead
	case jestCaseRE.MatchString(l):
		m := jestCaseRE.FindStringSubmatch(l)
		b := h.block(toolJest, m[1])
		b.code = "test"
		b.end = h.continuation()
		b.file, b.line = jsFrame(lines, i+1, b.end)
		return b, isHead
	case pytestSumRE.MatchString(l):
		m := pytestSumRE.FindStringSubmatch(l)
		b := h.block(toolPytest, l)
		b.file, b.code = m[1], m[2]
		return b, isHead
	case pytestLocRE.MatchString(l):
		m := pytestLocRE.FindStringSubmatch(l)
		b := h.block(toolPytest, m[3])
		b.file, b.line = m[1], atoi(m[2])
		return b, isHead
	}
	return block{}, undecided
}

// goTestHead is the block of a "--- FAIL: Name" line: the test's output
// before it (go test -v prints it first) and its continuation after.
func goTestHead(h headLine) block {
	lines, i := h.lines, h.i
	m := goFailRE.FindStringSubmatch(h.l)
	b := h.block(toolGoTest, "--- FAIL: "+m[1])
	b.code = m[1]
	b.end = h.continuation()
	for b.start > 0 && b.start > i-maxBlockLines && strings.HasPrefix(lines[b.start-1], "    ") && !goFailRE.MatchString(lines[b.start-1]) {
		b.start--
	}
	for j := b.start; j <= b.end; j++ {
		if m := goTestLocRE.FindStringSubmatch(lines[j]); m != nil {
			b.file, b.line = m[1], atoi(m[2])
			break
		}
	}
	return b
}

// linterHead is the heads of linters: ESLint, mypy, flake8 and pylint.
func linterHead(h headLine) (block, verdict) {
	lines, i, l := h.lines, h.i, h.l
	switch {
	case eslintRE.MatchString(l) && i > 0:
		m := eslintRE.FindStringSubmatch(l)
		b := h.block(toolESLint, m[3])
		b.line, b.code = atoi(m[1]), m[4]
		// ESLint names the file once, above its findings
		for j := i - 1; j >= 0 && i-j < 1000; j-- {
			if t := strings.TrimSpace(lines[j]); t != "" && !eslintRE.MatchString(lines[j]) && !strings.HasPrefix(lines[j], " ") {
				b.file = t
				break
			}
		}
		return b, isHead
	case mypyRE.MatchString(l):
		m := mypyRE.FindStringSubmatch(l)
		b := h.block(toolMypy, m[4])
		b.file, b.line, b.code = m[1], atoi(m[2]), m[5]
		return b, isHead
	case pyLintRE.MatchString(l):
		m := pyLintRE.FindStringSubmatch(l)
		b := h.block(toolPyLint, m[5])
		b.file, b.line, b.code = m[1], atoi(m[2]), m[4]
		return b, isHead
	}
	return block{}, undecided
}

// failureHead is the heads of what fails around the build: a Go panic,
// npm, git and the shell, a generic error line, a phrase a runner prints
// when the machine gives out, and any line the CI service annotated.
func failureHead(h headLine) (block, verdict) {
	lines, i, l := h.lines, h.i, h.l
	switch {
	case goPanicRE.MatchString(l):
		b := h.block(toolRuntime, l)
		b.end = goroutines(lines, i)
		return b, isHead
	case npmErrRE.MatchString(l):
		b := h.block(toolNpm, l)
		j := i
		for j+1 < len(lines) && j+1-i < maxBlockLines && npmErrRE.MatchString(lines[j+1]) {
			j++
		}
		b.end, b.code = j, npmScript(lines[i:j+1])
		return b, isHead
	case gitFatalRE.MatchString(l):
		tool := toolShell
		if strings.Contains(l, "repository") || strings.Contains(l, "git") || strings.HasPrefix(l, "fatal: ") {
			tool = toolGit
		}
		b := h.block(tool, l)
		b.end = hint(lines, i, h.continuation())
		return b, isHead
	case genericErrRE.MatchString(l):
		b := h.block(toolCI, l)
		b.end = h.continuation()
		return b, isHead
	case phraseRE.MatchString(l):
		b := h.block(toolRuntime, h.t)
		b.end = h.continuation()
		return b, isHead
	case h.annotated:
		return h.block(toolCI, h.t), isHead
	}
	return block{}, undecided
}

// runnerHead reports the blocks of test runners and build wrappers that
// say what failed: an error pytest quotes, tox's failed command, Ant's
// failed task.
func runnerHead(lines []string, i int, t string) (block, bool) {
	l := lines[i]
	b := block{start: i, end: i, message: l}
	switch {
	case strings.HasPrefix(l, pytestQuote) && (pyQuotedFrameRE.MatchString(l) || tracebackRE.MatchString(l[len(pytestQuote):])):
		return quoted(lines, i), true
	case toxInvocationRE.MatchString(l):
		b.tool, b.code = toolTox, toxInvocationRE.FindStringSubmatch(l)[1]
		return b, true
	case toxExitRE.MatchString(l):
		b.tool, b.code = toolTox, toxExitRE.FindStringSubmatch(l)[1]
		return b, true
	case t == "BUILD FAILED" && i+1 < len(lines) && antFailRE.MatchString(strings.TrimSpace(lines[i+1])):
		m := antFailRE.FindStringSubmatch(strings.TrimSpace(lines[i+1]))
		b.tool, b.message, b.file, b.line, b.end = toolAnt, m[3], m[1], atoi(m[2]), i+1
		return b, true
	}
	return block{}, false
}

// knownNoise are "word: ..." prefixes that are not tools reporting errors.
func knownNoise(w string) bool {
	switch w {
	case "http", "https", "file", "at", "note", "warning", "info", "debug", "hint", "see", "caused", "e", "w":
		return true
	}
	return false
}

// continuation returns the last line of the block starting at i: indented
// lines, stack frames, "Caused by" chains, and (level) the bare Maven
// level-prefixed lines that continue a message; one blank line is crossed
// when a continuation follows it.
func continuation(lines []string, i int, level bool) int {
	end := i
	for j := i + 1; j < len(lines) && j-i < maxBlockLines; j++ {
		l := lines[j]
		if isCont(l, level) {
			end = j
			continue
		}
		if strings.TrimSpace(l) == "" && j+1 < len(lines) && isCont(lines[j+1], level) && strings.TrimSpace(lines[j+1]) != "" {
			continue
		}
		break
	}
	return end
}

func isCont(l string, level bool) bool {
	if level && strings.HasPrefix(l, "[ERROR]") {
		// blank, indented, or the wrapped tail of the message; not the next
		// diagnostic nor Maven's closing advice
		return !locHeadRE.MatchString(l) && !mvnGoalRE.MatchString(l) && !ignoreErrRE.MatchString(l) &&
			!strings.HasPrefix(l, "[ERROR] COMPILATION ERROR") && !mvnTestsRunRE.MatchString(l)
	}
	if contRE.MatchString(l) {
		return true
	}
	return javaExcRE.MatchString(l)
}

// levelRun returns the last line of the run of Maven [ERROR]/[FATAL] lines
// (and their unprefixed continuation) starting at i; stopAtLoc ends it
// before a compiler diagnostic's line.
func levelRun(lines []string, i int, stopAtLoc bool) int {
	end := i
	for j := i + 1; j < len(lines) && j-i < maxBlockLines; j++ {
		l := lines[j]
		if stopAtLoc && locHeadRE.MatchString(l) {
			break
		}
		if mvnLevelRE.MatchString(l) || (l != "" && (l[0] == ' ' || l[0] == '\t')) {
			end = j
			continue
		}
		break
	}
	return end
}

// hint extends a git-style error over its hint text: lines ending with ':'
// and what they introduce.
func hint(lines []string, i, end int) int {
	j := end + 1
	if j < len(lines) && strings.HasSuffix(strings.TrimSpace(lines[j]), ":") && !gitFatalRE.MatchString(lines[j]) {
		end = continuation(lines, j, false)
	}
	return end
}

// traceback returns the block of a Python traceback: the header, the
// frames, and the exception line that ends it.
func traceback(lines []string, i int) block {
	b := block{start: i, end: i, tool: toolPython, absorb: true, message: "Traceback"}
	indent := len(lines[i]) - len(strings.TrimLeft(lines[i], " \t"))
	for j := i + 1; j < len(lines) && j-i < maxBlockLines; j++ {
		l := lines[j]
		if m := pyFrameRE.FindStringSubmatch(l); m != nil {
			b.file, b.line = m[1], atoi(m[2])
			b.end = j
			continue
		}
		li := len(l) - len(strings.TrimLeft(l, " \t"))
		if strings.TrimSpace(l) != "" && li > indent {
			b.end = j
			continue
		}
		if m := pyExcRE.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
			b.message = strings.TrimSpace(l)
			b.code = m[1]
			b.end = j
		}
		break
	}
	return b
}

// pytestQuote is what pytest puts before the lines of an error it quotes
// (a module that fails to import while tests are collected).
const pytestQuote = "E   "

var pyQuotedFrameRE = regexp.MustCompile(`^E   \s+File "([^"]+)", line (\d+)`)

// quoted returns the block of an error pytest quotes: its run of "E"
// lines, located at the last frame, with the exception line's message.
func quoted(lines []string, i int) block {
	b := block{start: i, end: i, tool: toolPython, absorb: true, message: "Traceback"}
	for j := i; j < len(lines) && j-i < maxBlockLines && strings.HasPrefix(lines[j], "E "); j++ {
		b.end = j
		l := lines[j][len(pytestQuote)-2:]
		if m := pyFrameRE.FindStringSubmatch(l); m != nil {
			b.file, b.line = m[1], atoi(m[2])
		} else if m := pyExcRE.FindStringSubmatch(strings.TrimSpace(l)); m != nil && !strings.HasPrefix(l, "  ") {
			b.message, b.code = strings.TrimSpace(l), m[1]
		}
	}
	return b
}

// gradleFailure spans "FAILURE: Build failed..." and, as a second range,
// its "What went wrong" section, up to "* Try:".
func gradleFailure(lines []string, i int, b *block) int {
	for j := i + 1; j < len(lines) && j-i < maxBlockLines; j++ {
		t := strings.TrimSpace(lines[j])
		if strings.HasPrefix(t, "* Try:") || strings.HasPrefix(t, "BUILD FAILED") || strings.HasPrefix(t, "* Get more help") {
			break
		}
		if t == "* What went wrong:" {
			end := j
			for k := j + 1; k < len(lines) && k-j < maxBlockLines; k++ {
				tk := strings.TrimSpace(lines[k])
				if tk == "" || strings.HasPrefix(tk, "* ") {
					break
				}
				b.message += " " + tk
				end = k
			}
			b.extra = append(b.extra, [2]int{j, end})
			break
		}
	}
	return i
}

// goroutines spans a Go panic and its goroutine dump.
func goroutines(lines []string, i int) int {
	end := i
	for j := i + 1; j < len(lines) && j-i < maxBlockLines; j++ {
		l := lines[j]
		if strings.HasPrefix(l, "FAIL") || strings.HasPrefix(l, "exit status") {
			break
		}
		end = j
	}
	return end
}

var (
	goTestLocRE = regexp.MustCompile(`^\s+(\S+_test\.go):(\d+): `)
	jsFrameRE   = regexp.MustCompile(`\bat .*?\(?([^\s()]+\.[jt]sx?):(\d+):\d+\)?$`)
)

// jsFrame returns the file and line of the first JavaScript stack frame.
func jsFrame(lines []string, from, to int) (string, int) {
	for j := from; j <= to && j < len(lines); j++ {
		if m := jsFrameRE.FindStringSubmatch(lines[j]); m != nil {
			return m[1], atoi(m[2])
		}
	}
	return "", 0
}

// firstFrame returns the file and line of the first Java stack frame in
// lines[from:to+1].
func firstFrame(lines []string, from, to int) (string, int) {
	for j := from; j <= to && j < len(lines); j++ {
		if m := frameRE.FindStringSubmatch(lines[j]); m != nil && m[2] != "" {
			return m[1], atoi(m[2])
		}
	}
	return "", 0
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
