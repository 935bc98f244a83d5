package diag

import (
	"path"
	"regexp"
	"strings"

	"github.com/murphy-rl/murphy/topics"
)

// Python, written by hand: a traceback is located where Python says,
// which no errorformat can tell.
//
//   - SyntaxError, IndentationError and TabError: the `File "X", line N`
//     header without ", in" that Python (CPython, PyPy) prints for the
//     error's own location after the frames of the import chain that
//     reached it.
//   - Any other exception: the innermost frame; when the workspace root is
//     known, the innermost frame under it (the project's frame nearest to
//     the error) before one in the standard library or an installed
//     package. Without a root (a CI log) every absolute path is as good as
//     another, so the innermost frame is taken as is.
//
// Chained tracebacks ("During handling of the above exception...", "The
// above exception was the direct cause...") give one diagnostic each.
// pytest quotes an error it caught (a collection error) behind its "E   "
// marker; the marker is removed. The message is the exception line after
// the source and caret lines; compileall names the file on a header line
// that "Sorry: ..." messages only name by base name.
//
//	*** Error compiling './x.py'...               (compileall)
//	  File "./x.py", line 3
//	    def f(:
//	          ^
//	SyntaxError: invalid syntax
//	Sorry: IndentationError: unexpected indent (x.py, line 3)
//	Traceback (most recent call last):
//	  File "/work/run.py", line 1, in <module>
//	ModuleNotFoundError: No module named 'nope'
//	E     File "/work/pkg/mod.py", line 12      (pytest)
//	E   SyntaxError: invalid syntax
//	/work/x.py:3: SyntaxWarning: invalid escape sequence '\d'
var (
	pyFrameRE     = regexp.MustCompile(`^\s+File "(.+)", line (\d+)(?:, in (.+))?$`)
	pyCompilingRE = regexp.MustCompile(`^(?:\*\*\* Error compiling|Compiling) '(.+)'\.\.\.$`)
	pySorryRE     = regexp.MustCompile(`Sorry: ([A-Za-z_][\w.]*): (.*?) \(([^()]+), line (\d+)\)`)
	pyExcRE       = regexp.MustCompile(`^([A-Za-z_][\w.]*)(?:: (.*))?$`)
	pyExcNameRE   = regexp.MustCompile(`(?:Error|Exception|Warning|Exit|Interrupt|Iteration|Group)$`)
	pyWarnRE      = regexp.MustCompile(`^(\S.*?\.pyw?):(\d+): ([A-Za-z_]\w*Warning): (.*)$`)
	pyDetectRE    = regexp.MustCompile(`^(?:E   )?Traceback \(most recent call last\):|^(?:E   )?\s+File ".+", line \d+|^\*\*\* Error compiling '|Sorry: \w+(?:Error|Exception): `)
	// pySyntaxRE names the exceptions located at their header.
	pySyntaxRE = regexp.MustCompile(`(?:^|\.)(?:SyntaxError|IndentationError|TabError)$`)
)

// PythonSyntaxError reports whether an exception name is one Python
// locates at its `File "X", line N` header (SyntaxError and its
// subclasses IndentationError and TabError).
func PythonSyntaxError(name string) bool { return pySyntaxRE.MatchString(name) }

// pytestMarker is what pytest puts before the lines of an error it quotes.
const pytestMarker = "E   "

// unquote removes what compileall -v ("*** ") and pytest ("E   ") put
// before the lines of an error.
func unquote(l string) string {
	if rest, ok := strings.CutPrefix(l, "*** "); ok && !strings.HasPrefix(rest, "Error compiling '") {
		l = rest
	}
	if rest, ok := strings.CutPrefix(l, pytestMarker); ok {
		l = rest
	}
	return l
}

func detectPython(in *input) bool {
	return anyLine(in, pyDetectRE, "Traceback", "File \"", "Error compiling", "Sorry: ")
}

type pyFrame struct {
	file string
	line int
	pos  int
	// header: no ", in <function>" part (a SyntaxError's own location).
	header bool
}

func parsePython(in *input, tool string) []item {
	var out []item
	var frames []pyFrame
	compiling := "" // compileall's current file
	// step reads one line; it returns what follows a "Sorry:" message
	// that py_compile printed without a newline, to be read next.
	step := func(l string, pos int) string {
		l = unquote(l)
		if !strings.Contains(l, "'...") && !strings.Contains(l, "Sorry: ") && !strings.Contains(l, "Warning: ") &&
			!strings.HasPrefix(l, "Traceback") && !strings.Contains(l, "File \"") && len(frames) == 0 {
			return "" // nothing this parser reads
		}
		if m := pyCompilingRE.FindStringSubmatch(l); m != nil {
			compiling = m[1]
			frames = nil
			return ""
		}
		if loc := pySorryRE.FindStringSubmatchIndex(l); loc != nil {
			file := l[loc[6]:loc[7]]
			if compiling != "" && path.Base(compiling) == path.Base(file) {
				file = compiling
			}
			out = append(out, item{pos: pos, d: topics.Diagnostic{
				Tool: tool, Severity: SeverityError, File: joinRel(in.root, in.dirs[pos], file),
				Line: atoi(l[loc[8]:loc[9]]), Code: l[loc[2]:loc[3]], Message: l[loc[4]:loc[5]],
			}})
			frames = nil
			return strings.TrimSpace(l[loc[1]:])
		}
		if m := pyWarnRE.FindStringSubmatch(l); m != nil {
			out = append(out, item{pos: pos, d: topics.Diagnostic{
				Tool: tool, Severity: SeverityWarning, File: joinRel(in.root, in.dirs[pos], m[1]),
				Line: atoi(m[2]), Code: m[3], Message: m[4],
			}})
			return ""
		}
		if strings.HasPrefix(l, "Traceback (most recent call last):") {
			frames = nil
			return ""
		}
		if m := pyFrameRE.FindStringSubmatch(l); m != nil {
			frames = append(frames, pyFrame{file: m[1], line: atoi(m[2]), pos: pos, header: m[3] == ""})
			return ""
		}
		if len(frames) == 0 || l == "" || l[0] == ' ' || l[0] == '\t' {
			return "" // source line, caret line
		}
		m := pyExcRE.FindStringSubmatch(l)
		if m == nil || !pyExcNameRE.MatchString(m[1]) && !strings.Contains(m[1], ".") {
			frames = nil // not a traceback after all
			return ""
		}
		f := pickFrame(in, frames, m[1])
		msg := strings.TrimSpace(m[2])
		if msg == "" {
			msg = m[1]
		}
		out = append(out, item{pos: f.pos, d: topics.Diagnostic{
			Tool: tool, Severity: SeverityError, File: joinRel(in.root, in.dirs[f.pos], f.file),
			Line: f.line, Code: m[1], Message: msg,
		}})
		frames = nil
		return ""
	}
	for pos, l := range in.lines {
		for l != "" {
			l = step(l, pos)
		}
	}
	return out
}

// pickFrame returns the frame Python locates exc at: a syntax error's
// header (the last frame, printed without ", in"); otherwise the
// innermost frame, preferring, when the root is known, the innermost one
// in the workspace (a relative path or one under the root, not a
// pseudo-file such as "<frozen ...>" or "<string>", not an installed
// package) to one in the standard library.
func pickFrame(in *input, frames []pyFrame, exc string) pyFrame {
	last := frames[len(frames)-1]
	if PythonSyntaxError(exc) && last.header {
		return last
	}
	real := -1 // innermost frame that is not a pseudo-file
	for i := len(frames) - 1; i >= 0; i-- {
		f := joinRel(in.root, in.dirs[frames[i].pos], frames[i].file)
		if strings.HasPrefix(f, "<") {
			continue
		}
		if real < 0 {
			real = i
		}
		if cleanRoot(in.root) == "" {
			break
		}
		if path.IsAbs(f) || strings.HasPrefix(f, "../") || InstalledPackage(f) {
			continue
		}
		return frames[i]
	}
	if real >= 0 {
		return frames[real]
	}
	return last
}

// InstalledPackage reports whether a Python file is inside an installed
// distribution or the standard library: under site-packages or
// dist-packages, or under a lib/pythonX.Y directory.
func InstalledPackage(file string) bool {
	f := "/" + strings.TrimPrefix(strings.ReplaceAll(file, `\`, "/"), "/")
	if strings.Contains(f, "/site-packages/") || strings.Contains(f, "/dist-packages/") {
		return true
	}
	for _, p := range strings.Split(f, "/") {
		if strings.HasPrefix(p, "python") && len(p) > 6 && (p[6] >= '0' && p[6] <= '9') && strings.Contains(f, "/lib/"+p+"/") {
			return true
		}
	}
	return false
}
