// Package diag turns build output into structured diagnostics and compares
// builds with each other.
//
// Parse reads the combined stdout+stderr of a build (gcc/clang and the GNU
// and LLVM linkers, make, go build/vet, javac, Maven, Gradle, rustc in its
// human, short and JSON formats, tsc, Python's py_compile/compileall and
// tracebacks) into topics.Diagnostic records with paths relative to the
// workspace root. Excerpt reads source context from a workspace without
// leaving it, Compare decides which target diagnostics a patch fixed and
// which errors it introduced, and Render writes capped feedback text.
//
// The line-oriented formats are parsed with github.com/reviewdog/errorformat
// (Vim's 'errorformat'), using its predefined tsc and govet formats where they
// fit; see formats.go. Written by hand, because no errorformat expresses them:
// rustc's JSON diagnostics (rustjson.go), Python tracebacks and compileall
// output (python.go), GNU ld / ld.lld linker messages (linker.go), make's
// directory tracking, folding of repeated diagnostics and the baseline
// comparison.
package diag

import (
	"bytes"
	"encoding/json"
	"regexp"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/murphy-rl/murphy/topics"
)

// Limits on what Parse reads and returns.
const (
	// MaxInput is the most output Parse reads: past it, the first and the
	// last MaxInput/2 bytes are parsed.
	MaxInput = 16 << 20
	// MaxLine is the longest line (in bytes) given to the line-oriented
	// parsers; longer lines are cut (JSON lines are decoded whole).
	MaxLine = 4096
	// MaxDiagnostics is the most diagnostics Parse returns.
	MaxDiagnostics = 5000
	// maxMessage caps one diagnostic's message.
	maxMessage = 2048
)

// Severities.
const (
	SeverityError   = "error"
	SeverityWarning = "warning"
	SeverityNote    = "note"
)

// Tool names Parse reports and accepts as hints.
const (
	ToolGCC    = "gcc"
	ToolClang  = "clang"
	ToolMake   = "make"
	ToolGo     = "go"
	ToolJavac  = "javac"
	ToolMaven  = "maven"
	ToolGradle = "gradle"
	ToolRustc  = "rustc"
	ToolTsc    = "tsc"
	ToolPython = "python"
)

// item is a diagnostic with the index of the output line it starts on.
type item struct {
	d   topics.Diagnostic
	pos int
}

// input is build output prepared for the parsers.
type input struct {
	// raw are the cleaned lines, whole.
	raw []string
	// lines are raw cut to MaxLine bytes.
	lines []string
	// dirs[i] is the directory make said it was in at line i ("" = the
	// build's working directory).
	dirs []string
	root string
	// origin[i] is the index of the given line prepared line i came from
	// (ParseLines only); at is the given line being scanned.
	origin []int
	at     int
}

// parser is one family of formats.
type parser struct {
	name string
	// detect reports whether the output shows this family.
	detect func(in *input) bool
	// parse returns the family's diagnostics; tool is the Tool to report
	// (the caller's hint when it names this family).
	parse func(in *input, tool string) []item
	// tool is the family's default Tool.
	tool func(in *input) string
}

// parsers in priority order: when two families report the same diagnostic
// the earlier one's record is kept. The C family is last: its generic
// "file:line: error: msg" form also matches javac and rustc --short lines.
var parsers []*parser

func init() {
	parsers = []*parser{
		{name: "rustjson", detect: detectRustJSON, parse: parseRustJSON, tool: constTool(ToolRustc)},
		{name: "rustc", detect: detectRustc, parse: efmParser(fmtRustc), tool: constTool(ToolRustc)},
		{name: "tsc", detect: detectTsc, parse: efmParser(fmtTsc), tool: constTool(ToolTsc)},
		{name: "maven", detect: detectMaven, parse: efmParser(fmtMaven), tool: constTool(ToolMaven)},
		{name: "gradle", detect: detectGradle, parse: efmParser(fmtGradle), tool: constTool(ToolGradle)},
		{name: "javac", detect: detectJavac, parse: efmParser(fmtJavac), tool: constTool(ToolJavac)},
		{name: "go", detect: detectGo, parse: efmParser(fmtGo), tool: constTool(ToolGo)},
		{name: "python", detect: detectPython, parse: parsePython, tool: constTool(ToolPython)},
		{name: "cc", detect: detectCC, parse: parseCC, tool: ccTool},
		{name: "make", detect: detectMake, parse: parseMake, tool: constTool(ToolMake)},
	}
}

func constTool(t string) func(*input) string { return func(*input) string { return t } }

// hintFamilies maps a normalised tool hint to the families it names.
var hintFamilies = map[string][]string{
	ToolGCC:    {"cc"},
	ToolClang:  {"cc"},
	ToolMake:   {"cc", "make"},
	ToolGo:     {"go"},
	ToolJavac:  {"javac"},
	ToolMaven:  {"maven"},
	ToolGradle: {"gradle"},
	ToolRustc:  {"rustjson", "rustc"},
	ToolTsc:    {"tsc"},
	ToolPython: {"python"},
}

// toolAlias are the names NormalizeTool knows for each tool (toolNames
// is the same by name), and toolPrefixes the prefixes of versioned names
// ("gcc-12", "python3.12").
var (
	toolNames = map[string]string{}
	toolAlias = map[string][]string{
		ToolClang:  {"clang", "clang++"},
		ToolGCC:    {"gcc", "g++", "cc", "c++", "c", "cpp"},
		ToolMake:   {"make", "gmake", "cmake", "ninja", "autotools"},
		ToolGo:     {"go", "golang", "go build", "go vet", "gc"},
		ToolJavac:  {"javac", "java", "ecj"},
		ToolMaven:  {"maven", "mvn", "mvnw"},
		ToolGradle: {"gradle", "gradlew", "kotlin", "kotlinc"},
		ToolRustc:  {"rustc", "rust", "cargo", "clippy", "cargo-clippy"},
		ToolTsc:    {"tsc", "typescript", "ts"},
		ToolPython: {"python", "py", "py_compile", "compileall"},
	}
	toolPrefixes = []struct{ prefix, tool string }{
		{"clang-", ToolClang},
		{"gcc-", ToolGCC},
		{"g++-", ToolGCC},
		{"python3", ToolPython},
		{"python2", ToolPython},
	}
)

func init() {
	for tool, names := range toolAlias {
		for _, n := range names {
			toolNames[n] = tool
		}
	}
}

// NormalizeTool maps the many names of a tool ("g++", "cargo", "mvn",
// "python3", "npx tsc"...) to the names Parse uses; unknown names give "".
func NormalizeTool(tool string) string {
	t := strings.ToLower(strings.TrimSpace(tool))
	if i := strings.LastIndexAny(t, `/\`); i >= 0 {
		t = t[i+1:]
	}
	t = strings.TrimPrefix(t, "npx ")
	if n, ok := toolNames[t]; ok {
		return n
	}
	for _, p := range toolPrefixes {
		if strings.HasPrefix(t, p.prefix) {
			return p.tool
		}
	}
	return ""
}

// Parse parses the combined stdout+stderr of a build into diagnostics.
//
// tool is a hint ("gcc", "clang", "make", "go", "javac", "maven", "gradle",
// "rustc", "tsc", "python", or "" to detect from the text); families the
// text shows are parsed as well, since a build may run several tools. root
// is the workspace root the build ran in: absolute paths under it and
// "./x" paths become relative to it, paths outside it are kept as given.
// Summary lines ("make: *** ... Error 1", "1 error generated", "aborting due
// to...", "too many errors") are not diagnostics. Repeated diagnostics (the
// same file, line, severity and message, or one message extending the
// other, as Maven's summary repeats javac's) are folded into one. The
// result is in output order.
func Parse(tool string, output []byte, root string) []topics.Diagnostic {
	located := parse(prepare(output, root), tool, root)
	out := make([]topics.Diagnostic, len(located))
	for i, l := range located {
		out[i] = l.Diagnostic
	}
	return out
}

// Located is a diagnostic with the lines it was found on.
type Located struct {
	topics.Diagnostic
	// Lines are the indices (into ParseLines' lines) of the line each
	// folded occurrence starts on, in output order; Lines[0] is the first.
	Lines []int
}

// ParseLines is Parse over output already split into lines (a CI log's
// cleaned lines), reporting where each diagnostic was found. Lines may
// hold go -json events; escapes and control characters are removed.
func ParseLines(tool string, lines []string, root string) []Located {
	return parse(prepareLines(lines, root), tool, root)
}

func parse(in *input, tool, root string) []Located {
	if len(in.raw) == 0 {
		return nil
	}
	hint := NormalizeTool(tool)
	want := map[string]bool{}
	for _, f := range hintFamilies[hint] {
		want[f] = true
	}
	var items []item
	for _, p := range parsers {
		if !want[p.name] && !p.detect(in) {
			continue
		}
		t := p.tool(in)
		if want[p.name] && hint != ToolMake && hint != "" {
			t = hint
		}
		items = append(items, p.parse(in, t)...)
	}
	sort.SliceStable(items, func(i, j int) bool { return items[i].pos < items[j].pos })
	for i := range items {
		finish(&items[i].d, root)
		if in.origin != nil {
			items[i].pos = in.origin[items[i].pos]
		}
	}
	out := fold(items)
	if len(out) > MaxDiagnostics {
		out = out[:MaxDiagnostics]
	}
	return out
}

var (
	// ansiRE matches CSI and OSC escape sequences (colours, gcc's
	// hyperlinks) and lone two-byte escapes.
	ansiRE = regexp.MustCompile("\x1b\\[[0-?]*[ -/]*[@-~]|\x1b[\\]_P^][^\x07\x1b]*(?:\x07|\x1b\\\\)|\x1b[@-Z\\\\-_]")
	// ciPrefixRE matches the timestamps CI services put before each line.
	ciPrefixRE = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z ?`)
	// antTaskRE matches the task prefix Ant puts before its tasks' output
	// ("    [javac] "): lower-case task names, so Maven's "[ERROR]" is kept.
	antTaskRE = regexp.MustCompile(`^\s*\[([a-z][\w.-]*)\] `)
	// makeDirRE matches make's and ninja's directory messages.
	makeDirRE = regexp.MustCompile("^(?:g?make|ninja)(?:\\[\\d+\\])?: (Entering|Leaving) directory [`'‘\"](.+?)['’\"]?$")
)

// StripANSI removes terminal escape sequences from s.
func StripANSI(s string) string {
	if !strings.Contains(s, "\x1b") {
		return s
	}
	return ansiRE.ReplaceAllString(s, "")
}

// prepare cleans the output (size cap, CRLF and lone CR, escapes, control
// characters, invalid UTF-8, CI timestamps, go -json events) and tracks
// make's directory.
func prepare(output []byte, root string) *input {
	if len(output) > MaxInput {
		head := output[:MaxInput/2]
		if i := bytes.LastIndexByte(head, '\n'); i > 0 {
			head = head[:i+1]
		}
		tail := output[len(output)-MaxInput/2:]
		if i := bytes.IndexByte(tail, '\n'); i >= 0 {
			tail = tail[i+1:]
		}
		output = append(append(append([]byte{}, head...), '\n'), tail...)
	}
	s := string(output)
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	s = strings.TrimRight(s, "\n")
	in := &input{root: root}
	if s == "" {
		return in
	}
	in.scan(strings.Split(s, "\n"), false)
	return in
}

// prepareLines is prepare over lines already split, recording each
// prepared line's origin.
func prepareLines(lines []string, root string) *input {
	in := &input{root: root, origin: []int{}}
	in.scan(lines, true)
	return in
}

// CleanLine removes terminal escapes (colours, hyperlinks, Buildkite's
// timestamps), control characters and invalid UTF-8 from one line.
func CleanLine(l string) string { return cleanLine(l) }

func cleanLine(l string) string {
	clean := true
	for i := 0; i < len(l); i++ {
		if c := l[i]; c < 0x20 && c != '\t' || c >= 0x7f {
			clean = false
			break
		}
	}
	if clean {
		return l
	}
	if !utf8.ValidString(l) {
		l = strings.ToValidUTF8(l, "\uFFFD")
	}
	l = StripANSI(l)
	return strings.Map(func(r rune) rune {
		if r == '\t' {
			return r
		}
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, l)
}

// scan adds lines (CI timestamps and annotations removed, go -json events
// expanded), tracking make's directory.
func (in *input) scan(lines []string, track bool) {
	var dirStack []string
	dir := ""
	for i, l := range lines {
		in.at = i
		l = ciPrefixRE.ReplaceAllString(cleanLine(l), "")
		for _, p := range []string{"##[error]", "##[warning]"} {
			l = strings.TrimPrefix(l, p)
		}
		l = stripAntTask(l)
		if strings.HasPrefix(l, `{"`) && strings.Contains(l, `"Action":`) {
			if ls, ok := goJSONOutput(l); ok {
				for _, x := range ls {
					in.add(x, dir)
				}
				continue
			}
		}
		if m := makeDirRE.FindStringSubmatch(l); m != nil {
			if m[1] == "Entering" {
				dirStack = append(dirStack, dir)
				dir = m[2]
			} else if len(dirStack) > 0 {
				dir = dirStack[len(dirStack)-1]
				dirStack = dirStack[:len(dirStack)-1]
			} else {
				dir = ""
			}
		}
		in.add(l, dir)
	}
	if !track {
		in.origin = nil
	}
}

// stripAntTask removes Ant's task prefix from a line of its output (the
// javac task's diagnostics are javac's); sbt's "[info]", "[warn]" and
// "[error]" levels are kept.
func stripAntTask(l string) string {
	if len(l) < 4 || l[0] != ' ' && l[0] != '[' {
		return l
	}
	m := antTaskRE.FindStringSubmatchIndex(l)
	if m == nil {
		return l
	}
	switch l[m[2]:m[3]] {
	case "info", "warn", "error", "success", "debug", "warning":
		return l
	}
	return l[m[1]:]
}

func (in *input) add(l, dir string) {
	if in.origin != nil {
		in.origin = append(in.origin, in.at)
	}
	in.raw = append(in.raw, l)
	if len(l) > MaxLine {
		l = truncUTF8(l, MaxLine)
	}
	in.lines = append(in.lines, l)
	in.dirs = append(in.dirs, dir)
}

// GoJSONOutput returns the output lines of a `go build -json` or
// `go test -json` event; ok is false for a line that is no such event.
func GoJSONOutput(l string) ([]string, bool) { return goJSONOutput(l) }

// goJSONOutput returns the output lines of a `go build -json` or
// `go test -json` event; ok is false for a line that is no such event.
func goJSONOutput(l string) ([]string, bool) {
	var ev struct {
		Action     *string `json:"Action"`
		Output     string  `json:"Output"`
		ImportPath string  `json:"ImportPath"`
		Package    string  `json:"Package"`
	}
	if json.Unmarshal([]byte(l), &ev) != nil || ev.Action == nil {
		return nil, false
	}
	if ev.ImportPath == "" && ev.Package == "" {
		return nil, false
	}
	if *ev.Action != "build-output" && *ev.Action != "output" {
		return nil, true
	}
	out := strings.TrimRight(ev.Output, "\n")
	if out == "" {
		return nil, true
	}
	return strings.Split(out, "\n"), true
}

// finish normalises a parsed diagnostic: path relative to root, message
// whitespace, size caps.
func finish(d *topics.Diagnostic, root string) {
	d.File = RelPath(root, d.File)
	d.Message = cleanMessage(d.Message)
	d.Code = strings.TrimSpace(d.Code)
	if d.Severity == "" {
		d.Severity = SeverityError
	}
	if d.Line < 0 {
		d.Line = 0
	}
	if d.Column < 0 || d.Line == 0 {
		d.Column = 0
	}
}

// cleanMessage trims each line of a message, collapses runs of blanks,
// drops empty lines and caps the size.
func cleanMessage(m string) string {
	parts := strings.Split(m, "\n")
	out := parts[:0]
	for _, p := range parts {
		p = strings.Join(strings.Fields(p), " ")
		if p != "" {
			out = append(out, p)
		}
	}
	s := strings.Join(out, "\n")
	if len(s) > maxMessage {
		s = truncUTF8(s, maxMessage) + "…"
	}
	return s
}

// truncUTF8 cuts s to at most n bytes without splitting a rune.
func truncUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// fold merges repeated diagnostics: the same file, line and severity,
// columns and codes equal or one missing, and messages equal or one
// extending the other at a word boundary. The merged record keeps the
// known column and code, and the message of the first unless the later
// one adds continuation lines. Identical messages are found through a map;
// extensions are looked for among the last foldWindow records of the same
// location, so that a log repeating one location endlessly stays linear.
func fold(items []item) []Located {
	const foldWindow = 16
	type key struct {
		file string
		line int
		sev  string
	}
	type exact struct {
		key
		text string
	}
	idx := map[key][]int{}
	same := map[exact][]int{}
	var out []Located
	var texts []string
	for _, it := range items {
		d := it.d
		if d.Message == "" && d.File == "" {
			continue
		}
		k := key{d.File, d.Line, d.Severity}
		b := foldText(d.Message)
		cands := same[exact{k, b}]
		if bucket := idx[k]; len(bucket) > foldWindow {
			cands = append(append([]int(nil), cands...), bucket[len(bucket)-foldWindow:]...)
		} else {
			cands = append(append([]int(nil), cands...), bucket...)
		}
		merged := false
		for _, j := range cands {
			o := &out[j]
			if o.Column != 0 && d.Column != 0 && o.Column != d.Column {
				continue
			}
			if o.Code != "" && d.Code != "" && o.Code != d.Code {
				continue
			}
			a := texts[j]
			if a != b && !extends(a, b) && !extends(b, a) {
				continue
			}
			if len(b) > len(a) && strings.HasPrefix(d.Message[len(strings.TrimRight(o.Message, " ")):], "\n") {
				// the repetition carries continuation lines the first lacks
				o.Message = d.Message
				texts[j] = b
			}
			if o.Column == 0 {
				o.Column = d.Column
			}
			if o.Code == "" {
				o.Code = d.Code
			}
			o.Lines = append(o.Lines, it.pos)
			merged = true
			break
		}
		if merged {
			continue
		}
		idx[k] = append(idx[k], len(out))
		same[exact{k, b}] = append(same[exact{k, b}], len(out))
		out = append(out, Located{Diagnostic: d, Lines: []int{it.pos}})
		texts = append(texts, b)
	}
	return out
}

func foldText(m string) string { return strings.Join(strings.Fields(m), " ") }

// extends reports whether long starts with short followed by a non-word
// character.
func extends(long, short string) bool {
	if short == "" || len(long) <= len(short) || !strings.HasPrefix(long, short) {
		return false
	}
	r, _ := utf8.DecodeRuneInString(long[len(short):])
	last, _ := utf8.DecodeLastRuneInString(short)
	return !isWord(r) || !isWord(last)
}

func isWord(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

// anyLine reports whether re matches some line; with needles, only lines
// containing one of them are tried.
func anyLine(in *input, re *regexp.Regexp, needles ...string) bool {
	for _, l := range in.lines {
		if len(needles) > 0 && !containsAny(l, needles) {
			continue
		}
		if re.MatchString(l) {
			return true
		}
	}
	return false
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
