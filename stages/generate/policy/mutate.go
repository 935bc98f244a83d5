package policy

import (
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/murphy-rl/murphy/compilefix/lang"
)

// Mutation is a way the simulated policy gets a program wrong.
type Mutation string

// Plausible mutants keep the program valid Python with a bug a model could
// make; broken mutations make it fail to compile or to run.
const (
	OffByOne        Mutation = "off_by_one"        // < vs <=, k vs k±1
	WrongOperator   Mutation = "wrong_operator"    // + vs -, == vs !=, and vs or, ...
	MissingEdgeCase Mutation = "missing_edge_case" // a guard `if ...: return ...` dropped
	WrongReturn     Mutation = "wrong_return"      // returns another local, None, a flipped bool
	SyntaxError     Mutation = "syntax_error"      // a block colon or a closing parenthesis dropped
	WrongName       Mutation = "wrong_name"        // a misspelt builtin or function name
)

// PlausibleMutations are the mutants that still parse (a fresh slice).
func PlausibleMutations() []Mutation {
	return []Mutation{OffByOne, WrongOperator, MissingEdgeCase, WrongReturn}
}

// BrokenMutations are the mutants that do not compile or fail on a name (a
// fresh slice).
func BrokenMutations() []Mutation { return []Mutation{SyntaxError, WrongName} }

// srcLine is one line of a program with what mutation needs to know.
type srcLine struct {
	text   string
	masked string // code lines: string literals and comments blanked, same length
	code   bool   // a statement outside docstrings, not blank or a comment
	indent int
}

// parseLines reads a Python program (compilefix/lang): a line is code when
// a token of a statement starts on it, a statement that is only a string
// (a docstring) aside.
func parseLines(src string) []srcLine {
	raw := strings.Split(src, "\n")
	out := make([]srcLine, len(raw))
	for i, t := range raw {
		out[i] = srcLine{text: t, masked: t, indent: len(t) - len(strings.TrimLeft(t, " \t"))}
	}
	f, err := lang.Parse(lang.Python, []byte(src))
	if err != nil {
		return out
	}
	mask := strings.Split(string(f.Mask()), "\n")
	for _, l := range f.LogicalLines() {
		toks := f.Code[l.First:l.End]
		if !slices.ContainsFunc(toks, func(t lang.Token) bool { return t.Kind != lang.String }) {
			continue // a docstring
		}
		for _, t := range toks {
			if k := t.Line - 1; k < len(out) && !out[k].code {
				out[k].code, out[k].masked = true, mask[k]
			}
		}
	}
	return out
}

func isDeclaration(trim string) bool {
	for _, p := range []string{"def ", "class ", "import ", "from ", "@"} {
		if strings.HasPrefix(trim, p) {
			return true
		}
	}
	return false
}

// site is a replaceable span of one line.
type site struct {
	line, start, end int
	repl             string
}

func joinLines(ls []srcLine) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = l.text
	}
	return strings.Join(parts, "\n")
}

func applySite(ls []srcLine, s site) string {
	out := make([]srcLine, len(ls))
	copy(out, ls)
	t := out[s.line].text
	out[s.line].text = t[:s.start] + s.repl + t[s.end:]
	return joinLines(out)
}

var (
	reCompare = regexp.MustCompile(`<=|>=|<|>`)
	reInt     = regexp.MustCompile(`\b\d+\b`)
	reOps     = regexp.MustCompile(`==|!=|\+=|-=| \+ | - | \* | % | // |\band\b|\bor\b`)
	reReturn  = regexp.MustCompile(`^(\s*return\s+)(.+?)\s*$`)
	reAssign  = regexp.MustCompile(`^\s*([A-Za-z_]\w*)\s*(?:=[^=]|\+=|-=)`)
	reForVar  = regexp.MustCompile(`^\s*for\s+([A-Za-z_]\w*)\s+in\b`)
	reIfLine  = regexp.MustCompile(`^\s*if\b.*:\s*$`)
	reIfThen  = regexp.MustCompile(`^\s*if\b.*:\s*(return|continue|break)\b`)
	reExit    = regexp.MustCompile(`^\s*(return|continue|break)\b`)
)

var opSwap = map[string]string{
	"==": "!=", "!=": "==", "+=": "-=", "-=": "+=",
	" + ": " - ", " - ": " + ", " * ": " + ", " % ": " // ", " // ": " / ",
	"and": "or", "or": "and",
}

var compareSwap = map[string]string{"<": "<=", "<=": "<", ">": ">=", ">=": ">"}

// builtinTypos are misspellings a model makes of names it calls.
var builtinTypos = map[string]string{
	"len": "length", "range": "xrange", "sorted": "sort", "sum": "total", "max": "maximum",
	"min": "minimum", "abs": "absolute", "str": "string", "int": "integer", "list": "array",
	"enumerate": "enum", "reversed": "reverse", "append": "push", "isinstance": "is_instance",
}

// sites lists the places mutation m can change in the statement lines.
func sites(ls []srcLine, m Mutation) []site {
	var out []site
	for i, l := range ls {
		if !l.code || isDeclaration(strings.TrimSpace(l.text)) {
			continue
		}
		switch m {
		case OffByOne:
			out = append(out, offByOneSites(i, l)...)
		case WrongOperator:
			for _, loc := range reOps.FindAllStringIndex(l.masked, -1) {
				out = append(out, site{i, loc[0], loc[1], opSwap[l.masked[loc[0]:loc[1]]]})
			}
		case WrongReturn:
			mm := reReturn.FindStringSubmatchIndex(l.text)
			if mm == nil {
				continue
			}
			for _, alt := range wrongReturns(ls, i, l.text[mm[4]:mm[5]]) {
				out = append(out, site{i, mm[4], mm[5], alt})
			}
		case SyntaxError:
			if strings.HasSuffix(strings.TrimRight(l.masked, " "), ":") {
				end := strings.LastIndex(l.text, ":")
				out = append(out, site{i, end, end + 1, ""})
			}
			if j := strings.LastIndex(l.masked, ")"); j >= 0 {
				out = append(out, site{i, j, j + 1, ""})
			}
		case WrongName:
			out = append(out, wrongNameSites(i, l)...)
		}
	}
	return out
}

// offByOneSites are line i's comparisons (< for <=, ...) and integers
// (k for k±1).
func offByOneSites(i int, l srcLine) []site {
	var out []site
	for _, loc := range reCompare.FindAllStringIndex(l.masked, -1) {
		op := l.masked[loc[0]:loc[1]]
		var prev, next byte
		if loc[0] > 0 {
			prev = l.masked[loc[0]-1]
		}
		if loc[1] < len(l.masked) {
			next = l.masked[loc[1]]
		}
		if prev == '<' || prev == '>' || prev == '-' || next == '<' || next == '>' {
			continue // shifts and arrows
		}
		out = append(out, site{i, loc[0], loc[1], compareSwap[op]})
	}
	for _, loc := range reInt.FindAllStringIndex(l.masked, -1) {
		if (loc[0] > 0 && l.masked[loc[0]-1] == '.') || (loc[1] < len(l.masked) && l.masked[loc[1]] == '.') {
			continue
		}
		v, err := strconv.Atoi(l.masked[loc[0]:loc[1]])
		if err != nil {
			continue
		}
		out = append(out, site{i, loc[0], loc[1], strconv.Itoa(v + 1)})
		if v > 0 {
			out = append(out, site{i, loc[0], loc[1], strconv.Itoa(v - 1)})
		}
	}
	return out
}

// wrongNameSites are line i's calls of names a model misspells.
func wrongNameSites(i int, l srcLine) []site {
	var out []site
	for name, typo := range builtinTypos {
		re := regexp.MustCompile(`\b` + name + `\(`)
		for _, loc := range re.FindAllStringIndex(l.masked, -1) {
			if loc[0] > 0 && l.masked[loc[0]-1] == '.' && name != "append" {
				continue
			}
			out = append(out, site{i, loc[0], loc[0] + len(name), typo})
		}
	}
	return out
}

// wrongReturns proposes wrong expressions for `return expr` at line i:
// another local of the function, a flipped boolean, a shifted number, None.
func wrongReturns(ls []srcLine, i int, expr string) []string {
	switch expr {
	case "True":
		return []string{"False"}
	case "False":
		return []string{"True"}
	case "None":
		return nil
	}
	if v, err := strconv.Atoi(expr); err == nil {
		return []string{strconv.Itoa(v + 1)}
	}
	var alts []string
	seen := map[string]bool{expr: true}
	// Locals assigned in the enclosing function, above the return.
	for j := i - 1; j >= 0; j-- {
		if ls[j].code && strings.HasPrefix(strings.TrimSpace(ls[j].text), "def ") && ls[j].indent < ls[i].indent {
			break
		}
		for _, re := range []*regexp.Regexp{reAssign, reForVar} {
			if m := re.FindStringSubmatch(ls[j].masked); m != nil && !seen[m[1]] && ls[j].code {
				seen[m[1]] = true
				alts = append(alts, m[1])
			}
		}
	}
	if len(alts) == 0 {
		alts = append(alts, "None")
	}
	return alts
}

// dropGuards lists the variants of ls with one early-exit guard removed:
// `if cond: return x` or an `if cond:` whose whole body is one return,
// continue or break, with no else/elif.
func dropGuards(ls []srcLine) []string {
	var out []string
	next := func(k int) int {
		for k++; k < len(ls) && !ls[k].code; k++ {
		}
		return k
	}
	for i, l := range ls {
		if !l.code {
			continue
		}
		var drop []int
		switch {
		case reIfThen.MatchString(l.masked):
			drop = []int{i}
		case reIfLine.MatchString(l.masked):
			b := next(i)
			if b >= len(ls) || ls[b].indent <= l.indent || !reExit.MatchString(ls[b].text) {
				continue
			}
			drop = []int{i, b}
		default:
			continue
		}
		after := next(drop[len(drop)-1])
		if after < len(ls) {
			t := strings.TrimSpace(ls[after].text)
			if ls[after].indent == l.indent && (strings.HasPrefix(t, "else") || strings.HasPrefix(t, "elif")) {
				continue
			}
		}
		kept := make([]srcLine, 0, len(ls))
		for k := range ls {
			if k != drop[0] && (len(drop) == 1 || k != drop[1]) {
				kept = append(kept, ls[k])
			}
		}
		if blocksNonEmpty(kept) {
			out = append(out, joinLines(kept))
		}
	}
	return out
}

// blocksNonEmpty checks that every line opening a block is followed by a
// more indented statement.
func blocksNonEmpty(ls []srcLine) bool {
	for i, l := range ls {
		if !l.code || !strings.HasSuffix(strings.TrimRight(l.masked, " "), ":") {
			continue
		}
		j := i + 1
		for j < len(ls) && !ls[j].code {
			j++
		}
		if j >= len(ls) || ls[j].indent <= l.indent {
			return false
		}
	}
	return true
}

// mutate applies mutation m to src at a random applicable place. It reports
// false when m does not apply to src.
func (mu *mutator) mutate(src string, m Mutation, entryPoint string, r *rand.Rand) (string, bool) {
	a := mu.analyse(src, m, entryPoint)
	if m == MissingEdgeCase {
		if len(a.variants) == 0 {
			return "", false
		}
		return a.variants[r.IntN(len(a.variants))], true
	}
	ss := slices.Clone(a.sites)
	for len(ss) > 0 {
		k := r.IntN(len(ss))
		if out := applySite(a.lines, ss[k]); out != src {
			return out, true
		}
		ss = append(ss[:k], ss[k+1:]...)
	}
	return "", false
}

// analysis is what mutate needs of one source for one mutation: its lines
// and the sorted sites (or, for MissingEdgeCase, the variants). It depends
// only on its key, so it is computed once per (source, mutation, entry
// point): the same reference solutions are mutated over and over.
type analysis struct {
	lines    []srcLine
	sites    []site
	variants []string
}

type analysisKey struct {
	src        string
	m          Mutation
	entryPoint string
}

// analysisCacheSize bounds a mutator's cache; it is emptied when full.
const analysisCacheSize = 4096

// mutator mutates programs, remembering each source's analysis.
type mutator struct {
	mu       sync.Mutex
	analyses map[analysisKey]*analysis
}

func newMutator() *mutator { return &mutator{analyses: map[analysisKey]*analysis{}} }

func (mu *mutator) analyse(src string, m Mutation, entryPoint string) *analysis {
	k := analysisKey{src, m, entryPoint}
	mu.mu.Lock()
	a := mu.analyses[k]
	mu.mu.Unlock()
	if a != nil {
		return a
	}
	a = &analysis{lines: parseLines(src)}
	if m == MissingEdgeCase {
		a.variants = dropGuards(a.lines)
	} else {
		a.sites = sites(a.lines, m)
		if m == WrongName && entryPoint != "" {
			// Misspelling the function's own name is always available.
			re := regexp.MustCompile(`^(\s*def\s+)` + regexp.QuoteMeta(entryPoint) + `\b`)
			for i, l := range a.lines {
				if loc := re.FindStringSubmatchIndex(l.text); loc != nil {
					a.sites = append(a.sites, site{i, loc[3], loc[3] + len(entryPoint), misspell(entryPoint)})
				}
			}
		}
		// Sort for determinism: map iteration order feeds WrongName sites.
		sortSites(a.sites)
	}
	mu.mu.Lock()
	if len(mu.analyses) >= analysisCacheSize {
		clear(mu.analyses)
	}
	mu.analyses[k] = a
	mu.mu.Unlock()
	return a
}

func sortSites(ss []site) {
	less := func(a, b site) bool {
		if a.line != b.line {
			return a.line < b.line
		}
		if a.start != b.start {
			return a.start < b.start
		}
		return a.repl < b.repl
	}
	for i := 1; i < len(ss); i++ {
		for j := i; j > 0 && less(ss[j], ss[j-1]); j-- {
			ss[j], ss[j-1] = ss[j-1], ss[j]
		}
	}
}

// misspell drops the last letter of a name, or doubles it when short.
func misspell(name string) string {
	if len(name) > 3 {
		return name[:len(name)-1]
	}
	return name + name[len(name)-1:]
}
