package diag

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/murphy-rl/murphy/topics"
)

// Linker messages, written by hand: their "file" is a source file, an
// object or absent, the location sits in parentheses or on a following
// ">>>" line, and the linker's own name prefixes some lines but not
// others, which no errorformat expresses without also matching unrelated
// "word: text" lines.
//
//	/usr/bin/ld: /tmp/ccX.o: in function `main':      (context, skipped)
//	a.c:(.text+0xf): undefined reference to `bar'     (no line)
//	/usr/bin/ld: /work/a.c:2: undefined reference to `baz'   (-g)
//	/usr/bin/ld: cannot find -lfoo: No such file or directory
//	ld.lld: error: undefined symbol: bar
//	>>> referenced by a.c:2 (/work/a.c:2)
//	collect2: error: ld returned 1 exit status        (summary, skipped)

// ldName matches the names the linkers go by.
const ldName = `(?:\S*/)?(?:[\w.-]+-)?(?:ld(?:\.bfd|\.gold|\.lld)?|lld|ld64(?:\.lld)?|mold|gold)(?:-[\d.]+)?`

var (
	ldPrefixRE = regexp.MustCompile(`^(` + ldName + `): (.*)$`)
	ldNameRE   = regexp.MustCompile(`^` + ldName + `$`)
	ldContext  = regexp.MustCompile("^(.+?): (?:in function|In function|more undefined references to )")
	ldLineRE   = regexp.MustCompile(`^(\S+?):(\d+): (.+)$`)
	ldSectRE   = regexp.MustCompile(`^(\S+?):\(([^)]*)\): (.+)$`)
	// ldMsgRE gates lines without the linker's prefix.
	ldMsgRE    = regexp.MustCompile(`^(?:undefined reference to |multiple definition of |relocation |first defined here)`)
	ldRefRE    = regexp.MustCompile(`^>>> referenced by (\S+?)(?::(\d+))?(?: \((.+?)(?::(\d+))?\))?$`)
	ldDefRE    = regexp.MustCompile(`^>>> defined at (\S+?)(?::(\d+))?(?: \((.+?)(?::(\d+))?\))?$`)
	tmpObjRE   = regexp.MustCompile(`^/tmp/[\w.+-]+\.o$`)
	tmpObjInRE = regexp.MustCompile(`/tmp/[\w.+-]+\.o\b`)
	ldFileLike = regexp.MustCompile(`^\S*[./]\S*$`)
)

// ldNeedles are in every line parseLinker reads.
var ldNeedles = []string{"ld: ", "lld: ", "mold: ", "gold: ", "undefined reference", "multiple definition", "relocation ", "first defined here"}

func parseLinker(in *input, tool string) []item {
	var out []item
	for i := 0; i < len(in.lines); i++ {
		l := in.lines[i]
		if !containsAny(l, ldNeedles) {
			continue
		}
		rest := l
		prefixed := false
		if m := ldPrefixRE.FindStringSubmatch(l); m != nil {
			rest, prefixed = m[2], true
		}
		if ldContext.MatchString(rest) {
			continue
		}
		d := topics.Diagnostic{Tool: tool, Severity: SeverityError}
		switch {
		case prefixed && (strings.HasPrefix(rest, "error: ") || strings.HasPrefix(rest, "warning: ")):
			sev, msg, _ := strings.Cut(rest, ": ")
			d.Severity = sev
			d.Message = msg
			// ld.lld puts the location on ">>> referenced by" lines.
			for j := i + 1; j < len(in.lines) && strings.HasPrefix(in.lines[j], ">>> "); j++ {
				m := ldRefRE.FindStringSubmatch(in.lines[j])
				if m == nil {
					m = ldDefRE.FindStringSubmatch(in.lines[j])
				}
				if m == nil || d.File != "" {
					continue
				}
				d.File, d.Line = m[1], atoi(m[2])
				if m[3] != "" {
					d.File, d.Line = m[3], atoi(m[4])
				}
			}
		case ldLineRE.MatchString(rest) && (prefixed || ldMsgRE.MatchString(ldLineRE.FindStringSubmatch(rest)[3])):
			m := ldLineRE.FindStringSubmatch(rest)
			d.File, d.Line, d.Message = m[1], atoi(m[2]), m[3]
		case ldSectRE.MatchString(rest) && (prefixed || ldMsgRE.MatchString(ldSectRE.FindStringSubmatch(rest)[3])):
			m := ldSectRE.FindStringSubmatch(rest)
			d.File, d.Message = m[1], m[3]
		case prefixed:
			// "cannot find -lfoo: No such file or directory", "x.o: file
			// not recognized: file format not recognized"
			if f, msg, ok := strings.Cut(rest, ": "); ok && ldFileLike.MatchString(f) && !strings.HasPrefix(f, "-") {
				d.File, d.Message = f, msg
			} else {
				d.Message = rest
			}
			if w, ok := strings.CutPrefix(d.Message, "warning: "); ok {
				d.Severity, d.Message = SeverityWarning, w
			}
		default:
			continue
		}
		if tmpObjRE.MatchString(d.File) {
			// The driver's temporary objects have random names.
			d.File, d.Line = "", 0
		}
		d.Message = tmpObjInRE.ReplaceAllString(d.Message, "<tmp>.o")
		d.File = joinRel(in.root, in.dirs[i], d.File)
		out = append(out, item{d: d, pos: i})
	}
	return out
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// make's own errors, also written by hand (two regexps): a missing rule
// or file, a Makefile syntax error. "*** [target] Error 1" only repeats a
// failed command and is skipped.
var (
	makeStopRE     = regexp.MustCompile(`^(?:g?make)(?:\[\d+\])?: \*\*\* (.+?)\.?\s+Stop\.$`)
	makefileStopRE = regexp.MustCompile(`^(\S+):(\d+): \*\*\* (.+?)\.?\s+Stop\.$`)
	makeDetectRE   = regexp.MustCompile(`^(?:g?make(?:\[\d+\])?|\S+:\d+): \*\*\* .*Stop\.$`)
)

func detectMake(in *input) bool { return anyLine(in, makeDetectRE, "*** ") }

func parseMake(in *input, tool string) []item {
	var out []item
	for i, l := range in.lines {
		if !strings.Contains(l, "*** ") {
			continue
		}
		d := topics.Diagnostic{Tool: ToolMake, Severity: SeverityError}
		if m := makeStopRE.FindStringSubmatch(l); m != nil {
			d.Message = m[1]
		} else if m := makefileStopRE.FindStringSubmatch(l); m != nil {
			d.File, d.Line, d.Message = joinRel(in.root, in.dirs[i], m[1]), atoi(m[2]), m[3]
		} else {
			continue
		}
		out = append(out, item{d: d, pos: i})
	}
	return out
}
