package govern

import (
	"bytes"
	"context"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/bluekeyes/go-gitdiff/gitdiff"

	"github.com/murphy-rl/murphy/topics"
)

// ReferencePatchJudge compares the candidate with the task's reference
// patch (topics.Task.ReferencePatch), for repair tasks. The comparison is
// deterministic and token-level (see PatchesEquivalent):
//
//   - a unified diff against a unified diff: the same changes, file by file,
//     whatever the hunk order, the context lines, the line numbers, the
//     spacing, the line wrapping inside brackets, trailing commas and
//     comments;
//   - a whole program against a reference diff: the candidate is compared
//     with the program the reference makes when applied to the original
//     (Original), or with the task's reference solution (Task.Reference)
//     when the reference diff, applied in reverse, fits it; with neither
//     there is nothing to compare with and the judge abstains;
//   - a diff against a whole reference program: the candidate diff is
//     applied to the original, when there is one (else abstain);
//   - two whole programs: their token sequences.
//
// A diff that strict application (git's rules, via go-gitdiff) rejects is
// applied leniently: each hunk where its old lines appear, white space
// aside, nearest its stated position.
//
// Equal is Correct; different is Wrong, or Abstain with MismatchAbstains
// (the default in Config: another fix may be valid too, let the next judge
// or the tests decide). A task without a reference patch gets Abstain.
type ReferencePatchJudge struct {
	MismatchAbstains bool
	// Original returns the program the task's patches apply to (the
	// failing program of a repair task), "" when unknown. nil: only what
	// the task record implies (the reference solution with the reference
	// patch undone).
	Original func(task *topics.Task, ex *topics.Execution) string
}

// Name implements Judge.
func (ReferencePatchJudge) Name() string { return JudgeReferencePatch }

// Judge implements Judge.
func (j ReferencePatchJudge) Judge(_ context.Context, task *topics.Task, ex *topics.Execution) (Verdict, error) {
	if task == nil || strings.TrimSpace(task.ReferencePatch) == "" {
		return Abstain, nil
	}
	original := ""
	if j.Original != nil {
		original = j.Original(task, ex)
	}
	switch compareWithReference(task, ex.Code, original) {
	case cmpEqual:
		return Correct, nil
	case cmpUnknown:
		return Abstain, nil
	}
	if j.MismatchAbstains {
		return Abstain, nil
	}
	return Wrong, nil
}

type comparison int

const (
	cmpUnknown   comparison = iota // nothing to compare with
	cmpEqual                       // equivalent
	cmpDifferent                   // compared, and different
)

func equality(eq bool) comparison {
	if eq {
		return cmpEqual
	}
	return cmpDifferent
}

// compareWithReference compares a candidate (a diff or a whole program)
// with the task's reference patch, given the original program ("" when
// unknown).
func compareWithReference(task *topics.Task, code, original string) comparison {
	refFiles, refIsDiff := parsePatch(task.ReferencePatch)
	candFiles, candIsDiff := parsePatch(code)
	// fixed is the reference's result as a whole program, where known.
	fixed := ""
	if !refIsDiff {
		fixed = task.ReferencePatch
	} else {
		if original != "" {
			fixed, _ = applyOne(refFiles, original)
		}
		if fixed == "" && strings.TrimSpace(task.Reference) != "" && !looksLikeDiff(task.Reference) {
			// The reference solution is the fixed program when the reference
			// patch, undone, fits it; undoing it yields the original.
			if o, ok := applyOne(reverseFiles(refFiles), task.Reference); ok {
				fixed = task.Reference
				if original == "" {
					original = o
				}
			}
		}
	}
	lang := programLang(task.Kind, fixed+"\n"+code, refFiles, candFiles)
	switch {
	case refIsDiff && candIsDiff:
		if diffsEquivalent(refFiles, candFiles) {
			return cmpEqual
		}
		if original != "" && fixed != "" {
			if got, ok := applyOne(candFiles, original); ok && sameProgram(got, fixed, lang) {
				return cmpEqual
			}
		}
		return cmpDifferent
	case candIsDiff: // against a whole reference program
		if original == "" {
			return cmpUnknown
		}
		got, ok := applyOne(candFiles, original)
		return equality(ok && sameProgram(got, fixed, lang))
	default: // a whole candidate program
		if fixed == "" {
			return cmpUnknown
		}
		return equality(sameProgram(code, fixed, lang))
	}
}

func sameProgram(a, b string, lang codeLang) bool {
	return slices.Equal(codeTokens(a, lang, false), codeTokens(b, lang, false))
}

// PatchesEquivalent reports whether two unified diffs make the same changes,
// or two whole programs are the same program, compared token by token:
//
//   - tokens are identifiers, numbers, string literals (kept verbatim),
//     operators (longest match, so i++ + j differs from i + ++j) and
//     brackets; white space between them does not matter, nor do line breaks
//     inside brackets, a trailing comma before a closing bracket (kept in a
//     one-element tuple), or comments (# for Python and shell-like files,
//     // and /* */ for C, C++, Go, Java, JavaScript, Rust, ...); the
//     language comes from the file names of the diff, else from the code;
//   - Python keeps its line structure: a logical line's indentation is a
//     token (its column in a diff, its block level in a whole program);
//     other line-oriented files keep their line ends;
//   - a diff is compared file by file (a/ and b/ prefixes dropped); each
//     hunk becomes the token-level edits between its old and its new side,
//     each with the old tokens before and after it in the hunk. Two diffs are
//     equivalent when their edits pair up, whatever the hunk order: equal
//     removed and inserted tokens, and surrounding tokens that agree as far
//     as both hunks reach (so context lines and line numbers do not matter).
//
// A diff and a whole program are never equivalent (ReferencePatchJudge
// compares them by applying the diff).
func PatchesEquivalent(a, b string) bool {
	fa, da := parsePatch(a)
	fb, db := parsePatch(b)
	switch {
	case da && db:
		return diffsEquivalent(fa, fb)
	case !da && !db:
		return sameProgram(a, b, guessLang(a+"\n"+b))
	}
	return false
}

// ---- Parsing and applying diffs --------------------------------------------

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
func applyOne(files []*gitdiff.File, src string) (string, bool) {
	fs := changed(files)
	if len(fs) != 1 || fs[0].IsBinary {
		return "", false
	}
	// go-gitdiff places a hunk without old lines (-U0 insertion, "@@ -6,0")
	// before its line, not after it: such diffs go to the lenient path.
	zeroContext := slices.ContainsFunc(fs[0].TextFragments, func(fr *gitdiff.TextFragment) bool {
		return fr.OldLines == 0 && fr.OldPosition > 0
	})
	var buf bytes.Buffer
	if !zeroContext && gitdiff.Apply(&buf, strings.NewReader(src), fs[0]) == nil {
		return buf.String(), true
	}
	return applyLenient(fs[0], src)
}

// applyLenient applies each hunk, in order of position, where its old lines
// (white space collapsed) appear after the previous hunk, nearest the
// position its header states.
func applyLenient(f *gitdiff.File, src string) (string, bool) {
	lines := strings.SplitAfter(src, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	frags := slices.Clone(f.TextFragments)
	sort.SliceStable(frags, func(i, j int) bool { return frags[i].OldPosition < frags[j].OldPosition })
	var out []string
	pos := 0
	for _, fr := range frags {
		var old, nw []string
		for _, l := range fr.Lines {
			if l.Old() {
				old = append(old, l.Line)
			}
			if l.New() {
				nw = append(nw, l.Line)
			}
		}
		hint := int(fr.OldPosition) - 1
		if len(old) == 0 {
			hint = int(fr.OldPosition) // "@@ -6,0 ...": after line 6
		}
		at := findBlock(lines, old, pos, hint)
		if at < 0 {
			return "", false
		}
		out = append(out, lines[pos:at]...)
		out = append(out, nw...)
		pos = at + len(old)
	}
	out = append(out, lines[pos:]...)
	var sb strings.Builder
	for i, l := range out {
		sb.WriteString(l)
		if i < len(out)-1 && !strings.HasSuffix(l, "\n") {
			sb.WriteByte('\n')
		}
	}
	return sb.String(), true
}

// findBlock returns where block occurs in lines at or after from, nearest
// hint (white space collapsed), or -1.
func findBlock(lines, block []string, from, hint int) int {
	if len(block) == 0 {
		if hint < from {
			hint = from
		}
		return min(hint, len(lines))
	}
	best := -1
	for k := from; k+len(block) <= len(lines); k++ {
		match := true
		for i, b := range block {
			if normalizeSpace(lines[k+i]) != normalizeSpace(b) {
				match = false
				break
			}
		}
		if match && (best < 0 || abs(k-hint) < abs(best-hint)) {
			best = k
		}
	}
	return best
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// reverseFiles returns the diffs that undo files.
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

// ---- Comparing diffs ---------------------------------------------------------

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
		lang, _ := langOfPath(p)
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
			out[p] = append(out[p], tokenEdits(codeTokens(old.String(), lang, true), codeTokens(nw.String(), lang, true))...)
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

// ---- Tokens ----------------------------------------------------------------

// codeLang is how a file's text is tokenised.
type codeLang int

const (
	// langGeneric: no known comment syntax; line ends are tokens.
	langGeneric codeLang = iota
	// langPython: # comments; logical lines and their indentation are tokens.
	langPython
	// langCLike: // and /* */ comments; line ends are white space.
	langCLike
	// langHash: # comments (shell, YAML, TOML, Make, Ruby, Perl, R); line
	// ends are tokens.
	langHash
)

// langOfPath returns the language of a file by its name.
func langOfPath(p string) (codeLang, bool) {
	base := strings.ToLower(path.Base(p))
	switch path.Ext(base) {
	case ".py", ".pyi", ".pyx", ".bzl":
		return langPython, true
	case ".c", ".h", ".cc", ".cpp", ".cxx", ".c++", ".hpp", ".hh", ".hxx", ".ipp", ".cu", ".cuh",
		".java", ".go", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx", ".rs", ".cs", ".kt", ".kts",
		".swift", ".scala", ".dart", ".proto", ".groovy", ".gradle", ".php", ".m", ".mm", ".zig", ".sol", ".v", ".sv":
		return langCLike, true
	case ".sh", ".bash", ".zsh", ".yaml", ".yml", ".toml", ".rb", ".pl", ".pm", ".r", ".cmake", ".mk",
		".cfg", ".conf", ".tf", ".nix", ".dockerfile":
		return langHash, true
	}
	switch base {
	case "makefile", "gnumakefile", "dockerfile", "cmakelists.txt", "requirements.txt", ".gitignore":
		return langHash, true
	case "build", "build.bazel", "workspace", "sconstruct", "sconscript":
		return langPython, true
	}
	return langGeneric, false
}

// programLang returns the language of a whole program: the one file a diff
// names, else python for python-function tasks, else guessed from the code.
func programLang(kind, code string, diffs ...[]*gitdiff.File) codeLang {
	for _, files := range diffs {
		if fs := changed(files); len(fs) == 1 {
			if l, ok := langOfPath(filePath(fs[0])); ok {
				return l
			}
		}
	}
	if kind == topics.KindPythonFunction {
		return langPython
	}
	return guessLang(code)
}

var (
	pyBlock  = regexp.MustCompile(`^(def|class|if|elif|else|for|while|try|except|finally|with|async def)\b.*:$`)
	pyImport = regexp.MustCompile(`^(import [\w.]+( as \w+)?(, *[\w.]+( as \w+)?)*|from [\w.]+ import .*)$`)
)

// guessLang tells Python from C-like code by its lines.
func guessLang(code string) codeLang {
	py, c := 0, 0
	for line := range strings.SplitSeq(code, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case pyBlock.MatchString(t) || pyImport.MatchString(t):
			py++
		case strings.HasSuffix(t, ";") || strings.HasSuffix(t, "{") || t == "}" || strings.HasPrefix(t, "#include"):
			c++
		}
	}
	switch {
	case c > py:
		return langCLike
	case py > 0:
		return langPython
	}
	return langGeneric
}

// Multi-character operators, longest first: the longest match is one token.
var operators = []string{
	"<<=", ">>=", "**=", "//=", "...", "===", "!==", "<=>", ">>>", "&&=", "||=", "??=", "->*",
	"==", "!=", "<=", ">=", "&&", "||", "++", "--", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=",
	"->", "=>", "::", "<<", ">>", "**", "//", ":=", "<-", "??", "?.", "&^", "@=",
}

// Python string prefixes.
var pyPrefixes = map[string]bool{"r": true, "u": true, "b": true, "f": true, "br": true, "rb": true, "fr": true, "rf": true}

// Words after which a parenthesis is not a call: (a,) there is a tuple.
var notCallers = map[string]bool{
	"return": true, "in": true, "not": true, "and": true, "or": true, "if": true, "elif": true, "while": true,
	"yield": true, "else": true, "assert": true, "del": true, "for": true, "is": true, "await": true,
	"lambda": true, "match": true, "case": true, "with": true, "as": true, "from": true, "import": true,
	"except": true, "raise": true, "print": true,
}

const (
	tokIndent = "\x00indent"
	tokDedent = "\x00dedent"
	tokEOL    = "\x00eol"
)

// codeTokens splits src into the tokens PatchesEquivalent compares.
// columns (Python): a logical line's indentation is its column (for diff
// hunks, whose first line may be indented anywhere) rather than
// indent/dedent tokens of the block structure (for whole programs).
func codeTokens(src string, lang codeLang, columns bool) []string {
	src = strings.ReplaceAll(src, "\r\n", "\n")
	var toks []string
	var indents []int
	depth := 0
	lineStart, col := true, 0 // at the start of a physical line; its indentation
	pendingEOL := false       // a logical line ended since the last token
	lineEnds := lang != langCLike
	emit := func(tok string) {
		if lineEnds && (len(toks) == 0 || pendingEOL) {
			switch {
			case lang == langPython && columns:
				toks = append(toks, "\x00col"+strconv.Itoa(col))
			case lang == langPython:
				if pendingEOL {
					toks = append(toks, tokEOL)
				}
				switch {
				case len(indents) == 0:
					indents = append(indents, col)
				case col > indents[len(indents)-1]:
					indents = append(indents, col)
					toks = append(toks, tokIndent)
				default:
					for len(indents) > 0 && col < indents[len(indents)-1] {
						indents = indents[:len(indents)-1]
						toks = append(toks, tokDedent)
					}
					if len(indents) == 0 || col > indents[len(indents)-1] {
						indents = append(indents, col)
					}
				}
			case pendingEOL:
				toks = append(toks, tokEOL)
			}
			pendingEOL = false
		}
		toks = append(toks, tok)
	}
	hashComments := lang == langPython || lang == langHash
	n := len(src)
	for i := 0; i < n; {
		c := src[i]
		switch {
		case c == '\n':
			if depth == 0 && len(toks) > 0 {
				pendingEOL = true
			}
			lineStart, col = true, 0
			i++
			continue
		case c == '\\' && i+1 < n && src[i+1] == '\n': // line continuation
			i += 2
			continue
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			if lineStart {
				if c == '\t' {
					col = (col/8 + 1) * 8
				} else {
					col++
				}
			}
			i++
			continue
		case c == '#' && hashComments, c == '/' && lang == langCLike && i+1 < n && src[i+1] == '/':
			for i < n && src[i] != '\n' {
				i++
			}
			continue
		case c == '/' && lang == langCLike && i+1 < n && src[i+1] == '*':
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				i = n
			} else {
				i += 2 + end + 2
			}
			continue
		}
		lineStart = false
		switch {
		case c == '"' || c == '\'' || (c == '`' && lang != langPython):
			tok, next := stringToken(src, i, "", lang)
			emit(tok)
			i = next
		case isWordByte(c):
			j := i
			for j < n && isWordByte(src[j]) {
				j++
			}
			if c >= '0' && c <= '9' { // a number: 1.5e3, 0x1F, 1_000
				for j < n && (isWordByte(src[j]) || src[j] == '.') {
					j++
				}
			}
			word := src[i:j]
			if lang == langPython && j < n && (src[j] == '"' || src[j] == '\'') && pyPrefixes[strings.ToLower(word)] {
				tok, next := stringToken(src, j, strings.ToLower(word), lang)
				emit(tok)
				i = next
				continue
			}
			emit(word)
			i = j
		default:
			op := src[i : i+1]
			for _, o := range operators {
				if strings.HasPrefix(src[i:], o) {
					op = o
					break
				}
			}
			switch op {
			case "(", "[", "{":
				depth++
			case ")", "]", "}":
				depth = max(depth-1, 0)
			}
			emit(op)
			i += len(op)
		}
	}
	return dropTrailingCommas(toks)
}

// isWordByte reports whether c belongs to an identifier or number (bytes of
// multi-byte UTF-8 characters included: identifiers may be non-ASCII).
func isWordByte(c byte) bool {
	return c == '_' || c == '$' || c >= 0x80 || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

// stringToken reads the string literal starting at src[i] (its quote) and
// returns its token and the index after it. Python's ' and " strings are
// the same token; elsewhere the quote is part of it (a C char is not a
// string). An unterminated literal ends at the line end.
func stringToken(src string, i int, prefix string, lang codeLang) (string, int) {
	q := src[i]
	delim := src[i : i+1]
	if lang == langPython && strings.HasPrefix(src[i:], strings.Repeat(delim, 3)) {
		delim = strings.Repeat(delim, 3)
	}
	j := i + len(delim)
	raw := q == '`'
	for j < len(src) {
		switch {
		case strings.HasPrefix(src[j:], delim):
			body := src[i+len(delim) : j]
			kind := string(q)
			if lang == langPython {
				kind = strconv.Itoa(len(delim))
			}
			return "\x00s" + prefix + kind + "|" + body, j + len(delim)
		case src[j] == '\\' && !raw:
			j += 2
		case src[j] == '\n' && len(delim) == 1 && !raw:
			return "\x00s" + prefix + string(q) + "|" + src[i+1:j], j
		default:
			j++
		}
	}
	return "\x00s" + prefix + string(q) + "|" + src[i+len(delim):min(j, len(src))], len(src)
}

// dropTrailingCommas removes a comma right before a closing bracket, except
// in a one-element tuple: (a,) keeps its comma unless the parenthesis is a
// call's.
func dropTrailingCommas(toks []string) []string {
	type frame struct {
		commas int
		call   bool
	}
	out := make([]string, 0, len(toks))
	var stack []frame
	for _, tk := range toks {
		switch tk {
		case "(", "[", "{":
			call := false
			if n := len(out); n > 0 {
				prev := out[n-1]
				call = prev == ")" || prev == "]" || (isWordByte(prev[0]) && !notCallers[prev] && !(prev[0] >= '0' && prev[0] <= '9'))
			}
			stack = append(stack, frame{call: call})
		case ",":
			if len(stack) > 0 {
				stack[len(stack)-1].commas++
			}
		case ")", "]", "}":
			var top frame
			if len(stack) > 0 {
				top = stack[len(stack)-1]
				stack = stack[:len(stack)-1]
			}
			if n := len(out); n > 0 && out[n-1] == "," && (tk != ")" || top.call || top.commas >= 2) {
				out = out[:n-1]
			}
		}
		out = append(out, tk)
	}
	return out
}
