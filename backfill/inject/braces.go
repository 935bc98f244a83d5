package inject

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

func wordSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

var (
	cKeywords = wordSet(`auto break case char const continue default do double else enum extern float for goto if
		inline int long register restrict return short signed sizeof static struct switch typedef union unsigned
		void volatile while _Bool _Complex _Imaginary _Alignas _Alignof _Atomic _Generic _Noreturn _Static_assert
		_Thread_local bool true false __attribute__ __asm__ asm __inline __inline__ __restrict __restrict__
		__extension__ typeof __typeof__ alignof defined offsetof`)
	cIntWords = wordSet(`int long short char unsigned signed size_t ssize_t ptrdiff_t intptr_t uintptr_t
		int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t intmax_t uintmax_t off_t
		const volatile static register extern auto`)
	cStmtWords = wordSet(`return typedef goto case else do if while for switch break continue sizeof`)

	javaKeywords = wordSet(`abstract assert boolean break byte case catch char class const continue default do
		double else enum extends final finally float for goto if implements import instanceof int interface long
		native new package private protected public return short static strictfp super switch synchronized this
		throw throws transient try void volatile while var record yield sealed permits true false null`)
	javaModifiers = wordSet(`public private protected static final abstract native synchronized transient
		volatile strictfp default sealed`)
	javaPrims = wordSet(`boolean byte char short int long float double void`)
)

// cHeaders lists, for standard C headers, names that only they declare:
// dropping the header leaves a file that uses one of them broken.
var cHeaders = map[string][]string{
	"stdio.h": strings.Fields(`printf fprintf sprintf snprintf vsnprintf vfprintf fopen fclose fread fwrite fputs
		puts fgets fputc putc getc fgetc sscanf fscanf FILE stderr stdout stdin EOF perror fflush putchar getchar
		fseek ftell rewind`),
	"stdlib.h": strings.Fields(`malloc calloc realloc free exit atoi atol atof strtol strtoul strtoll strtoull
		strtod abort qsort bsearch getenv EXIT_SUCCESS EXIT_FAILURE rand srand`),
	"string.h": strings.Fields(`strlen strcmp strncmp memcpy memset memmove memcmp strcpy strncpy strchr
		strrchr strstr strcat strncat strerror strdup strtok strspn strcspn`),
	"math.h": strings.Fields(`fabs sqrt pow floor ceil isnan isinf sin cos tan log log10 exp fmod HUGE_VAL
		NAN INFINITY round trunc`),
	"ctype.h":  strings.Fields(`isdigit isalpha isspace isalnum isupper islower tolower toupper isxdigit isprint iscntrl ispunct`),
	"limits.h": strings.Fields(`INT_MAX INT_MIN UINT_MAX LONG_MAX LONG_MIN ULONG_MAX CHAR_BIT SHRT_MAX UCHAR_MAX LLONG_MAX`),
	"float.h":  strings.Fields(`DBL_EPSILON DBL_MAX DBL_MIN DBL_DIG FLT_EPSILON FLT_MAX FLT_MIN LDBL_MAX`),
	"assert.h": {"assert"},
	"errno.h":  strings.Fields(`errno EINVAL ENOMEM ERANGE EAGAIN EINTR ENOENT`),
	"stdint.h": strings.Fields(`uint8_t uint16_t uint32_t uint64_t int8_t int16_t int32_t int64_t SIZE_MAX
		UINT8_MAX UINT16_MAX UINT32_MAX UINT64_MAX INT32_MAX INT64_MAX uintptr_t intptr_t`),
	"stdbool.h": {"bool", "true", "false"},
	"stdarg.h":  strings.Fields(`va_list va_start va_end va_arg va_copy`),
	"time.h":    strings.Fields(`time_t clock_t time clock difftime mktime localtime gmtime strftime CLOCKS_PER_SEC`),
	"locale.h":  strings.Fields(`setlocale localeconv LC_ALL LC_NUMERIC`),
}

// cfile is a lexed C or Java file with its definitions.
type cfile struct {
	*srcFile
	lx          *lexed
	java        bool
	brace       []int // brace depth at each code token (a closer has its opener's)
	paren       []int // parenthesis and bracket depth at each code token
	transparent map[int]bool
	defs        []*cdef // function and method definitions, in order
	protos      []*cdef // C prototypes at file level
	classes     map[string]bool
	names       map[string]bool
	declAt      map[int]bool // name tokens of definitions and prototypes
	// cond marks code tokens inside a preprocessor conditional other
	// than an include guard: they may not be compiled.
	cond []bool
}

type cparam struct {
	name string
	tok  int
}

// cdef is a definition (body >= 0) or a prototype.
type cdef struct {
	name                             string
	nameTok, open, close, body, end  int
	start                            int // the definition's first token
	params                           []cparam
	arity                            int // -1: unknown (C "()")
	variadic, static, override, ctor bool
}

func newCFile(f *srcFile, java bool) *cfile {
	c := &cfile{srcFile: f, lx: lexBraces(f.src, !java), java: java, transparent: map[int]bool{},
		classes: map[string]bool{}, names: map[string]bool{}, declAt: map[int]bool{}}
	code := c.lx.code
	c.brace, c.paren = make([]int, len(code)), make([]int, len(code))
	bd, pd := 0, 0
	for i, t := range code {
		c.brace[i], c.paren[i] = bd, pd
		if t.kind == tIdent {
			c.names[t.text] = true
			if java && (t.text == "class" || t.text == "interface" || t.text == "enum" || t.text == "record") &&
				c.lx.ident(i+1) && !c.lx.is(i-1, ".") {
				c.classes[code[i+1].text] = true
			}
		}
		if t.kind != tPunct {
			continue
		}
		switch t.text {
		case "{":
			if !java && i >= 2 && code[i-1].kind == tString && code[i-2].text == "extern" {
				c.transparent[i] = true
				if m := c.lx.match[i]; m >= 0 {
					c.transparent[m] = true
				}
				continue
			}
			bd++
		case "}":
			if !c.transparent[i] {
				bd = max(bd-1, 0)
				c.brace[i] = bd
			}
		case "(", "[":
			pd++
		case ")", "]":
			pd = max(pd-1, 0)
			c.paren[i] = pd
		}
	}
	c.cond = make([]bool, len(code))
	var guards []bool
	open := 0 // conditionals open that are not guards
	for i, t := range code {
		c.cond[i] = open > 0
		if t.kind != tPP {
			continue
		}
		dir, rest := ppDirective(t.text)
		switch dir {
		case "if", "ifdef", "ifndef":
			g := false
			if dir == "ifndef" && i+1 < len(code) && code[i+1].kind == tPP {
				d2, r2 := ppDirective(code[i+1].text)
				g = d2 == "define" && rest != "" && firstWord(r2) == firstWord(rest)
			}
			guards = append(guards, g)
			if !g {
				open++
			}
		case "endif":
			if n := len(guards); n > 0 {
				if !guards[n-1] {
					open--
				}
				guards = guards[:n-1]
			}
		}
	}
	for i := range code {
		switch {
		case c.lx.is(i, "{") && !c.transparent[i]:
			if java {
				c.javaDef(i)
			} else if c.brace[i] == 0 {
				c.cDef(i)
			}
		case !java && c.lx.is(i, ";") && c.brace[i] == 0 && c.paren[i] == 0:
			c.cProto(i)
		}
	}
	return c
}

func (c *cfile) keyword(s string) bool {
	if c.java {
		return javaKeywords[s]
	}
	return cKeywords[s]
}

func (c *cfile) tok(i int) ltok { return c.lx.code[i] }

// declStart is the first token of the declaration whose name is token k.
func (c *cfile) declStart(k int) int {
	j := k - 1
	for j >= 0 {
		t := c.tok(j)
		if t.kind == tPP || c.lx.is(j, ";") || c.lx.is(j, "{") || (c.lx.is(j, "}") && !c.transparent[j]) {
			break
		}
		if (c.lx.is(j, ")") || c.lx.is(j, "]")) && c.lx.match[j] >= 0 && c.lx.match[j] < j {
			j = c.lx.match[j]
		}
		j--
	}
	return j + 1
}

func (c *cfile) cDef(i int) {
	j := i - 1
	if !c.lx.is(j, ")") {
		return
	}
	o := c.lx.match[j]
	if o < 1 || !c.lx.ident(o-1) || cKeywords[c.tok(o-1).text] || c.lx.match[i] < 0 {
		return
	}
	d := &cdef{name: c.tok(o - 1).text, nameTok: o - 1, open: o, close: j, body: i, end: c.lx.match[i]}
	d.start = c.declStart(d.nameTok)
	for k := d.start; k < d.nameTok; k++ {
		d.static = d.static || c.tok(k).text == "static"
	}
	d.params, d.arity, d.variadic = c.params(o, j)
	c.defs = append(c.defs, d)
	c.declAt[d.nameTok] = true
}

func (c *cfile) cProto(i int) {
	j := i - 1
	if !c.lx.is(j, ")") {
		return
	}
	o := c.lx.match[j]
	if o < 2 || !c.lx.ident(o-1) || cKeywords[c.tok(o-1).text] {
		return
	}
	b := o - 2
	if !(c.lx.ident(b) && !cStmtWords[c.tok(b).text]) && !c.lx.is(b, "*") && !c.lx.is(b, ")") {
		return
	}
	d := &cdef{name: c.tok(o - 1).text, nameTok: o - 1, open: o, close: j, body: -1, end: i}
	d.start = c.declStart(d.nameTok)
	for k := d.start; k < d.nameTok; k++ {
		if c.lx.is(k, "=") || c.tok(k).text == "typedef" {
			return
		}
		d.static = d.static || c.tok(k).text == "static"
	}
	d.params, d.arity, d.variadic = c.params(o, j)
	c.protos = append(c.protos, d)
	c.declAt[d.nameTok] = true
}

func (c *cfile) javaDef(i int) {
	j := i - 1
	if c.lx.ident(j) {
		k := j
		for k > 0 && (c.lx.ident(k) || c.lx.is(k, ".") || c.lx.is(k, ",")) && c.tok(k).text != "throws" {
			k--
		}
		if !c.lx.ident(k) || c.tok(k).text != "throws" {
			return
		}
		j = k - 1
	}
	if !c.lx.is(j, ")") {
		return
	}
	o := c.lx.match[j]
	if o < 1 || !c.lx.ident(o-1) || javaKeywords[c.tok(o-1).text] || c.lx.match[i] < 0 {
		return
	}
	d := &cdef{name: c.tok(o - 1).text, nameTok: o - 1, open: o, close: j, body: i, end: c.lx.match[i]}
	b := o - 2
	switch {
	case b < 0:
		return
	case c.lx.ident(b) && (javaPrims[c.tok(b).text] || !javaKeywords[c.tok(b).text] && !javaModifiers[c.tok(b).text]),
		c.lx.is(b, ">"), c.lx.is(b, ">>"), c.lx.is(b, ">>>"), c.lx.is(b, "]"):
	case c.classes[d.name] && (javaModifiers[c.tok(b).text] || c.lx.is(b, ";") || c.lx.is(b, "{") || c.lx.is(b, "}") || c.lx.is(b, ")")):
		d.ctor = true
	default:
		return
	}
	d.start = c.declStart(d.nameTok)
	for k := d.start; k < d.nameTok; k++ {
		d.static = d.static || c.tok(k).text == "static"
		d.override = d.override || (c.lx.is(k, "@") && c.lx.ident(k+1) && c.tok(k+1).text == "Override")
	}
	d.params, d.arity, d.variadic = c.params(o, j)
	c.defs = append(c.defs, d)
	c.declAt[d.nameTok] = true
}

// params splits the parameter list between the parentheses at open and
// close.
func (c *cfile) params(open, close int) (ps []cparam, arity int, variadic bool) {
	if close == open+1 {
		if c.java {
			return nil, 0, false
		}
		return nil, -1, false
	}
	if !c.java && close == open+2 && c.tok(open+1).text == "void" {
		return nil, 0, false
	}
	var groups [][2]int
	s, angle := open+1, 0
	for k := open + 1; k < close; k++ {
		if m := c.lx.match[k]; m > k {
			k = m
			continue
		}
		if c.java {
			switch c.tok(k).text {
			case "<":
				angle++
			case ">":
				angle--
			case ">>":
				angle -= 2
			case ">>>":
				angle -= 3
			}
		}
		if c.lx.is(k, ",") && angle <= 0 {
			groups = append(groups, [2]int{s, k})
			s = k + 1
		}
	}
	groups = append(groups, [2]int{s, close})
	for _, g := range groups {
		p := cparam{tok: -1}
		e := g[1]
		for e-1 > g[0] && c.lx.is(e-1, "]") && c.lx.match[e-1] >= g[0] {
			e = c.lx.match[e-1]
		}
		for k := g[0]; k < e; k++ {
			if c.lx.is(k, "...") {
				variadic = true
			}
			if c.lx.is(k, "(") && c.lx.is(k+1, "*") && c.lx.ident(k+2) && c.lx.is(k+3, ")") {
				p = cparam{name: c.tok(k + 2).text, tok: k + 2}
			}
		}
		if p.tok < 0 && e-1 > g[0] && c.lx.ident(e-1) && !c.keyword(c.tok(e-1).text) {
			p = cparam{name: c.tok(e - 1).text, tok: e - 1}
		}
		ps = append(ps, p)
	}
	return ps, len(groups), variadic
}

// uncond keeps the candidates whose token (tok) is outside preprocessor
// conditionals, or all of them when none is.
func uncond[T any](c *cfile, xs []T, tok func(T) int) []T {
	var out []T
	for _, x := range xs {
		if !c.cond[tok(x)] {
			out = append(out, x)
		}
	}
	if len(out) == 0 {
		return xs
	}
	return out
}

// bodyOf is the innermost definition whose body holds token i.
func (c *cfile) bodyOf(i int) *cdef {
	var best *cdef
	for _, d := range c.defs {
		if d.body < i && i < d.end && (best == nil || d.body > best.body) {
			best = d
		}
	}
	return best
}

// ccall is a call of a named function.
type ccall struct {
	name             string
	tok, open, close int
	args             [][2]int // token ranges [s, e)
	spread, selfQual bool
}

func (c *cfile) calls() []ccall {
	var out []ccall
	code := c.lx.code
	for i := range code {
		if !c.lx.ident(i) || !c.lx.is(i+1, "(") || c.lx.match[i+1] <= i+1 || c.keyword(code[i].text) || c.declAt[i] {
			continue
		}
		p := i - 1
		call := ccall{name: code[i].text, tok: i, open: i + 1, close: c.lx.match[i+1]}
		if c.java {
			switch {
			case c.lx.is(p, "."):
				if !(c.lx.ident(p-1) && code[p-1].text == "this") {
					continue
				}
				call.selfQual = true
			case c.lx.is(p, "@") || c.lx.is(p, "::"):
				continue
			case c.lx.ident(p) && (code[p].text == "new" || javaPrims[code[p].text] || !javaKeywords[code[p].text]),
				c.lx.is(p, ">"), c.lx.is(p, "]"):
				continue // a declaration or a constructor call
			}
		} else {
			if c.lx.is(p, ".") || c.lx.is(p, "->") || c.brace[i] == 0 {
				continue
			}
			if c.lx.ident(p) && (!cKeywords[code[p].text] || cIntWords[code[p].text] || code[p].text == "void") {
				continue // a declaration
			}
		}
		s := i + 2
		for k := i + 2; k < call.close; k++ {
			if m := c.lx.match[k]; m > k {
				k = m
				continue
			}
			if c.lx.is(k, ",") {
				call.spread = call.spread || k == s // an empty argument: something odd
				call.args = append(call.args, [2]int{s, k})
				s = k + 1
			}
		}
		if s < call.close {
			call.args = append(call.args, [2]int{s, call.close})
		} else if len(call.args) > 0 {
			call.spread = true // a trailing comma
		}
		out = append(out, call)
	}
	return out
}

// taken reports names a misspelling must not produce.
func (c *cfile) taken(s string) bool {
	if c.names[s] || c.keyword(s) {
		return true
	}
	if !c.java {
		for _, ns := range cHeaders {
			for _, n := range ns {
				if n == s {
					return true
				}
			}
		}
	}
	return false
}

func (c *cfile) def(name string) []*cdef {
	var out []*cdef
	for _, d := range c.defs {
		if d.name == name {
			out = append(out, d)
		}
	}
	return out
}

func (c *cfile) isProto(name string) bool {
	for _, d := range c.protos {
		if d.name == name {
			return true
		}
	}
	return false
}

func (c *cfile) what() string {
	if c.java {
		return "method"
	}
	return "function"
}

func cOps(java bool) map[string]opFunc {
	wrap := func(fn func(c *cfile, r *rand.Rand) (*plan, error)) opFunc {
		return func(f *srcFile, r *rand.Rand) (*plan, error) { return fn(newCFile(f, java), r) }
	}
	return map[string]opFunc{
		OpDropImport:      wrap((*cfile).dropImport),
		OpMisspell:        wrap((*cfile).misspell),
		OpRemoveFunction:  wrap((*cfile).removeFunction),
		OpDeleteSemicolon: wrap((*cfile).deleteSemicolon),
		OpDeleteBrace:     wrap((*cfile).deleteBrace),
		OpChangeArity:     wrap((*cfile).changeArity),
		OpTypeMismatch:    wrap((*cfile).typeMismatch),
		OpMergeConflict:   wrap((*cfile).mergeConflict),
	}
}

// nameUses are the code tokens naming s that are not member accesses,
// outside [lo, hi).
func (c *cfile) nameUses(s string, lo, hi int, ok func(i int) bool) []int {
	var out []int
	for i, t := range c.lx.code {
		if t.kind != tIdent || t.text != s || (i >= lo && i < hi) || c.lx.is(i-1, ".") || c.lx.is(i-1, "->") || (ok != nil && !ok(i)) {
			continue
		}
		out = append(out, t.start)
	}
	return out
}

// wholeLines reports whether code tokens [s, e] fill their lines (nothing
// but blanks before s, blanks or a comment after e).
func (c *cfile) wholeLines(s, e int) bool {
	return c.wsBefore(c.tok(s).start) && c.lx.lastOnLine(e)
}

// removal is the edit that removes code tokens [s, e] (whole lines when
// they fill them, with a comment block just above).
func (c *cfile) removal(s, e int) edit {
	if !c.wholeLines(s, e) {
		return edit{start: c.tok(s).start, end: c.tok(e).end}
	}
	start := c.tok(s).start
	for k := len(c.lx.all) - 1; k >= 0; k-- {
		t := c.lx.all[k]
		if t.end > start {
			continue
		}
		if t.kind != tComment || !t.first || c.line(t.end-1) != c.line(start)-1 {
			break
		}
		start = t.start
	}
	return c.deleteLines(start, c.tok(e).end)
}

func (c *cfile) dropImport(r *rand.Rand) (*plan, error) {
	type cand struct {
		tok  int
		name string
		uses []int
	}
	var cands []cand
	code := c.lx.code
	if c.java {
		for i, t := range code {
			if t.kind != tIdent || t.text != "import" || c.brace[i] != 0 || !(i == 0 || c.lx.is(i-1, ";")) {
				continue
			}
			e := i + 1
			for e < len(code) && !c.lx.is(e, ";") {
				e++
			}
			if e >= len(code) || c.lx.is(e-1, "*") || !c.lx.ident(e-1) {
				continue
			}
			uses := c.nameUses(code[e-1].text, 0, 0, func(k int) bool { return !c.inImport(k) })
			if len(uses) > 0 {
				cands = append(cands, cand{tok: i, name: c.text(t.start, code[e].end), uses: uses})
			}
		}
	} else {
		seen := map[string]int{}
		for _, t := range code {
			if dir, rest := ppDirective(t.text); t.kind == tPP && dir == "include" {
				seen[strings.TrimSpace(rest)]++
			}
		}
		for i, t := range code {
			if t.kind != tPP || c.cond[i] {
				continue
			}
			dir, rest := ppDirective(t.text)
			rest = strings.TrimSpace(rest)
			if dir != "include" || len(rest) < 3 || seen[rest] > 1 {
				continue // a header included twice stays included
			}
			var uses []int
			switch rest[0] {
			case '<':
				h, _, _ := strings.Cut(rest[1:], ">")
				syms := map[string]bool{}
				for _, s := range cHeaders[h] {
					syms[s] = !c.declared(s)
				}
				for k, u := range code {
					if u.kind == tIdent && syms[u.text] && !c.cond[k] && !c.lx.is(k-1, ".") && !c.lx.is(k-1, "->") {
						uses = append(uses, u.start)
					}
				}
				if len(uses) == 0 {
					continue
				}
			case '"':
			default:
				continue
			}
			cands = append(cands, cand{tok: i, name: "#include " + rest, uses: uses})
		}
	}
	k := pick(r, len(cands))
	if k < 0 {
		return nil, noSite(OpDropImport, c.srcFile, "no import whose names the file uses")
	}
	cd := cands[k]
	e := cd.tok
	if c.java {
		for !c.lx.is(e, ";") {
			e++
		}
	}
	desc := fmt.Sprintf("removed `%s` (line %d)", cd.name, c.line(c.tok(cd.tok).start))
	if len(cd.uses) > 0 {
		desc += fmt.Sprintf("; the file uses what it declares at line(s) %s", lines(c.srcFile, cd.uses))
	}
	return &plan{edits: []edit{c.removal(cd.tok, e)}, at: c.tok(cd.tok).start, expect: cd.uses, desc: desc}, nil
}

// inImport reports whether code token k is inside a Java import or
// package statement.
func (c *cfile) inImport(k int) bool {
	for j := k; j >= 0 && !c.lx.is(j, ";") && !c.lx.is(j, "{") && !c.lx.is(j, "}"); j-- {
		if c.lx.ident(j) && (c.tok(j).text == "import" || c.tok(j).text == "package") {
			return true
		}
	}
	return false
}

// declared reports whether the file defines or prototypes s.
func (c *cfile) declared(s string) bool {
	return len(c.def(s)) > 0 || c.isProto(s)
}

func ppDirective(text string) (dir, rest string) {
	s := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(text), "#"))
	i := 0
	for i < len(s) && isIdentByte(s[i]) {
		i++
	}
	return s[:i], strings.TrimSpace(s[i:])
}

func firstWord(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

func (c *cfile) misspell(r *rand.Rand) (*plan, error) {
	type site struct {
		tok  int
		kind string
		decl int // offset of the declaration
	}
	var sites []site
	for _, d := range c.defs {
		for _, p := range d.params {
			if p.name == "" || len(p.name) < 2 {
				continue
			}
			for k := d.body + 1; k < d.end; k++ {
				t := c.tok(k)
				if t.kind != tIdent || t.text != p.name || c.lx.is(k-1, ".") || c.lx.is(k-1, "->") ||
					(c.lx.is(k+1, ":") && (c.lx.is(k-1, ";") || c.lx.is(k-1, "{") || c.lx.is(k-1, "}"))) ||
					(c.lx.ident(k-1) && c.tok(k-1).text == "goto") {
					continue
				}
				sites = append(sites, site{tok: k, kind: "parameter", decl: c.tok(p.tok).start})
			}
		}
	}
	if len(sites) == 0 || c.java {
		for _, call := range c.calls() {
			ds := c.def(call.name)
			if len(ds) == 0 || len(call.name) < 3 {
				continue
			}
			kind := c.what()
			if ds[0].ctor {
				continue
			}
			sites = append(sites, site{tok: call.tok, kind: kind, decl: c.tok(ds[0].nameTok).start})
		}
	}
	sites = uncond(c, sites, func(s site) int { return s.tok })
	for len(sites) > 0 {
		k := r.IntN(len(sites))
		s := sites[k]
		name := c.tok(s.tok).text
		bad, ok := misspell(name, c.taken, r)
		if !ok {
			sites = append(sites[:k], sites[k+1:]...)
			continue
		}
		t := c.tok(s.tok)
		return &plan{
			edits:  []edit{{start: t.start, end: t.end, text: bad}},
			at:     t.start,
			expect: []int{t.start},
			desc: fmt.Sprintf("misspelled the %s `%s` as `%s` at line %d (declared at line %d)",
				s.kind, name, bad, t.line, c.line(s.decl)),
		}, nil
	}
	return nil, noSite(OpMisspell, c.srcFile, "no use of a declared parameter or "+c.what())
}

func (c *cfile) removeFunction(r *rand.Rand) (*plan, error) {
	type cand struct {
		d    *cdef
		uses []int
	}
	var best, rest []cand
	calls := c.calls()
	for _, d := range c.defs {
		if d.ctor || d.override || len(c.def(d.name)) != 1 || d.name == "main" {
			continue
		}
		var uses []int
		plain := false // a use outside preprocessor conditionals
		for _, call := range calls {
			if call.name == d.name && (call.tok < d.start || call.tok > d.end) {
				uses = append(uses, c.tok(call.tok).start)
				plain = plain || !c.cond[call.tok]
			}
		}
		if len(uses) == 0 {
			continue
		}
		cd := cand{d, uses}
		if plain && !c.cond[d.start] && (c.java || (d.static && !c.isProto(d.name))) {
			best = append(best, cd)
		} else {
			rest = append(rest, cd)
		}
	}
	if len(best) == 0 {
		best = rest
	}
	k := pick(r, len(best))
	if k < 0 {
		return nil, noSite(OpRemoveFunction, c.srcFile, "no "+c.what()+" defined here and called elsewhere in the file")
	}
	cd := best[k]
	ed := c.removal(cd.d.start, cd.d.end)
	return &plan{
		edits: []edit{ed}, at: ed.start, expect: cd.uses,
		desc: fmt.Sprintf("removed the definition of the %s `%s` (lines %d-%d), still called at line(s) %s",
			c.what(), cd.d.name, c.line(c.tok(cd.d.start).start), c.line(c.tok(cd.d.end).start), lines(c.srcFile, cd.uses)),
	}, nil
}

func (c *cfile) deleteSemicolon(r *rand.Rand) (*plan, error) {
	var cands []int
	for i := range c.lx.code {
		if !c.lx.is(i, ";") || c.lx.is(i-1, ";") || c.lx.is(i-1, "{") || i+1 >= len(c.lx.code) {
			continue
		}
		d := c.bodyOf(i)
		if d == nil || c.paren[i] != c.paren[d.body] || !c.lx.lastOnLine(i) {
			continue
		}
		cands = append(cands, i)
	}
	cands = uncond(c, cands, func(i int) int { return i })
	k := pick(r, len(cands))
	if k < 0 {
		return nil, noSite(OpDeleteSemicolon, c.srcFile, "no statement-ending semicolon in a "+c.what()+" body")
	}
	i := cands[k]
	t := c.tok(i)
	return &plan{
		edits: []edit{{start: t.start, end: t.end}}, at: t.start, expect: []int{t.start, c.tok(i + 1).start},
		desc: fmt.Sprintf("deleted the semicolon ending the statement at line %d", t.line),
	}, nil
}

func (c *cfile) deleteBrace(r *rand.Rand) (*plan, error) {
	var cands []int
	for i := range c.lx.code {
		if !c.lx.is(i, "}") || c.transparent[i] || c.lx.match[i] < 0 || !c.wholeLines(i, i) {
			continue
		}
		if c.bodyOf(i) == nil && c.defEnding(i) == nil {
			continue
		}
		cands = append(cands, i)
	}
	cands = uncond(c, cands, func(i int) int { return i })
	k := pick(r, len(cands))
	if k < 0 {
		return nil, noSite(OpDeleteBrace, c.srcFile, "no closing brace on a line of its own in a "+c.what()+" body")
	}
	i := cands[k]
	t := c.tok(i)
	pl := &plan{edits: []edit{c.deleteLines(t.start, t.end)}, at: t.start, expect: []int{t.start}, expectEnd: true}
	for _, d := range c.defs {
		if d.start > i {
			pl.expect = append(pl.expect, c.tok(d.nameTok).start)
			break
		}
	}
	what := "a block"
	if d := c.defEnding(i); d != nil {
		what = "the " + c.what() + " `" + d.name + "`"
	}
	o := c.lx.match[i]
	pl.desc = fmt.Sprintf("deleted the closing brace of %s (line %d, opened at line %d)", what, t.line, c.tok(o).line)
	return pl, nil
}

func (c *cfile) defEnding(i int) *cdef {
	for _, d := range c.defs {
		if d.end == i {
			return d
		}
	}
	return nil
}

func (c *cfile) changeArity(r *rand.Rand) (*plan, error) {
	arity := map[string]int{}
	for _, d := range append(append([]*cdef(nil), c.defs...), c.protos...) {
		a, seen := arity[d.name]
		switch {
		case d.variadic || d.arity < 0 || d.ctor:
			arity[d.name] = -1
		case !seen:
			arity[d.name] = d.arity
		case c.java || a != d.arity:
			arity[d.name] = -1 // overloaded, or prototypes that disagree
		}
	}
	var cands []ccall
	for _, call := range c.calls() {
		a, ok := arity[call.name]
		if ok && a >= 0 && !call.spread && len(call.args) == a {
			cands = append(cands, call)
		}
	}
	cands = uncond(c, cands, func(cl ccall) int { return cl.tok })
	k := pick(r, len(cands))
	if k < 0 {
		return nil, noSite(OpChangeArity, c.srcFile, "no call of a "+c.what()+" defined here with a fixed parameter count")
	}
	call := cands[k]
	n := len(call.args)
	var e edit
	var how string
	if n == 0 || r.IntN(2) == 1 {
		arg := "0"
		if n > 0 {
			last := call.args[n-1]
			arg = c.text(c.tok(last[0]).start, c.tok(last[1]-1).end)
			e = edit{start: c.tok(last[1] - 1).end, end: c.tok(last[1] - 1).end, text: ", " + arg}
		} else {
			e = edit{start: c.tok(call.open).end, end: c.tok(call.open).end, text: arg}
		}
		how = fmt.Sprintf("added an argument (%s)", arg)
	} else {
		last := call.args[n-1]
		from := c.tok(call.open).end
		if n > 1 {
			from = c.tok(call.args[n-2][1] - 1).end
		}
		e = edit{start: from, end: c.tok(last[1] - 1).end}
		how = fmt.Sprintf("dropped the last argument (%s)", c.text(c.tok(last[0]).start, c.tok(last[1]-1).end))
	}
	t := c.tok(call.tok)
	return &plan{
		edits: []edit{e}, at: t.start, expect: []int{t.start, c.tok(call.close).start},
		desc: fmt.Sprintf("%s in the call of `%s` at line %d, which takes %d", how, call.name, t.line, n),
	}, nil
}

func (c *cfile) typeMismatch(r *rand.Rand) (*plan, error) {
	type cand struct {
		name, typ, repl string
		s, e            int // the initialiser's code tokens [s, e)
	}
	var hard, soft []cand
	code := c.lx.code
	for i := range code {
		if !c.lx.is(i, "=") || c.paren[i] != 0 {
			continue
		}
		k := i - 1
		for k >= 0 && (c.lx.ident(k) || c.lx.is(k, "*")) {
			k--
		}
		if k >= 0 && !(c.lx.is(k, ";") || c.lx.is(k, "{") || c.lx.is(k, "}") || code[k].kind == tPP) {
			continue
		}
		decl := code[k+1 : i]
		words := 0
		for _, t := range decl {
			if t.kind == tIdent {
				words++
			}
		}
		if len(decl) < 2 || words < 2 || decl[len(decl)-1].kind != tIdent || c.keyword(decl[len(decl)-1].text) || cStmtWords[decl[0].text] {
			continue
		}
		if c.java && c.brace[i] == 0 {
			continue
		}
		e := i + 1
		single := true
		for e < len(code) && !c.lx.is(e, ";") {
			if c.lx.is(e, ",") || c.lx.is(e, "{") || code[e].kind == tPP {
				single = false
				break
			}
			if m := c.lx.match[e]; m > e {
				e = m
			}
			e++
		}
		if !single || e >= len(code) || e == i+1 {
			continue
		}
		name := decl[len(decl)-1].text
		var typ []string
		ptr := false
		for _, t := range decl[:len(decl)-1] {
			if t.text == "*" {
				ptr = true
			}
			typ = append(typ, t.text)
		}
		init := c.text(code[i+1].start, code[e-1].end)
		cd := cand{name: name, typ: strings.Join(typ, " "), s: i + 1, e: e}
		if c.java {
			if ptr || len(typ) == 0 {
				continue
			}
			mods := true
			for _, w := range typ[:len(typ)-1] {
				mods = mods && javaModifiers[w]
			}
			last := typ[len(typ)-1]
			switch {
			case !mods:
			case last == "String":
				cd.repl = "42"
				hard = append(hard, cd)
			case javaPrims[last] && last != "void":
				cd.repl = stringLit(init)
				hard = append(hard, cd)
			}
			continue
		}
		cd.typ = strings.ReplaceAll(cd.typ, "* ", "*")
		floating, intlike := false, true
		for _, w := range typ {
			if w == "float" || w == "double" {
				floating = true
			} else if w != "*" && !cIntWords[w] {
				intlike = false
			}
		}
		switch {
		case ptr:
			cd.repl = "1.5"
			hard = append(hard, cd)
		case floating:
			cd.repl = stringLit(init)
			hard = append(hard, cd)
		case intlike:
			cd.repl = stringLit(init)
			soft = append(soft, cd)
		}
	}
	hard, soft = uncond(c, hard, func(cd cand) int { return cd.s }), uncond(c, soft, func(cd cand) int { return cd.s })
	if len(hard) == 0 || (c.cond[hard[0].s] && len(soft) > 0 && !c.cond[soft[0].s]) {
		hard = soft
	}
	k := pick(r, len(hard))
	if k < 0 {
		return nil, noSite(OpTypeMismatch, c.srcFile, "no initialised variable of a known type")
	}
	cd := hard[k]
	s, e := c.tok(cd.s).start, c.tok(cd.e-1).end
	return &plan{
		edits: []edit{{start: s, end: e, text: cd.repl}}, at: s, expect: []int{s},
		desc: fmt.Sprintf("initialised `%s` (%s) with %s instead of %s at line %d", cd.name, cd.typ, cd.repl, c.text(s, e), c.line(s)),
	}, nil
}

func (c *cfile) mergeConflict(r *rand.Rand) (*plan, error) {
	type stmt struct{ s, e int } // code tokens of the statement, e its ';'
	var stmts []stmt
	code := c.lx.code
	for i := range code {
		if !c.lx.is(i, ";") {
			continue
		}
		d := c.bodyOf(i)
		if d == nil || c.paren[i] != c.paren[d.body] || !c.lx.lastOnLine(i) {
			continue
		}
		k := i - 1
		for k > d.body {
			if c.lx.is(k, ";") || c.lx.is(k, "{") || c.lx.is(k, "}") || code[k].kind == tPP {
				break
			}
			if m := c.lx.match[k]; m >= 0 && m < k {
				k = m
			}
			k--
		}
		s := k + 1
		if s >= i || c.brace[s] != c.brace[i] || !c.wsBefore(code[s].start) {
			continue
		}
		stmts = append(stmts, stmt{s, i})
	}
	stmts = uncond(c, stmts, func(st stmt) int { return st.s })
	k := pick(r, len(stmts))
	if k < 0 {
		return nil, noSite(OpMergeConflict, c.srcFile, "no statement on lines of its own in a "+c.what()+" body")
	}
	st := stmts[k]
	start, end := c.lineStart(code[st.s].start), c.lineEnd(code[st.e].start)
	what := "a statement"
	if k+1 < len(stmts) && r.IntN(2) == 1 {
		nx := stmts[k+1]
		if c.line(code[nx.s].start) == c.line(code[st.e].start)+1 && c.brace[nx.s] == c.brace[st.s] {
			end = c.lineEnd(code[nx.e].start)
			what = "two statements"
		}
	}
	return conflict(c.srcFile, start, end, r, what), nil
}
