package diag

import (
	"path"
	"regexp"
	"strings"

	"github.com/murphy-rl/murphy/topics"
)

// Python, written by hand: a traceback's location is its last frame (the
// last one inside the workspace when there is one) and its message the
// exception line after the source and caret lines, and compileall names
// the file on a header line that "Sorry: ..." messages only name by base
// name; an errorformat can say neither.
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
//	/work/x.py:3: SyntaxWarning: invalid escape sequence '\d'
var (
	pyFrameRE     = regexp.MustCompile(`^\s+File "(.+)", line (\d+)(?:, in (.+))?$`)
	pyCompilingRE = regexp.MustCompile(`^(?:\*\*\* Error compiling|Compiling) '(.+)'\.\.\.$`)
	pySorryRE     = regexp.MustCompile(`Sorry: ([A-Za-z_][\w.]*): (.*?) \(([^()]+), line (\d+)\)`)
	pyExcRE       = regexp.MustCompile(`^([A-Za-z_][\w.]*)(?:: (.*))?$`)
	pyExcNameRE   = regexp.MustCompile(`(?:Error|Exception|Warning|Exit|Interrupt|Iteration|Group)$`)
	pyWarnRE      = regexp.MustCompile(`^(\S.*?\.pyw?):(\d+): ([A-Za-z_]\w*Warning): (.*)$`)
	pyDetectRE    = regexp.MustCompile(`^Traceback \(most recent call last\):|^\s+File ".+", line \d+|^\*\*\* Error compiling '|Sorry: \w+(?:Error|Exception): `)
)

func detectPython(in *input) bool {
	return anyLine(in, pyDetectRE, "Traceback", "File \"", "Error compiling", "Sorry: ")
}

type pyFrame struct {
	file string
	line int
	pos  int
}

func parsePython(in *input, tool string) []item {
	var out []item
	var frames []pyFrame
	compiling := "" // compileall's current file
	// step reads one line; it returns what follows a "Sorry:" message
	// that py_compile printed without a newline, to be read next.
	step := func(l string, pos int) string {
		// compileall -v prefixes its error output with "*** ".
		if rest, ok := strings.CutPrefix(l, "*** "); ok && !strings.HasPrefix(rest, "Error compiling '") {
			l = rest
		}
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
			frames = append(frames, pyFrame{file: m[1], line: atoi(m[2]), pos: pos})
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
		f := pickFrame(in, frames)
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

// pickFrame returns the last frame in the workspace: a relative path or
// one under the root, not a pseudo-file ("<frozen ...>", "<string>") and
// not an installed package; else the last frame.
func pickFrame(in *input, frames []pyFrame) pyFrame {
	for i := len(frames) - 1; i >= 0; i-- {
		f := joinRel(in.root, in.dirs[frames[i].pos], frames[i].file)
		if strings.HasPrefix(f, "<") || path.IsAbs(f) || strings.HasPrefix(f, "../") ||
			strings.Contains(f, "site-packages/") || strings.Contains(f, "dist-packages/") {
			continue
		}
		return frames[i]
	}
	return frames[len(frames)-1]
}
