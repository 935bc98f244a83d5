package patch

import (
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
)

// Parse reads a unified diff (git's or plain `diff -u`; text before the
// first file header and between files is ignored) into its file diffs,
// strictly: hunk headers must count their lines. CRLF line ends are
// dropped as Apply drops them. A failure is an *Error (CodeMalformed).
func Parse(diff string) ([]*gitdiff.File, error) { return parse(stripCRs(diff)) }

// stripCRs removes the CR of every CRLF line when the diff's first file
// header line ends in CRLF, as GNU patch does for a diff that went through
// a CRLF conversion; a git diff of a CRLF file (LF headers, CRLF content)
// is kept as it is.
func stripCRs(diff string) string {
	rest := diff
	for rest != "" {
		line, next, _ := strings.Cut(rest, "\n")
		if strings.HasPrefix(line, "--- ") || strings.HasPrefix(line, "+++ ") || strings.HasPrefix(line, "diff --git ") {
			if strings.HasSuffix(line, "\r") {
				return strings.ReplaceAll(diff, "\r\n", "\n")
			}
			return diff
		}
		rest = next
	}
	return diff
}

// parse runs go-gitdiff, which must not take the process down on hostile
// input.
func parse(diff string) (files []*gitdiff.File, err error) {
	defer func() {
		if r := recover(); r != nil {
			files, err = nil, errf(CodeMalformed, "", "malformed patch: %v", r)
		}
	}()
	files, _, perr := gitdiff.Parse(strings.NewReader(diff))
	if perr != nil {
		msg := strings.TrimPrefix(perr.Error(), "gitdiff: ")
		return nil, errf(CodeMalformed, "", "malformed patch: %s", msg)
	}
	return files, nil
}

// LooksLikeDiff reports whether s has the shape of a unified diff: a hunk
// header and a file header.
func LooksLikeDiff(s string) bool {
	hasHunk, hasFile := false, false
	for line := range strings.SplitSeq(s, "\n") {
		switch {
		case strings.HasPrefix(line, "@@"):
			hasHunk = true
		case strings.HasPrefix(line, "+++ "), strings.HasPrefix(line, "--- "):
			hasFile = true
		}
	}
	return hasHunk && hasFile
}

// ParseLenient reads a diff as language models write them: hunk headers
// without line counts or with wrong ones, context lines that lost their
// leading space, a blank line after a hunk. Each hunk's counts are
// recomputed from its lines; hunks that change nothing are dropped. The
// strict reading (Parse) is taken when it succeeds and reads as many
// changed lines (a header that counts too few would drop the rest of its
// hunk). ok is false when s is not a diff (LooksLikeDiff).
func ParseLenient(s string) (files []*gitdiff.File, ok bool) {
	if !LooksLikeDiff(s) {
		return nil, false
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	lenient := parseLenient(s)
	if fs, err := parse(s); err == nil && len(fs) > 0 && changedCount(fs) == changedCount(lenient) {
		return fs, true
	}
	return lenient, true
}

// changedCount counts the added and removed lines of file diffs.
func changedCount(files []*gitdiff.File) int64 {
	var n int64
	for _, f := range files {
		for _, fr := range f.TextFragments {
			n += fr.LinesAdded + fr.LinesDeleted
		}
	}
	return n
}

var hunkHeader = regexp.MustCompile(`^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@`)

// lenientReader builds file diffs line by line.
type lenientReader struct {
	files []*gitdiff.File
	cur   *gitdiff.File
	frag  *gitdiff.TextFragment
}

func (r *lenientReader) newFile() {
	r.cur = &gitdiff.File{}
	r.files = append(r.files, r.cur)
	r.frag = nil
}

func parseLenient(s string) []*gitdiff.File {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	r := &lenientReader{}
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case strings.HasPrefix(l, "diff --git "):
			r.newFile()
			if f := strings.Fields(l[len("diff --git "):]); len(f) == 2 {
				r.cur.OldName, r.cur.NewName = f[0], f[1]
			}
		case strings.HasPrefix(l, "--- ") && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "+++ "):
			if r.cur == nil || len(r.cur.TextFragments) > 0 {
				r.newFile()
			}
			r.cur.OldName, r.cur.NewName = headerName(l[4:]), headerName(lines[i+1][4:])
			r.frag = nil
			i++
		case strings.HasPrefix(l, "@@"):
			r.hunk(l)
		case r.frag != nil && (l == "" || l[0] == ' ' || l[0] == '+' || l[0] == '-'):
			r.line(l)
		case r.frag != nil && strings.HasPrefix(l, `\`): // "\ No newline at end of file"
		default: // "index ...", prose: the hunk ends
			r.frag = nil
		}
	}
	for _, f := range r.files {
		kept := f.TextFragments[:0]
		for _, fr := range f.TextFragments {
			// A blank line after a hunk is more likely the end of the diff
			// than a context line that lost its space.
			for len(fr.Lines) > 0 && fr.Lines[len(fr.Lines)-1] == (gitdiff.Line{Op: gitdiff.OpContext, Line: "\n"}) {
				fr.Lines = fr.Lines[:len(fr.Lines)-1]
			}
			recount(fr)
			if fr.LinesAdded+fr.LinesDeleted > 0 {
				kept = append(kept, fr)
			}
		}
		f.TextFragments = kept
	}
	return r.files
}

func (r *lenientReader) hunk(header string) {
	if r.cur == nil {
		r.newFile()
	}
	r.frag = &gitdiff.TextFragment{}
	if m := hunkHeader.FindStringSubmatch(header); m != nil {
		r.frag.OldPosition, _ = strconv.ParseInt(m[1], 10, 64)
		r.frag.NewPosition, _ = strconv.ParseInt(m[2], 10, 64)
	}
	r.cur.TextFragments = append(r.cur.TextFragments, r.frag)
}

func (r *lenientReader) line(l string) {
	op, body := gitdiff.OpContext, ""
	if l != "" {
		body = l[1:]
		switch l[0] {
		case '+':
			op = gitdiff.OpAdd
		case '-':
			op = gitdiff.OpDelete
		}
	}
	r.frag.Lines = append(r.frag.Lines, gitdiff.Line{Op: op, Line: body + "\n"})
}

// headerName is the path of a "--- " or "+++ " header, less a timestamp.
func headerName(s string) string {
	if i := strings.IndexByte(s, '\t'); i >= 0 {
		s = s[:i] // "--- a/x.c\t2024-01-01 ..." carries a timestamp
	}
	return strings.TrimSpace(s)
}

// recount sets a fragment's counts from its lines.
func recount(f *gitdiff.TextFragment) {
	f.OldLines, f.NewLines, f.LinesAdded, f.LinesDeleted, f.LeadingContext, f.TrailingContext = 0, 0, 0, 0, 0, 0
	for _, l := range f.Lines {
		switch l.Op {
		case gitdiff.OpContext:
			f.OldLines++
			f.NewLines++
			if f.LinesAdded == 0 && f.LinesDeleted == 0 {
				f.LeadingContext++
			} else {
				f.TrailingContext++
			}
		case gitdiff.OpAdd:
			f.NewLines++
			f.LinesAdded++
			f.TrailingContext = 0
		case gitdiff.OpDelete:
			f.OldLines++
			f.LinesDeleted++
			f.TrailingContext = 0
		}
	}
}

// FilePath is the path a file diff changes (its new name, the old one for
// a deletion), a/ or b/ prefix dropped, cleaned; it is not checked (Apply
// does that).
func FilePath(f *gitdiff.File) string {
	p := f.NewName
	if p == "" || p == "/dev/null" || f.IsDelete {
		p = f.OldName
	}
	if strings.HasPrefix(p, "a/") || strings.HasPrefix(p, "b/") {
		p = p[2:]
	}
	p = strings.TrimSpace(p)
	if p == "" {
		return ""
	}
	return strings.TrimPrefix(path.Clean(p), "./")
}

// Reverse is the file diff that undoes f: names, creation and deletion,
// and each hunk's added and removed lines swapped.
func Reverse(f *gitdiff.File) *gitdiff.File {
	r := *f
	r.OldName, r.NewName = f.NewName, f.OldName
	r.OldMode, r.NewMode = f.NewMode, f.OldMode
	r.IsNew, r.IsDelete = f.IsDelete, f.IsNew
	r.TextFragments = make([]*gitdiff.TextFragment, len(f.TextFragments))
	for k, fr := range f.TextFragments {
		rf := &gitdiff.TextFragment{OldPosition: fr.NewPosition, NewPosition: fr.OldPosition, Lines: make([]gitdiff.Line, len(fr.Lines))}
		for n, l := range fr.Lines {
			switch l.Op {
			case gitdiff.OpAdd:
				l.Op = gitdiff.OpDelete
			case gitdiff.OpDelete:
				l.Op = gitdiff.OpAdd
			}
			rf.Lines[n] = l
		}
		recount(rf)
		r.TextFragments[k] = rf
	}
	return &r
}
