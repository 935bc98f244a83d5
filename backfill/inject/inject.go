// Package inject plants compile errors in C, Go, Java and Python source
// files, to make compile-fix tasks from repositories that build: each
// operator finds the sites of one kind of mistake in a file (an include or
// import dropped, a use of a declared name misspelt, a function removed
// that is still called, a semicolon, brace, colon or bracket deleted, a
// call given the wrong number of arguments, a value of the wrong type,
// merge-conflict markers left in), picks one with a seeded generator and
// returns the mutated file with a description and the reference repair
// (Mutation.Patch).
//
// The analysis is on the text, language-aware and conservative: Go files
// are parsed with go/parser; C, Java and Python files are lexed (comments,
// string and character literals, text blocks, raw and triple-quoted
// strings, C directives and line splices are skipped) and matched against
// declaration, definition and call shapes. A site is only taken where the
// mistake should be a compile error (Python: a syntax error for the
// Syntactic operators, a NameError or TypeError for the others, which a
// byte-compile does not catch). Whether the build really fails is for the
// caller to check, since one file cannot tell (a header included twice, an
// overload elsewhere, warnings that are not errors).
package inject

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"
)

// Operators.
const (
	// OpDropImport removes an import (Go, Java, Python) or an #include (C)
	// whose names the file uses.
	OpDropImport = "drop-import"
	// OpMisspell misspells one use of a name the file declares (a
	// parameter, local, function, method, type or module-level name), never
	// the declaration.
	OpMisspell = "misspell-identifier"
	// OpRemoveFunction removes the definition of a function or method the
	// file calls elsewhere.
	OpRemoveFunction = "remove-function"
	// OpDeleteSemicolon deletes a statement's semicolon (C, Java) or the
	// terminator between two Go statements (an explicit ';' or the newline
	// that stands for one, joining the lines).
	OpDeleteSemicolon = "delete-semicolon"
	// OpDeleteBrace deletes a closing brace inside a function body (C, Go,
	// Java).
	OpDeleteBrace = "delete-brace"
	// OpDeleteColon deletes the colon of a Python compound statement.
	OpDeleteColon = "delete-colon"
	// OpDeleteBracket deletes a closing bracket of a Python statement.
	OpDeleteBracket = "delete-bracket"
	// OpChangeArity drops or adds an argument of a call to a function the
	// file defines.
	OpChangeArity = "change-arity"
	// OpTypeMismatch gives a typed variable or return value a literal of
	// another type (a string literal for a number, a number for a string
	// or pointer).
	OpTypeMismatch = "type-mismatch"
	// OpMergeConflict leaves merge-conflict markers around a statement.
	OpMergeConflict = "merge-conflict"
)

// ErrNoSite is returned (wrapped) when an operator finds no site in a file.
var ErrNoSite = errors.New("inject: no site for the operator")

// Mutation is one planted error.
type Mutation struct {
	// Operator is the operator that made it.
	Operator string
	// File is the file's workspace path (slash-separated, relative).
	File string
	// Line is the 1-based line of the change in New.
	Line int
	// Description says what was changed, in a sentence; the line numbers
	// in it are Old's.
	Description string
	// Old is the original content, New the mutated one.
	Old, New []byte
	// Expect are the lines of New (sorted) where a compiler should report
	// the error: the change itself, the uses of what was removed, where a
	// parser notices a missing brace. Best effort; empty when unknown (a
	// project header dropped: what it declares is not in the file).
	Expect []int
}

// Patch returns the reference repair: the unified git diff (a/ and b/
// prefixes, three lines of context, made with go-udiff) that turns New
// back into Old.
func (m *Mutation) Patch() string {
	from, to := string(m.New), string(m.Old)
	if from == to {
		return ""
	}
	u, err := udiff.ToUnified("a/"+m.File, "b/"+m.File, from, udiff.Lines(from, to), udiff.DefaultContextLines)
	if err != nil || u == "" {
		return ""
	}
	return "diff --git a/" + m.File + " b/" + m.File + "\n" + u
}

// opFunc finds the sites of one operator in f and plans one.
type opFunc func(f *srcFile, r *rand.Rand) (*plan, error)

type language struct {
	ops   []string
	funcs map[string]opFunc
}

var languages = map[string]*language{}

func register(lang string, ops []string, funcs map[string]opFunc) {
	languages[lang] = &language{ops: ops, funcs: funcs}
}

func init() {
	register("c", []string{OpDropImport, OpMisspell, OpRemoveFunction, OpDeleteSemicolon, OpDeleteBrace,
		OpChangeArity, OpTypeMismatch, OpMergeConflict}, cOps(false))
	register("java", []string{OpDropImport, OpMisspell, OpRemoveFunction, OpDeleteSemicolon, OpDeleteBrace,
		OpChangeArity, OpTypeMismatch, OpMergeConflict}, cOps(true))
	register("go", []string{OpDropImport, OpMisspell, OpRemoveFunction, OpDeleteSemicolon, OpDeleteBrace,
		OpChangeArity, OpTypeMismatch, OpMergeConflict}, goOps())
	register("python", []string{OpDropImport, OpMisspell, OpRemoveFunction, OpDeleteColon, OpDeleteBracket,
		OpChangeArity, OpMergeConflict}, pyOps())
}

// Lang normalises a language name: "c" (also "h"), "go" ("golang"),
// "java", "python" ("py", "python3"); "" for others.
func Lang(lang string) string {
	switch strings.ToLower(strings.TrimSpace(lang)) {
	case "c", "h":
		return "c"
	case "go", "golang":
		return "go"
	case "java":
		return "java"
	case "python", "py", "python3":
		return "python"
	}
	return ""
}

// Languages returns the supported languages.
func Languages() []string { return []string{"c", "go", "java", "python"} }

// Operators returns the operators of a language (nil for an unknown one).
func Operators(lang string) []string {
	l := languages[Lang(lang)]
	if l == nil {
		return nil
	}
	return append([]string(nil), l.ops...)
}

// Syntactic reports whether the error op plants in a file of lang is a
// syntax error, which a parse alone (python -m compileall, gofmt -e)
// reports.
func Syntactic(lang, op string) bool {
	switch op {
	case OpDeleteSemicolon, OpDeleteBrace, OpDeleteColon, OpDeleteBracket, OpMergeConflict:
		return true
	}
	return false
}

// Inject plants one error of operator op in the file at path (its
// workspace path) with content src. The same arguments give the same
// mutation. The error wraps ErrNoSite when the file has no site for op.
func Inject(lang, op string, p string, src []byte, seed int64) (*Mutation, error) {
	l := languages[Lang(lang)]
	if l == nil {
		return nil, fmt.Errorf("inject: unknown language %q", lang)
	}
	fn := l.funcs[op]
	if fn == nil {
		return nil, fmt.Errorf("inject: operator %q is not defined for %s (have %s)", op, Lang(lang), strings.Join(l.ops, ", "))
	}
	clean := path.Clean(filepath.ToSlash(p))
	if p == "" || !filepath.IsLocal(filepath.FromSlash(clean)) {
		return nil, fmt.Errorf("inject: path %q is not a relative workspace path", p)
	}
	f := newSrcFile(clean, src)
	// Nearby seeds must not give nearby first draws: PCG's first outputs
	// from seeds 1 and 2 are close, so the seed is mixed first.
	a := splitmix(uint64(seed))
	r := rand.New(rand.NewPCG(a, splitmix(a^0x6d75727068792d69)))
	pl, err := fn(f, r)
	if err != nil {
		return nil, err
	}
	return pl.mutation(op, f), nil
}

// splitmix is SplitMix64's output function.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// noSite is the error of an operator without sites.
func noSite(op string, f *srcFile, why string) error {
	return fmt.Errorf("%w: %s in %s: %s", ErrNoSite, op, f.path, why)
}

// edit replaces src[start:end] with text.
type edit struct {
	start, end int
	text       string
}

// plan is an operator's chosen change.
type plan struct {
	edits []edit
	// at is the offset (in the original) of the change.
	at int
	// expect are offsets in the original where the error should be
	// reported (mapped into the mutated file); expectNew are lines of the
	// mutated file, for what only exists there.
	expect    []int
	expectNew []int
	// expectEnd asks for the mutated file's last line too (a brace missing
	// until the end).
	expectEnd bool
	desc      string
}

func (pl *plan) mutation(op string, f *srcFile) *Mutation {
	es := append([]edit(nil), pl.edits...)
	sort.Slice(es, func(i, j int) bool { return es[i].start < es[j].start })
	var b strings.Builder
	pos := 0
	for _, e := range es {
		b.WriteString(string(f.src[pos:e.start]))
		b.WriteString(e.text)
		pos = e.end
	}
	b.WriteString(string(f.src[pos:]))
	nf := newSrcFile(f.path, []byte(b.String()))
	mapOff := func(o int) int {
		d := 0
		for _, e := range es {
			if o < e.start {
				break
			}
			if o < e.end || o == e.start {
				return e.start + d // inside what the edit replaced, or where it inserts
			}
			d += len(e.text) - (e.end - e.start)
		}
		return o + d
	}
	m := &Mutation{Operator: op, File: f.path, Description: pl.desc, Old: f.src, New: nf.src}
	m.Line = nf.line(min(mapOff(pl.at), max(len(nf.src)-1, 0)))
	set := map[int]bool{}
	for _, o := range pl.expect {
		set[nf.line(min(mapOff(o), max(len(nf.src)-1, 0)))] = true
	}
	for _, l := range pl.expectNew {
		set[l] = true
	}
	if pl.expectEnd {
		set[nf.lastLine()] = true
	}
	for l := range set {
		m.Expect = append(m.Expect, l)
	}
	sort.Ints(m.Expect)
	return m
}

// srcFile is a file's content with its line index.
type srcFile struct {
	path   string
	src    []byte
	starts []int
}

func newSrcFile(p string, src []byte) *srcFile {
	f := &srcFile{path: p, src: src, starts: []int{0}}
	for i, c := range src {
		if c == '\n' && i+1 < len(src) {
			f.starts = append(f.starts, i+1)
		}
	}
	return f
}

// line is the 1-based line of offset o.
func (f *srcFile) line(o int) int {
	return sort.Search(len(f.starts), func(i int) bool { return f.starts[i] > o })
}

// lastLine is the number of the last line with content.
func (f *srcFile) lastLine() int { return len(f.starts) }

// lineStart is the offset of the start of o's line.
func (f *srcFile) lineStart(o int) int { return f.starts[f.line(o)-1] }

// lineEnd is the offset just past the newline that ends o's line.
func (f *srcFile) lineEnd(o int) int {
	l := f.line(o)
	if l < len(f.starts) {
		return f.starts[l]
	}
	return len(f.src)
}

// text returns src[s:e].
func (f *srcFile) text(s, e int) string { return string(f.src[s:e]) }

// lineText is line n (1-based) without its newline.
func (f *srcFile) lineText(n int) string {
	if n < 1 || n > len(f.starts) {
		return ""
	}
	s := f.starts[n-1]
	e := len(f.src)
	if n < len(f.starts) {
		e = f.starts[n]
	}
	return strings.TrimRight(string(f.src[s:e]), "\r\n")
}

// blank reports whether line n is empty or whitespace.
func (f *srcFile) blank(n int) bool { return strings.TrimSpace(f.lineText(n)) == "" }

// wsBefore reports whether only blanks precede offset o on its line.
func (f *srcFile) wsBefore(o int) bool {
	return strings.TrimSpace(f.text(f.lineStart(o), o)) == ""
}

// restOfLine is the text from o to the end of its line, newline excluded.
func (f *srcFile) restOfLine(o int) string {
	return strings.TrimRight(f.text(o, f.lineEnd(o)), "\r\n")
}

// deleteLines is the edit that removes the whole lines from s's line to
// the line of e-1, and with them a blank line after when the line before
// is blank too (so that no double blank is left).
func (f *srcFile) deleteLines(s, e int) edit {
	ls, le := f.lineStart(s), f.lineEnd(max(e-1, s))
	first, last := f.line(ls), f.line(max(le-1, ls))
	if first > 1 && f.blank(first-1) && last < f.lastLine() && f.blank(last+1) {
		le = f.lineEnd(le)
	}
	return edit{start: ls, end: le}
}

// pick returns a random element index of n, or -1.
func pick(r *rand.Rand, n int) int {
	if n <= 0 {
		return -1
	}
	return r.IntN(n)
}

// misspell returns a misspelling of name: two neighbouring letters
// swapped, one dropped or one doubled, never its first letter, that taken
// does not report (a name the file uses, a keyword). ok is false when
// every variant is taken.
func misspell(name string, taken func(string) bool, r *rand.Rand) (string, bool) {
	var vs []string
	seen := map[string]bool{name: true}
	add := func(v string) {
		if !seen[v] && !taken(v) {
			seen[v] = true
			vs = append(vs, v)
		}
	}
	b := []byte(name)
	for i := 1; i+1 < len(b); i++ {
		if b[i] != b[i+1] && isLetter(b[i]) && isLetter(b[i+1]) {
			c := append([]byte(nil), b...)
			c[i], c[i+1] = c[i+1], c[i]
			add(string(c))
		}
	}
	if len(b) >= 4 {
		for i := 1; i < len(b); i++ {
			if isLetter(b[i]) {
				add(string(b[:i]) + string(b[i+1:]))
			}
		}
	}
	for i := 1; i < len(b); i++ {
		if isLetter(b[i]) {
			add(string(b[:i+1]) + string(b[i:]))
		}
	}
	if len(vs) == 0 {
		return "", false
	}
	return vs[r.IntN(len(vs))], true
}

func isLetter(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }

var branches = []string{"feature/refactor", "origin/main", "topic/cleanup", "fix-build", "develop", "upstream/master"}

// conflict plans merge-conflict markers around the whole lines
// [start, end) of f (start at a line start, end just past a newline or at
// the end of the file). The other side is the same lines with a number
// changed, or nothing when they have none (the lines deleted there).
func conflict(f *srcFile, start, end int, r *rand.Rand, what string) *plan {
	ours := f.text(start, end)
	if !strings.HasSuffix(ours, "\n") {
		ours += "\n"
	}
	theirs := bumpNumber(ours)
	branch := branches[r.IntN(len(branches))]
	block := "<<<<<<< HEAD\n" + ours + "=======\n" + theirs + ">>>>>>> " + branch + "\n"
	l := f.line(start)
	oursLines, theirsLines := strings.Count(ours, "\n"), strings.Count(theirs, "\n")
	side := "a version with a number changed"
	if theirs == "" {
		side = "an empty side (the lines deleted there)"
	}
	lastOrig := f.line(max(end-1, start))
	return &plan{
		edits:     []edit{{start: start, end: end, text: block}},
		at:        start,
		expectNew: []int{l, l + 1 + oursLines, l + 2 + oursLines + theirsLines},
		desc: fmt.Sprintf("left merge-conflict markers (HEAD against %s, %s) around %s at lines %d-%d",
			branch, side, what, l, lastOrig),
	}
}

// bumpNumber changes the first decimal number outside quotes in s (by
// one), or returns "" when there is none.
func bumpNumber(s string) string {
	var q byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case q != 0:
			switch c {
			case '\\':
				i++
			case q:
				q = 0
			}
		case c == '"' || c == '\'' || c == '`':
			q = c
		case isDigit(c) && (i == 0 || !isIdentByte(s[i-1]) && s[i-1] != '.'):
			j := i
			for j < len(s) && isDigit(s[j]) {
				j++
			}
			if j < len(s) && (isIdentByte(s[j]) || s[j] == '.') {
				i = j
				continue
			}
			n, err := strconv.Atoi(s[i:j])
			if err != nil { // too many digits: leave this one
				i = j
				continue
			}
			return s[:i] + strconv.Itoa(n+1) + s[j:]
		}
	}
	return ""
}

// stringLit is a string literal made from an expression's text: the text
// quoted when it is a short plain literal or name, else "0".
func stringLit(expr string) string {
	e := strings.TrimSpace(expr)
	if len(e) > 0 && len(e) <= 24 && !strings.ContainsAny(e, "\"'`\\ \t\n") {
		return `"` + e + `"`
	}
	return `"0"`
}

// lines renders line numbers for descriptions.
func lines(f *srcFile, offs []int) string {
	seen := map[int]bool{}
	var ls []int
	for _, o := range offs {
		if l := f.line(o); !seen[l] {
			seen[l] = true
			ls = append(ls, l)
		}
	}
	sort.Ints(ls)
	var b strings.Builder
	for i, l := range ls {
		if i == 5 {
			fmt.Fprintf(&b, ", ...")
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprint(&b, l)
	}
	return b.String()
}
