package diag

import (
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/reviewdog/errorformat"
	"github.com/reviewdog/errorformat/fmts"

	"github.com/murphy-rl/murphy/topics"
)

// An efmFormat is a list of Vim errorformats and the conversion of their
// entries into diagnostics.
//
// Notes on the library's semantics the lists rely on: formats are tried in
// order and the first match wins; %C/%Z only apply inside a multi-line
// entry (one opened by %E/%W/%I/%A), which stays open until the next one
// or the end; every list ends with catch-alls so that no line is left
// unmatched (an unmatched line would drop a pending multi-line entry).
// In this implementation `%*[...]` is a character class repeated, `%\x`
// the regexp escape \x, and `\x` puts x into the regexp unescaped (so
// `\+` is a quantifier); regexp metacharacters written plainly are
// literal.
type efmFormat struct {
	name string
	efms []string
	// post converts an entry; false drops it.
	post func(e *errorformat.Entry, d *topics.Diagnostic) bool
	// keep, when set, is a cheap test that a line may match a format
	// other than the catch-all; other lines are not given to the scanner.
	// Only for lists without multi-line formats, whose state lines would
	// otherwise skip.
	keep func(line string) bool

	once sync.Once
	ef   *errorformat.Errorformat
	err  error
}

func (f *efmFormat) compiled() *errorformat.Errorformat {
	f.once.Do(func() {
		f.ef, f.err = errorformat.NewErrorformat(f.efms)
	})
	if f.err != nil {
		panic(fmt.Sprintf("diag: errorformat %s: %v", f.name, f.err))
	}
	return f.ef
}

// predefined returns a format of the errorformat/fmts package.
func predefined(name string) []string {
	f, ok := fmts.DefinedFmts()[name]
	if !ok {
		panic("diag: errorformat/fmts has no " + name)
	}
	return f.Errorformat
}

func concat(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// efmParser returns a parser function running f over each run of lines
// that make reported in one directory.
func efmParser(f *efmFormat) func(in *input, tool string) []item {
	return func(in *input, tool string) []item {
		ef := f.compiled()
		var out []item
		for start := 0; start < len(in.lines); {
			end := start + 1
			for end < len(in.lines) && in.dirs[end] == in.dirs[start] {
				end++
			}
			out = append(out, scanEfm(ef, f, in, start, end, tool)...)
			start = end
		}
		return out
	}
}

func scanEfm(ef *errorformat.Errorformat, f *efmFormat, in *input, start, end int, tool string) []item {
	var seg []string
	// Entries carry their first line; map it back to its position.
	where := map[string][]int{}
	for i, l := range in.lines[start:end] {
		if f.keep != nil && !f.keep(l) {
			continue
		}
		seg = append(seg, l)
		where[l] = append(where[l], start+i)
	}
	if len(seg) == 0 {
		return nil
	}
	s := ef.NewScanner(strings.NewReader(strings.Join(seg, "\n")))
	var out []item
	for s.Scan() {
		e := s.Entry()
		if e == nil || !e.Valid {
			continue
		}
		pos := start
		if len(e.Lines) > 0 {
			if ps := where[e.Lines[0]]; len(ps) > 0 {
				pos = ps[0]
				where[e.Lines[0]] = ps[1:]
			}
		}
		d := topics.Diagnostic{
			Tool:     tool,
			Severity: severityOf(e.Type),
			File:     e.Filename,
			Line:     e.Lnum,
			Column:   e.Col,
			Message:  e.Text,
		}
		if f.post != nil && !f.post(e, &d) {
			continue
		}
		if d.File != "" && in.dirs[pos] != "" {
			d.File = joinRel(in.root, in.dirs[pos], d.File)
		}
		out = append(out, item{d: d, pos: pos})
	}
	return out
}

func severityOf(t rune) string {
	switch t {
	case 'e', 'E', 'f', 'F':
		return SeverityError
	case 'w', 'W':
		return SeverityWarning
	case 'n', 'N', 'i', 'I':
		return SeverityNote
	}
	return ""
}

// ---- C family: gcc, clang (the linker is in linker.go) ----

var fmtCC = &efmFormat{
	name: "cc",
	efms: []string{
		// gcc's instantiation context ("  required from here") and
		// clang's "N errors generated" are no diagnostics.
		`%-G%f:%l:%c:  %m`,
		`%f:%l:%c: fatal %trror: %m`,
		`%f:%l:%c: %trror: %m`,
		`%f:%l:%c: %tarning: %m`,
		`%f:%l:%c: %tote: %m`,
		`%f:%l: fatal %trror: %m`,
		`%f:%l: %trror: %m`,
		`%f:%l: %tarning: %m`,
		`%f:%l: %tote: %m`,
		// Driver messages: "gcc: error: x.c: No such file or directory",
		// "cc1: fatal error: ...", "clang: error: ...".
		`%f: fatal %trror: %m`,
		`%f: %trror: %m`,
		`%f: %tarning: %m`,
		`%-G%.%#`,
	},
	post: postCC,
	keep: func(l string) bool {
		return strings.Contains(l, "rror: ") || strings.Contains(l, "arning: ") || strings.Contains(l, "ote: ")
	},
}

var (
	// ccFlagRE matches the trailing option brackets of gcc and clang:
	// [-Wunused-variable], [-Werror=format=], [-Werror,-Wfoo], [CWE-476].
	ccFlagRE = regexp.MustCompile(`\s*\[(-W[^\]\s]*|-f[^\]\s]*|CWE-\d+|enabled by default)\]\s*$`)
	// driverRE matches compiler driver and tool names that stand where a
	// file would.
	driverRE = regexp.MustCompile(`^(?:.*/)?(?:(?:[\w.]+-)*(?:gcc|g\+\+|cc|c\+\+|cpp)(?:-[\d.]+)?|cc1(?:plus|obj|objplus)?|collect2|lto1|lto-wrapper|clang(?:\+\+)?(?:-[\d.]+)?|as|ar|ranlib)$`)
	// ccSummaryRE matches summary messages that repeat what was said.
	ccSummaryRE = regexp.MustCompile(`^(?:ld returned \d+ exit status|linker command failed with exit code|all warnings being treated as errors|some warnings being treated as errors|compilation terminated)`)
)

func postCC(e *errorformat.Entry, d *topics.Diagnostic) bool {
	if d.Severity == "" || ldNameRE.MatchString(d.File) { // the linker: linker.go
		return false
	}
	if strings.HasSuffix(d.File, ".java") {
		// javac's "X.java:5: error:" has gcc's shape; its own parser
		// (always run when such lines appear) reads the caret and the
		// continuation lines too.
		return false
	}
	if driverRE.MatchString(d.File) {
		if ccSummaryRE.MatchString(d.Message) {
			return false
		}
		d.File, d.Line, d.Column = "", 0, 0
	} else if d.Line == 0 && !strings.ContainsAny(d.File, "./") {
		// "tar: error: ...": some other program, not a file
		return false
	}
	d.Message, d.Code = ccCode(d.Message)
	return true
}

// ccCode splits the option brackets off a gcc/clang message; the code is
// the -W option, "-Werror=x" and "-Werror,-Wx" normalised to "-Wx".
func ccCode(msg string) (string, string) {
	code := ""
	for {
		m := ccFlagRE.FindStringSubmatchIndex(msg)
		if m == nil {
			break
		}
		flag := msg[m[2]:m[3]]
		msg = msg[:m[0]]
		if strings.HasPrefix(flag, "-W") && code == "" {
			parts := strings.Split(flag, ",")
			flag = parts[len(parts)-1]
			if rest, ok := strings.CutPrefix(flag, "-Werror="); ok {
				flag = "-W" + rest
			}
			if flag != "-Werror" {
				code = flag
			}
		}
	}
	return strings.TrimSpace(msg), code
}

func ccTool(in *input) string {
	for _, l := range in.lines {
		if strings.HasPrefix(l, "clang") || strings.Contains(l, " generated.") && (strings.Contains(l, "error") || strings.Contains(l, "warning")) {
			return ToolClang
		}
	}
	return ToolGCC
}

func parseCC(in *input, tool string) []item {
	out := efmParser(fmtCC)(in, tool)
	return append(out, parseLinker(in, tool)...)
}

var ccDetectRE = regexp.MustCompile(`:\d+(?::\d+)?: (?:fatal error|error|warning|note): |undefined reference to |^\S*ld(?:\.\w+)?: |^collect2: |errors? generated\.|^(?:\S*/)?(?:gcc|g\+\+|cc|clang(?:\+\+)?|cc1\w*): (?:fatal )?error: `)

func detectCC(in *input) bool {
	return anyLine(in, ccDetectRE, "rror: ", "arning: ", "ote: ", "undefined reference", "ld: ", "collect2", " generated.")
}

// ---- Go: go build, go vet ----

var fmtGo = &efmFormat{
	name: "go",
	efms: concat([]string{
		`%-G#%.%#`, // "# pkg", "# [pkg]"
		`vet: %f:%l:%c: %m`,
		`vet: %f:%l: %m`,
	}, predefined("govet")), // %f:%l:%c: %m, %f:%l: %m, %-G%.%#
	post: postGo,
	keep: func(l string) bool {
		return strings.Contains(l, ".go:") || strings.Contains(l, ".s:") || strings.Contains(l, "go.mod:") ||
			strings.Contains(l, "go.sum:") || strings.Contains(l, "go.work:")
	},
}

func postGo(e *errorformat.Entry, d *topics.Diagnostic) bool {
	f := d.File
	if !(strings.HasSuffix(f, ".go") || strings.HasSuffix(f, ".s") ||
		path.Base(f) == "go.mod" || path.Base(f) == "go.sum" || path.Base(f) == "go.work") {
		return false
	}
	if d.Message == "too many errors" || strings.HasPrefix(d.Message, "too many errors") {
		return false
	}
	d.Severity = SeverityError
	return true
}

var goDetectRE = regexp.MustCompile(`^(?:vet: )?\S+\.go:\d+(?::\d+)?: `)

func detectGo(in *input) bool { return anyLine(in, goDetectRE, ".go:") }

// ---- javac (also through Gradle) ----

// javacHeads start a javac diagnostic; javacConts are its continuation
// lines: the caret gives the column, symbol/location/required/found lines
// are folded into the message, the source line is skipped.
var (
	javacHeads = []string{
		`%E%f:%l: %trror: %m`,
		`%W%f:%l: %tarning: %m`,
		`%I%f:%l: %tote: %m`,
		// -XDrawDiagnostics: "App.java:4:17: compiler.err.cant.resolve: ..."
		`%E%f:%l:%c: compiler.err.%m`,
		`%W%f:%l:%c: compiler.warn.%m`,
		`%I%f:%l:%c: compiler.note.%m`,
		`%-Gwarning: [options]%.%#`,
		`%Eerror: %m`,
		`%Wwarning: %m`,
	}
	javacConts = []string{
		`%C%p^`,
		`%+C%*[ ]symbol:%.%#`,
		`%+C%*[ ]location:%.%#`,
		`%+C%*[ ]required:%.%#`,
		`%+C%*[ ]found:%.%#`,
		`%+C%*[ ]reason:%.%#`,
		`%-C%.%#`,
		`%-G%.%#`,
	}
)

var fmtJavac = &efmFormat{
	name: "javac",
	efms: concat(javacHeads, javacConts),
	post: postJavac,
}

var (
	javaRawRE  = regexp.MustCompile(`: compiler\.(err|warn|note)\.`)
	javaLintRE = regexp.MustCompile(`^\[([\w.-]+)\] `)
)

func postJavac(e *errorformat.Entry, d *topics.Diagnostic) bool {
	if d.Severity == "" {
		return false
	}
	head := ""
	if len(e.Lines) > 0 {
		head = e.Lines[0]
	}
	if m := javaRawRE.FindStringSubmatch(head); m != nil {
		// "cant.resolve.location: kindname.class, Missing, ..."
		kind := map[string]string{"err": "compiler.err.", "warn": "compiler.warn.", "note": "compiler.note."}[m[1]]
		key, rest, _ := strings.Cut(d.Message, ":")
		d.Code = kind + strings.TrimSpace(key)
		d.Message = strings.TrimSpace(rest)
		if d.Message == "" {
			d.Message = d.Code
		}
		return true
	}
	if m := javaLintRE.FindStringSubmatch(d.Message); m != nil {
		d.Code = m[1]
		d.Message = d.Message[len(m[0]):]
	}
	return true
}

var javacDetectRE = regexp.MustCompile(`\.java:\d+: (?:error|warning): |\.java:\d+:\d+: compiler\.`)

func detectJavac(in *input) bool { return anyLine(in, javacDetectRE, ".java:") }

// ---- Maven ----

var fmtMaven = &efmFormat{
	name: "maven",
	efms: []string{
		`%E[ERROR] %f:[%l,%c] %m`,
		// maven-compiler-plugin 2.x prints javac's errors unprefixed
		`%E%f:[%l,%c] error: %m`,
		`%W%f:[%l,%c] warning: %m`,
		`%E[ERROR] %f:[%l] %m`,
		`%W[WARNING] %f:[%l,%c] %m`,
		`%W[WARNING] %f:[%l] %m`,
		// kotlin-maven-plugin
		`%E[ERROR] file://%f:%l:%c %m`,
		`%W[WARNING] file://%f:%l:%c %m`,
		`%E[ERROR] %f: (%l, %c) %m`,
		`%W[WARNING] %f: (%l, %c) %m`,
		// javac's continuation lines, bare or repeated under [ERROR] in
		// the build-failure summary.
		`%+C[ERROR]%*[ ]symbol:%.%#`,
		`%+C[ERROR]%*[ ]location:%.%#`,
		`%+C[ERROR]%*[ ]required:%.%#`,
		`%+C[ERROR]%*[ ]found:%.%#`,
		`%+C[ERROR]%*[ ]reason:%.%#`,
		`%+C%*[ ]symbol:%.%#`,
		`%+C%*[ ]location:%.%#`,
		`%+C%*[ ]required:%.%#`,
		`%+C%*[ ]found:%.%#`,
		`%+C%*[ ]reason:%.%#`,
		`%-C%.%#`,
		`%-G%.%#`,
	},
	post: postMaven,
}

var levelPrefixRE = regexp.MustCompile(`(?m)^\[(?:ERROR|WARNING|INFO)\]\s*`)

func postMaven(e *errorformat.Entry, d *topics.Diagnostic) bool {
	if d.Severity == "" {
		return false
	}
	unescapeURI(e, d)
	d.Message = levelPrefixRE.ReplaceAllString(d.Message, "")
	for _, p := range []string{"error: ", "warning: "} {
		d.Message = strings.TrimPrefix(d.Message, p)
	}
	if m := javaLintRE.FindStringSubmatch(d.Message); m != nil {
		d.Code = m[1]
		d.Message = d.Message[len(m[0]):]
	}
	return true
}

var mavenDetectRE = regexp.MustCompile(`^\[(?:ERROR|WARNING)\] \S.*(?::\[\d+|: \(\d+, \d+\))|^\[(?:ERROR|WARNING)\] file://`)

func detectMaven(in *input) bool { return anyLine(in, mavenDetectRE, "[ERROR] ", "[WARNING] ") }

// ---- Gradle: Kotlin's e:/w: lines and javac's format ----

var fmtGradle = &efmFormat{
	name: "gradle",
	efms: concat([]string{
		`%Ee: file://%f:%l:%c %m`,
		`%Ww: file://%f:%l:%c %m`,
		`%Ee: %f: (%l, %c): %m`,
		`%Ww: %f: (%l, %c): %m`,
		`%Ee: %f:%l:%c %m`,
		`%Ww: %f:%l:%c %m`,
		`%Ee: %f:%l:%c: %m`,
		`%Ww: %f:%l:%c: %m`,
		// kotlinc's own format and other compilers Gradle runs
		`%E%f:%l:%c: %trror: %m`,
		`%W%f:%l:%c: %tarning: %m`,
	}, javacHeads, javacConts),
	post: func(e *errorformat.Entry, d *topics.Diagnostic) bool {
		unescapeURI(e, d)
		return postJavac(e, d)
	},
}

// unescapeURI decodes the file of an entry whose line gave it as a
// file:// URI (the efm matched the path after the scheme).
func unescapeURI(e *errorformat.Entry, d *topics.Diagnostic) {
	if len(e.Lines) > 0 && strings.Contains(e.Lines[0], "file://") {
		if f, err := url.PathUnescape(d.File); err == nil {
			d.File = f
		}
	}
}

var gradleDetectRE = regexp.MustCompile(`^[ew]: (?:file://)?\S+\.kts?[: ]|^> Task :|^FAILURE: Build failed`)

func detectGradle(in *input) bool {
	return anyLine(in, gradleDetectRE, "e: ", "w: ", "> Task :", "FAILURE: ")
}

// ---- tsc ----

var fmtTsc = &efmFormat{
	name: "tsc",
	efms: concat([]string{
		`%-GFound %*[0-9] error%.%#`,
		`%-GErrors  Files`,
		// --pretty (after escapes are stripped)
		`%E%f:%l:%c - error TS%n: %m`,
		`%W%f:%l:%c - warning TS%n: %m`,
	}, predefined("tsc")), // %E%f %#(%l,%c): error TS%n: %m ... %C%\s%+%m, %-G%.%#
	post: postTsc,
}

var tsCodeRE = regexp.MustCompile(`^TS(\d+):\s*`)

func postTsc(e *errorformat.Entry, d *topics.Diagnostic) bool {
	if d.Severity == "" {
		d.Severity = SeverityError
	}
	if e.Nr > 0 {
		d.Code = "TS" + strconv.Itoa(e.Nr)
	} else if m := tsCodeRE.FindStringSubmatch(d.Message); m != nil {
		d.Code = "TS" + m[1]
		d.Message = d.Message[len(m[0]):]
	}
	return true
}

var tscDetectRE = regexp.MustCompile(`\(\d+,\d+\): error TS\d+|:\d+:\d+ - error TS\d+|^error TS\d+`)

func detectTsc(in *input) bool { return anyLine(in, tscDetectRE, "error TS") }

// ---- rustc / cargo, human and short formats ----

var fmtRustc = &efmFormat{
	name: "rustc",
	efms: []string{
		`%-Gerror: aborting due to%.%#`,
		`%-Gerror: could not compile%.%#`,
		`%-Gwarning: %*[0-9] warning%.%# emitted%.%#`,
		`%-Gwarning: %.%# generated %*[0-9] warning%.%#`,
		`%-Gwarning: build failed, waiting%.%#`,
		`%-GSome errors have detailed explanations%.%#`,
		`%-GFor more information about %.%#`,
		// --error-format=short / --message-format=short
		`%f:%l:%c: %trror[E%n]: %m`,
		`%f:%l:%c: %trror: %m`,
		`%f:%l:%c: %tarning: %m`,
		`%Eerror[E%n]: %m`,
		`%Eerror: %m`,
		`%Wwarning[%*[^]]]: %m`,
		`%Wwarning: %m`,
		`%C%*[ ]--> %f:%l:%c`,
		`%-C%.%#`,
		`%-G%.%#`,
	},
	post: postRustc,
}

var rustLintRE = regexp.MustCompile(`#\[(?:warn|deny|forbid)\(([\w:]+)\)\]`)

func postRustc(e *errorformat.Entry, d *topics.Diagnostic) bool {
	if d.Severity == "" {
		return false
	}
	if e.Nr > 0 {
		d.Code = fmt.Sprintf("E%04d", e.Nr)
	} else {
		for _, l := range e.Lines {
			if m := rustLintRE.FindStringSubmatch(l); m != nil {
				d.Code = m[1]
				break
			}
		}
	}
	return true
}

var (
	rustHeadRE   = regexp.MustCompile(`^(?:error|warning)(?:\[[\w:]+\])?: `)
	rustArrowRE  = regexp.MustCompile(`^\s*--> \S+:\d+:\d+`)
	rustShortRE  = regexp.MustCompile(`\.rs:\d+:\d+: (?:error|warning)`)
	rustDetectRE = regexp.MustCompile(`^error\[E\d{4}\]: `)
)

func detectRustc(in *input) bool {
	head, arrow := false, false
	for _, l := range in.lines {
		if !strings.Contains(l, "error") && !strings.Contains(l, "warning") && !strings.Contains(l, "--> ") {
			continue
		}
		if rustShortRE.MatchString(l) || rustDetectRE.MatchString(l) {
			return true
		}
		head = head || rustHeadRE.MatchString(l)
		arrow = arrow || rustArrowRE.MatchString(l)
		if head && arrow {
			return true
		}
	}
	return false
}
