package inject

import (
	"math/rand/v2"

	"github.com/murphy-rl/murphy/compilefix/lang"
)

// cfile is a C or Java file as the operators see it: compilefix/lang's
// tokens, definitions and calls, indexed by code token.
type cfile struct {
	*srcFile
	lf   *lang.File
	java bool
	code []lang.Token
	// brace and paren are the brace depth and the parenthesis and bracket
	// depth at each code token (a closer has its opener's).
	brace, paren []int
	// directive marks the code tokens of preprocessor lines.
	directive []bool
	names     map[string]bool // the identifiers the file spells
	defs      []*cdef         // function and method definitions, in order
	protos    []*cdef         // C prototypes outside function bodies
	declAt    map[int]bool
}

type cparam struct {
	name string
	tok  int
}

// cdef is a definition (body >= 0) or a prototype; its fields are code
// token indexes.
type cdef struct {
	name                            string
	nameTok, open, close, body, end int
	start                           int // the definition's first token
	params                          []cparam
	arity                           int // -1: unknown (C "()")
	variadic, static, override      bool
	ctor                            bool
}

func newCFile(f *srcFile, java bool) *cfile {
	l := lang.C
	if java {
		l = lang.Java
	}
	lf, err := lang.Parse(l, f.src)
	if err != nil {
		panic(err) // C and Java are always supported
	}
	c := &cfile{srcFile: f, lf: lf, java: java, code: lf.Code, names: lf.Names(), declAt: map[int]bool{}}
	c.depths()
	for _, fn := range lf.Functions() {
		d := c.def(&fn)
		if d == nil {
			continue
		}
		c.declAt[d.nameTok] = true
		if d.body >= 0 {
			c.defs = append(c.defs, d)
		} else if !java {
			c.protos = append(c.protos, d)
		}
	}
	return c
}

// depths fills brace, paren and directive.
func (c *cfile) depths() {
	c.brace, c.paren, c.directive = make([]int, len(c.code)), make([]int, len(c.code)), make([]bool, len(c.code))
	bd, pd := 0, 0
	line, dir := 0, false
	for i, t := range c.code {
		c.brace[i], c.paren[i] = bd, pd
		if t.Line != line {
			line, dir = t.Line, t.Kind == lang.Directive
		}
		c.directive[i] = dir
		if t.Kind != lang.Punct {
			continue
		}
		switch t.Text {
		case "{":
			bd++
		case "}":
			bd = max(bd-1, 0)
			c.brace[i] = bd
		case "(", "[":
			pd++
		case ")", "]":
			pd = max(pd-1, 0)
			c.paren[i] = pd
		}
	}
}

// def is a function of lang as the operators index it, nil when its
// tokens cannot be found (a parse that recovered from an error).
func (c *cfile) def(fn *lang.Function) *cdef {
	d := &cdef{name: fn.Name, nameTok: c.lf.CodeAt(fn.NameAt.Start), open: c.lf.CodeAt(fn.Params.Start), body: -1,
		static: fn.Static, override: fn.Override, ctor: fn.Constructor, variadic: fn.Variadic, arity: fn.Arity()}
	d.start, _ = c.lf.CodeIn(fn.Span)
	if d.nameTok < 0 || d.open < 0 || c.lf.Match(d.open) < 0 {
		return nil
	}
	d.close = c.lf.Match(d.open)
	if fn.Defined() {
		d.body = c.lf.CodeAt(fn.Body.Start)
		if d.body < 0 || c.lf.Match(d.body) < 0 {
			return nil
		}
		d.end = c.lf.Match(d.body)
	} else {
		_, hi := c.lf.CodeIn(fn.Span)
		d.end = hi - 1
	}
	for _, p := range fn.Parameters {
		cp := cparam{name: p.Name, tok: -1}
		if p.Name != "" {
			cp.tok = c.lf.CodeAt(p.NameAt.Start)
		}
		d.params = append(d.params, cp)
	}
	return d
}

func (c *cfile) tok(i int) lang.Token { return c.code[i] }

// is reports whether code token i is the punctuator p.
func (c *cfile) is(i int, p string) bool {
	return i >= 0 && i < len(c.code) && c.code[i].Kind == lang.Punct && c.code[i].Text == p
}

// word reports whether code token i is an identifier or a keyword.
func (c *cfile) word(i int) bool {
	return i >= 0 && i < len(c.code) && (c.code[i].Kind == lang.Ident || c.code[i].Kind == lang.Keyword)
}

// wordIs reports whether code token i is the identifier or keyword s.
func (c *cfile) wordIs(i int, s string) bool {
	return c.word(i) && c.code[i].Text == s
}

func (c *cfile) keyword(s string) bool {
	if c.java {
		return lang.IsKeyword(lang.Java, s)
	}
	return lang.IsKeyword(lang.C, s)
}

// cond reports whether code token i lies in a preprocessor conditional.
func (c *cfile) cond(i int) bool { return c.lf.InConditional(c.code[i].Start) }

// uncond keeps the candidates whose token (tok) is outside preprocessor
// conditionals, or all of them when none is.
func uncond[T any](c *cfile, xs []T, tok func(T) int) []T {
	var out []T
	for _, x := range xs {
		if !c.cond(tok(x)) {
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

// ccall is a call of a named function; its fields are code token indexes
// (args are [s, e) ranges).
type ccall struct {
	name             string
	tok, open, close int
	args             [][2]int
	selfQual         bool
}

// calls are the calls of functions (C) and of the class's own methods
// (Java: unqualified or this.f()) inside function bodies.
func (c *cfile) calls() []ccall {
	var out []ccall
	for _, call := range c.lf.Calls() {
		cl := ccall{name: call.Name, tok: c.lf.CodeAt(call.NameAt.Start), open: c.lf.CodeAt(call.Args.Start)}
		if cl.tok < 0 || cl.open < 0 || c.lf.Match(cl.open) < 0 || c.bodyOf(cl.tok) == nil {
			continue
		}
		cl.close = c.lf.Match(cl.open)
		if recv := c.lf.Text(call.Receiver); recv != "" {
			if !c.java || recv != "this" {
				continue // a member's method (Java), a struct member (C)
			}
			cl.selfQual = true
		}
		for _, a := range call.Arguments {
			lo, hi := c.lf.CodeIn(a)
			if lo < hi {
				cl.args = append(cl.args, [2]int{lo, hi})
			}
		}
		out = append(out, cl)
	}
	return out
}

// taken reports names a misspelling must not produce: the file's names,
// keywords, and (C) what the standard headers declare.
func (c *cfile) taken(s string) bool {
	if c.names[s] || c.keyword(s) {
		return true
	}
	return !c.java && stdHeaderName(s)
}

func (c *cfile) defsNamed(name string) []*cdef {
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

// declared reports whether the file defines or prototypes s.
func (c *cfile) declared(s string) bool { return len(c.defsNamed(s)) > 0 || c.isProto(s) }

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

// nameUses are the offsets of the identifiers s that are not member
// accesses and that ok accepts (nil: all).
func (c *cfile) nameUses(s string, ok func(i int) bool) []int {
	var out []int
	for i, t := range c.code {
		if t.Kind != lang.Ident || t.Text != s || c.is(i-1, ".") || c.is(i-1, "->") || (ok != nil && !ok(i)) {
			continue
		}
		out = append(out, t.Start)
	}
	return out
}

// lastOnLine reports whether code token i is the last on its line
// (comments may follow).
func (c *cfile) lastOnLine(i int) bool {
	return i+1 >= len(c.code) || c.line(c.code[i+1].Start) > c.line(max(c.code[i].End-1, c.code[i].Start))
}

// wholeLines reports whether code tokens [s, e] fill their lines (nothing
// but blanks before s, blanks or a comment after e).
func (c *cfile) wholeLines(s, e int) bool {
	return c.wsBefore(c.tok(s).Start) && c.lastOnLine(e)
}

// removal is the edit that removes code tokens [s, e] (whole lines when
// they fill them, with a comment block just above).
func (c *cfile) removal(s, e int) edit {
	if !c.wholeLines(s, e) {
		return edit{start: c.tok(s).Start, end: c.tok(e).End}
	}
	start := c.tok(s).Start
	all := c.lf.Tokens
	for k := len(all) - 1; k >= 0; k-- {
		t := all[k]
		if t.End > start {
			continue
		}
		if t.Kind != lang.Comment || !c.wsBefore(t.Start) || c.line(t.End-1) != c.line(start)-1 {
			break
		}
		start = t.Start
	}
	return c.deleteLines(start, c.tok(e).End)
}
