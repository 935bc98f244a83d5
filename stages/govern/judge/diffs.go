package judge

import (
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/bluekeyes/go-gitdiff/gitdiff"

	"github.com/murphy-rl/murphy/compilefix/lang"
	"github.com/murphy-rl/murphy/compilefix/patch"
)

// Parsing and comparing diffs. Applying them is compilefix/patch's (the one
// applier of the module).

// looksLikeDiff reports whether s is a unified diff: a hunk header and a
// file header.
func looksLikeDiff(s string) bool {
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

// parsePatch parses a unified diff: with go-gitdiff when the diff is well
// formed, else leniently (hunk headers without or with wrong line counts,
// empty context lines without their space, as language models write them).
// ok is false when s is not a diff.
func parsePatch(s string) (files []*gitdiff.File, ok bool) {
	if !looksLikeDiff(s) {
		return nil, false
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	lenient := parseLenient(s)
	// go-gitdiff reads as many lines as a hunk header counts: a header that
	// counts too few would silently drop the rest of its hunk.
	if fs, _, err := gitdiff.Parse(strings.NewReader(s)); err == nil && len(fs) > 0 && changedLines(fs) == changedLines(lenient) {
		return fs, true
	}
	return lenient, true
}

// changedLines counts the added and removed lines of a diff.
func changedLines(files []*gitdiff.File) int64 {
	var n int64
	for _, f := range files {
		for _, fr := range f.TextFragments {
			n += fr.LinesAdded + fr.LinesDeleted
		}
	}
	return n
}

var hunkHeader = regexp.MustCompile(`^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@`)

func parseLenient(s string) []*gitdiff.File {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	var files []*gitdiff.File
	var cur *gitdiff.File
	var frag *gitdiff.TextFragment
	newFile := func() {
		cur = &gitdiff.File{}
		files = append(files, cur)
		frag = nil
	}
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case strings.HasPrefix(l, "diff --git "):
			newFile()
			if f := strings.Fields(l[len("diff --git "):]); len(f) == 2 {
				cur.OldName, cur.NewName = f[0], f[1]
			}
		case strings.HasPrefix(l, "--- ") && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "+++ "):
			if cur == nil || len(cur.TextFragments) > 0 {
				newFile()
			}
			cur.OldName, cur.NewName = headerName(l[4:]), headerName(lines[i+1][4:])
			frag = nil
			i++
		case strings.HasPrefix(l, "@@"):
			if cur == nil {
				newFile()
			}
			frag = &gitdiff.TextFragment{}
			if m := hunkHeader.FindStringSubmatch(l); m != nil {
				frag.OldPosition, _ = strconv.ParseInt(m[1], 10, 64)
				frag.NewPosition, _ = strconv.ParseInt(m[2], 10, 64)
			}
			cur.TextFragments = append(cur.TextFragments, frag)
		case frag != nil && (l == "" || l[0] == ' ' || l[0] == '+' || l[0] == '-'):
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
			frag.Lines = append(frag.Lines, gitdiff.Line{Op: op, Line: body + "\n"})
		case frag != nil && strings.HasPrefix(l, `\`): // "\ No newline at end of file"
		default: // "index ...", prose: the hunk ends
			frag = nil
		}
	}
	for _, f := range files {
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
	return files
}

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

// filePath is the path a file diff changes, a/ or b/ prefix dropped.
func filePath(f *gitdiff.File) string {
	p := f.NewName
	if p == "" || p == "/dev/null" || f.IsDelete {
		p = f.OldName
	}
	if strings.HasPrefix(p, "a/") || strings.HasPrefix(p, "b/") {
		p = p[2:]
	}
	return strings.TrimPrefix(path.Clean(p), "./")
}

// applyOne applies a diff that changes exactly one file to src (that
// file's content), as execute applies candidates (compilefix/patch).
func applyOne(files []*gitdiff.File, src string) (string, bool) {
	fs := changed(files)
	if len(fs) != 1 || fs[0].IsBinary {
		return "", false
	}
	out, err := patch.ApplyText(src, fs[0], 0)
	return out, err == nil
}

// changed returns the file diffs that change text.
func changed(files []*gitdiff.File) []*gitdiff.File {
	var out []*gitdiff.File
	for _, f := range files {
		if len(f.TextFragments) > 0 {
			out = append(out, f)
		}
	}
	return out
}

// applyOne applies a diff that changes exactly one file to src (that file's
// content): strictly by go-gitdiff, else leniently.
func reverseFiles(files []*gitdiff.File) []*gitdiff.File {
	out := make([]*gitdiff.File, len(files))
	for i, f := range files {
		r := *f
		r.OldName, r.NewName = f.NewName, f.OldName
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
		out[i] = &r
	}
	return out
}

// edit is one token-level change of a hunk: del replaced by ins, with the
// hunk's old tokens before and after it.
type edit struct {
	before, del, ins, after []string
}

// matches reports whether two edits are the same change: equal tokens
// removed and inserted, surroundings that agree as far as both reach.
func (e edit) matches(o edit) bool {
	return slices.Equal(e.del, o.del) && slices.Equal(e.ins, o.ins) &&
		agreeBefore(e.before, o.before) && agreeAfter(e.after, o.after)
}

func agreeBefore(a, b []string) bool {
	n := min(len(a), len(b))
	return slices.Equal(a[len(a)-n:], b[len(b)-n:])
}

func agreeAfter(a, b []string) bool {
	n := min(len(a), len(b))
	return slices.Equal(a[:n], b[:n])
}

// diffEdits returns the edits of each file a diff changes; files whose
// changes are all white space or comments have none and are left out.
func diffEdits(files []*gitdiff.File) map[string][]edit {
	out := map[string][]edit{}
	for _, f := range files {
		p := filePath(f)
		if f.IsBinary {
			out[p] = append(out[p], edit{ins: []string{"binary:" + f.NewOIDPrefix}})
			continue
		}
		kind, _ := langOfPath(p)
		ll := lang.ForPath(p)
		for _, fr := range f.TextFragments {
			var old, nw strings.Builder
			for _, l := range fr.Lines {
				if l.Old() {
					old.WriteString(l.Line)
				}
				if l.New() {
					nw.WriteString(l.Line)
				}
			}
			out[p] = append(out[p], tokenEdits(tokensFor(old.String(), kind, ll, true), tokensFor(nw.String(), kind, ll, true))...)
		}
		if len(out[p]) == 0 {
			delete(out, p)
		}
	}
	return out
}

func diffsEquivalent(a, b []*gitdiff.File) bool {
	ea, eb := diffEdits(a), diffEdits(b)
	if len(ea) != len(eb) {
		return false
	}
	for p, xs := range ea {
		ys, ok := eb[p]
		if !ok || len(xs) != len(ys) {
			return false
		}
		used := make([]bool, len(ys))
		for _, x := range xs {
			found := false
			for k, y := range ys {
				if !used[k] && x.matches(y) {
					used[k], found = true, true
					break
				}
			}
			if !found {
				return false
			}
		}
	}
	return true
}

// maxLCSCells bounds the work of one hunk's token alignment; a larger hunk
// is one edit (its common head and tail aside).
const maxLCSCells = 1 << 20

// tokenEdits returns the edits turning old into new: the common head and tail
// are dropped, and what is between is aligned by a longest common
// subsequence.
func tokenEdits(old, nw []string) []edit {
	p := 0
	for p < len(old) && p < len(nw) && old[p] == nw[p] {
		p++
	}
	s := 0
	for s < len(old)-p && s < len(nw)-p && old[len(old)-1-s] == nw[len(nw)-1-s] {
		s++
	}
	a, b := old[p:len(old)-s], nw[p:len(nw)-s]
	if len(a) == 0 && len(b) == 0 {
		return nil
	}
	mk := func(i0, i1, j0, j1 int) edit {
		return edit{before: old[:p+i0], del: a[i0:i1], ins: b[j0:j1], after: old[p+i1:]}
	}
	if len(a)*len(b) > maxLCSCells || len(a) == 0 || len(b) == 0 {
		return []edit{mk(0, len(a), 0, len(b))}
	}
	// l[i][j]: LCS length of a[i:] and b[j:].
	w := len(b) + 1
	l := make([]int32, (len(a)+1)*w)
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			switch {
			case a[i] == b[j]:
				l[i*w+j] = l[(i+1)*w+j+1] + 1
			case l[(i+1)*w+j] >= l[i*w+j+1]:
				l[i*w+j] = l[(i+1)*w+j]
			default:
				l[i*w+j] = l[i*w+j+1]
			}
		}
	}
	var edits []edit
	i, j := 0, 0
	i0, j0, open := 0, 0, false
	for i < len(a) || j < len(b) {
		if i < len(a) && j < len(b) && a[i] == b[j] {
			if open {
				edits = append(edits, mk(i0, i, j0, j))
				open = false
			}
			i++
			j++
			continue
		}
		if !open {
			i0, j0, open = i, j, true
		}
		if j < len(b) && (i == len(a) || l[i*w+j+1] >= l[(i+1)*w+j]) {
			j++
		} else {
			i++
		}
	}
	if open {
		edits = append(edits, mk(i0, len(a), j0, len(b)))
	}
	return edits
}

// NoOpDiff reports whether s is a unified diff that changes nothing: every
// change is white space or comments (the token comparison of
// PatchesEquivalent). isDiff is false when s is not a diff.
func NoOpDiff(s string) (noop, isDiff bool) {
	files, ok := parsePatch(s)
	return ok && len(diffEdits(files)) == 0, ok
}
