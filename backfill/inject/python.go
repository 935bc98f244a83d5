package inject

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

var (
	pyKeywords = wordSet(`False None True and as assert async await break class continue def del elif else
		except finally for from global if import in is lambda nonlocal not or pass raise return try while with
		yield match case type`)
	pyBuiltins = wordSet(`abs all any ascii bin bool breakpoint bytearray bytes callable chr classmethod compile
		complex delattr dict dir divmod enumerate eval exec filter float format frozenset getattr globals hasattr
		hash help hex id input int isinstance issubclass iter len list locals map max memoryview min next object
		oct open ord pow print property range repr reversed round set setattr slice sorted staticmethod str sum
		super tuple vars zip __import__ NotImplemented Ellipsis Exception BaseException ValueError TypeError
		KeyError IndexError StopIteration RuntimeError AttributeError NameError OSError ImportError
		NotImplementedError ZeroDivisionError AssertionError LookupError ArithmeticError self cls`)
	pyCompound = wordSet(`if elif else for while with try except finally def class`)
)

// pyline is a logical line: code tokens [s, e), its end token at e.
type pyline struct {
	s, e, indent int
}

type pydef struct {
	line, deco, end int // indexes in lines: the def, its first decorator, its last body line
	name            string
	nameTok         int
	open, close     int
	params          []string // plain parameter names, in order
	simple          bool     // only plain positional parameters
	method          bool
}

type pyfile struct {
	*srcFile
	lx    *lexed
	lines []pyline
	depth []int
	names map[string]bool
	defs  []*pydef
}

func newPyFile(f *srcFile) *pyfile {
	p := &pyfile{srcFile: f, lx: lexPython(f.src), names: map[string]bool{}}
	code := p.lx.code
	p.depth = make([]int, len(code))
	d, s := 0, 0
	for i, t := range code {
		p.depth[i] = d
		switch {
		case t.kind == tNewline:
			if i > s {
				p.lines = append(p.lines, pyline{s: s, e: i, indent: code[s].indent})
			}
			s = i + 1
		case t.kind == tIdent:
			p.names[t.text] = true
		case t.kind == tPunct && (t.text == "(" || t.text == "[" || t.text == "{"):
			d++
		case t.kind == tPunct && (t.text == ")" || t.text == "]" || t.text == "}"):
			d = max(d-1, 0)
			p.depth[i] = d
		}
	}
	for li, l := range p.lines {
		k := l.s
		if code[k].text == "async" {
			k++
		}
		if k+2 >= l.e || code[k].text != "def" || !p.lx.ident(k+1) || !p.lx.is(k+2, "(") || p.lx.match[k+2] < 0 {
			continue
		}
		df := &pydef{line: li, deco: li, end: li, name: code[k+1].text, nameTok: k + 1, open: k + 2, close: p.lx.match[k+2], simple: true}
		if p.lx.is(l.e-1, ":") {
			for j := li + 1; j < len(p.lines) && p.lines[j].indent > l.indent; j++ {
				df.end = j
			}
		}
		for j := li - 1; j >= 0 && p.lines[j].indent == l.indent && p.lx.is(p.lines[j].s, "@"); j-- {
			df.deco = j
		}
		for j := li - 1; j >= 0; j-- {
			if p.lines[j].indent < l.indent {
				df.method = code[p.lines[j].s].text == "class"
				break
			}
		}
		for _, g := range p.groups(df.open, df.close) {
			t := code[g[0]]
			if t.kind != tIdent {
				df.simple = false // *args, **kw, the / and * markers
				continue
			}
			df.params = append(df.params, t.text)
			for k := g[0]; k < g[1]; k++ {
				if p.lx.is(k, "=") {
					df.simple = false
				}
			}
		}
		p.defs = append(p.defs, df)
	}
	return p
}

// groups splits the tokens between brackets open and close at their
// top-level commas (an empty last group, a trailing comma, is left out).
func (p *pyfile) groups(open, close int) [][2]int {
	var out [][2]int
	s := open + 1
	for k := open + 1; k < close; k++ {
		if m := p.lx.match[k]; m > k {
			k = m
			continue
		}
		if p.lx.is(k, ",") {
			out = append(out, [2]int{s, k})
			s = k + 1
		}
	}
	if s < close {
		out = append(out, [2]int{s, close})
	}
	return out
}

func (p *pyfile) tok(i int) ltok { return p.lx.code[i] }

func (p *pyfile) taken(s string) bool { return p.names[s] || pyKeywords[s] || pyBuiltins[s] }

// lineOf is the logical line holding code token i (-1 for none).
func (p *pyfile) lineOf(i int) int {
	for li, l := range p.lines {
		if i >= l.s && i <= l.e {
			return li
		}
	}
	return -1
}

// span is the byte range of logical lines [a, b] as whole physical lines.
func (p *pyfile) span(a, b int) (int, int) {
	s := p.lineStart(p.tok(p.lines[a].s).start)
	end := p.tok(p.lines[b].e)
	if end.start >= len(p.srcFile.src) {
		return s, len(p.srcFile.src)
	}
	return s, p.lineEnd(end.start)
}

// alone reports whether logical line li is the only statement on its
// physical lines.
func (p *pyfile) alone(li int) bool {
	l := p.lines[li]
	if !p.wsBefore(p.tok(l.s).start) {
		return false
	}
	for k := l.s; k < l.e; k++ {
		if p.lx.is(k, ";") {
			return false
		}
	}
	return true
}

func (p *pyfile) kwarg(i int) bool {
	return p.depth[i] > 0 && p.lx.is(i+1, "=") && (p.lx.is(i-1, "(") || p.lx.is(i-1, ","))
}

// loads are the tokens naming s that read it: not attributes, keyword
// arguments, assignment targets, parameters or definitions.
func (p *pyfile) loads(s string, lo, hi int, skipLines map[int]bool) []int {
	var out []int
	params := map[int]bool{}
	for _, d := range p.defs {
		params[d.nameTok] = true
		for _, g := range p.groups(d.open, d.close) {
			params[g[0]] = true
		}
	}
	for li, l := range p.lines {
		if skipLines[li] {
			continue
		}
		first := p.tok(l.s).text
		if first == "import" || first == "from" || first == "global" || first == "nonlocal" {
			continue
		}
		for i := l.s; i < l.e; i++ {
			t := p.tok(i)
			if t.kind != tIdent || t.text != s || (i >= lo && i < hi) || params[i] || p.lx.is(i-1, ".") || p.kwarg(i) ||
				(i == l.s && (p.lx.is(i+1, "=") || p.lx.is(i+1, ":"))) || (p.lx.ident(i-1) && p.tok(i-1).text == "class") {
				continue
			}
			out = append(out, t.start)
		}
	}
	return out
}

func pyOps() map[string]opFunc {
	wrap := func(fn func(p *pyfile, r *rand.Rand) (*plan, error)) opFunc {
		return func(f *srcFile, r *rand.Rand) (*plan, error) { return fn(newPyFile(f), r) }
	}
	return map[string]opFunc{
		OpDropImport:     wrap((*pyfile).dropImport),
		OpMisspell:       wrap((*pyfile).misspell),
		OpRemoveFunction: wrap((*pyfile).removeFunction),
		OpDeleteColon:    wrap((*pyfile).deleteColon),
		OpDeleteBracket:  wrap((*pyfile).deleteBracket),
		OpChangeArity:    wrap((*pyfile).changeArity),
		OpMergeConflict:  wrap((*pyfile).mergeConflict),
	}
}

func (p *pyfile) dropImport(r *rand.Rand) (*plan, error) {
	type cand struct {
		li   int
		uses []int
	}
	imports := map[int]bool{}
	for li, l := range p.lines {
		if f := p.tok(l.s).text; l.indent == 0 && (f == "import" || f == "from") {
			imports[li] = true
		}
	}
	var cands []cand
	for li := range p.lines {
		if !imports[li] || !p.alone(li) {
			continue
		}
		l := p.lines[li]
		var bound []string
		k := l.s + 1
		if p.tok(l.s).text == "from" {
			for k < l.e && p.tok(k).text != "import" {
				k++
			}
			if p.tok(l.s+1).text == "__future__" {
				continue
			}
			k++
		}
		star := false
		for k < l.e {
			e := k
			for e < l.e && !p.lx.is(e, ",") {
				e++
			}
			var ids []string
			for j := k; j < e; j++ {
				switch {
				case p.lx.is(j, "*"):
					star = true
				case p.lx.ident(j):
					ids = append(ids, p.tok(j).text)
				}
			}
			switch {
			case len(ids) >= 3 && ids[len(ids)-2] == "as":
				bound = append(bound, ids[len(ids)-1])
			case len(ids) > 0:
				bound = append(bound, ids[0])
			}
			k = e + 1
		}
		if star {
			continue
		}
		var uses []int
		for _, b := range bound {
			uses = append(uses, p.loads(b, 0, 0, imports)...)
		}
		if len(uses) > 0 {
			cands = append(cands, cand{li, uses})
		}
	}
	k := pick(r, len(cands))
	if k < 0 {
		return nil, noSite(OpDropImport, p.srcFile, "no module-level import whose names the file uses")
	}
	cd := cands[k]
	s, e := p.span(cd.li, cd.li)
	stmt := strings.TrimSpace(p.text(s, e))
	return &plan{
		edits: []edit{p.deleteLines(s, e)}, at: s, expect: cd.uses,
		desc: fmt.Sprintf("removed `%s` (line %d); the file uses what it imports at line(s) %s", stmt, p.line(s), lines(p.srcFile, cd.uses)),
	}, nil
}

func (p *pyfile) misspell(r *rand.Rand) (*plan, error) {
	type site struct {
		off        int
		name, kind string
		decl       int
	}
	var sites []site
	for li, l := range p.lines {
		if l.indent != 0 {
			continue
		}
		k := l.s
		if p.tok(k).text == "async" {
			k++
		}
		var name, kind string
		switch {
		case (p.tok(k).text == "def" || p.tok(k).text == "class") && p.lx.ident(k+1):
			name, kind = p.tok(k+1).text, map[string]string{"def": "function", "class": "class"}[p.tok(k).text]
		case p.lx.ident(k) && p.lx.is(k+1, "=") && !pyKeywords[p.tok(k).text]:
			name, kind = p.tok(k).text, "module-level name"
		default:
			continue
		}
		_ = li
		if len(name) < 3 {
			continue
		}
		for _, o := range p.loads(name, 0, 0, nil) {
			sites = append(sites, site{o, name, kind, p.tok(k).start})
		}
	}
	for _, d := range p.defs {
		lo := p.lines[d.line].e
		if d.end == d.line {
			lo = d.close
		}
		hi := p.lines[d.end].e
		for _, pn := range d.params {
			if pn == "self" || pn == "cls" || len(pn) < 2 {
				continue
			}
			for i := lo; i < hi; i++ {
				t := p.tok(i)
				if t.kind == tIdent && t.text == pn && !p.lx.is(i-1, ".") && !p.kwarg(i) {
					sites = append(sites, site{t.start, pn, "parameter", p.tok(d.nameTok).start})
				}
			}
		}
	}
	for len(sites) > 0 {
		k := r.IntN(len(sites))
		s := sites[k]
		bad, ok := misspell(s.name, p.taken, r)
		if !ok {
			sites = append(sites[:k], sites[k+1:]...)
			continue
		}
		return &plan{
			edits: []edit{{start: s.off, end: s.off + len(s.name), text: bad}}, at: s.off, expect: []int{s.off},
			desc: fmt.Sprintf("misspelled the %s `%s` as `%s` at line %d (declared at line %d)", s.kind, s.name, bad, p.line(s.off), p.line(s.decl)),
		}, nil
	}
	return nil, noSite(OpMisspell, p.srcFile, "no use of a module-level name or parameter")
}

func (p *pyfile) removeFunction(r *rand.Rand) (*plan, error) {
	type cand struct {
		d    *pydef
		uses []int
	}
	var cands []cand
	for _, d := range p.defs {
		l := p.lines[d.line]
		if strings.HasPrefix(d.name, "__") || !p.hasSibling(d) {
			continue
		}
		lo, hi := p.lines[d.deco].s, p.lines[d.end].e
		var uses []int
		for i, t := range p.lx.code {
			if t.kind != tIdent || t.text != d.name || (i >= lo && i <= hi) {
				continue
			}
			if d.method {
				if p.lx.is(i-1, ".") && p.lx.ident(i-2) && (p.tok(i-2).text == "self" || p.tok(i-2).text == "cls") {
					uses = append(uses, t.start)
				}
			} else if l.indent == 0 && !p.lx.is(i-1, ".") && !p.kwarg(i) && !(p.lx.ident(i-1) && p.tok(i-1).text == "import") {
				if li := p.lineOf(i); li >= 0 && p.tok(p.lines[li].s).text != "from" && p.tok(p.lines[li].s).text != "import" {
					uses = append(uses, t.start)
				}
			}
		}
		if len(uses) > 0 {
			cands = append(cands, cand{d, uses})
		}
	}
	k := pick(r, len(cands))
	if k < 0 {
		return nil, noSite(OpRemoveFunction, p.srcFile, "no function defined here and called elsewhere in the file")
	}
	cd := cands[k]
	s, e := p.span(cd.d.deco, cd.d.end)
	what := "function"
	if cd.d.method {
		what = "method"
	}
	return &plan{
		edits: []edit{p.deleteLines(s, e)}, at: s, expect: cd.uses,
		desc: fmt.Sprintf("removed the %s `%s` (lines %d-%d), still called at line(s) %s",
			what, cd.d.name, p.line(s), p.line(max(e-1, s)), lines(p.srcFile, cd.uses)),
	}, nil
}

// hasSibling reports whether a def is not alone in its block (removing it
// would leave the block empty).
func (p *pyfile) hasSibling(d *pydef) bool {
	ind := p.lines[d.line].indent
	if ind == 0 {
		return true
	}
	for j := d.deco - 1; j >= 0 && p.lines[j].indent >= ind; j-- {
		if p.lines[j].indent == ind {
			return true
		}
	}
	return d.end+1 < len(p.lines) && p.lines[d.end+1].indent == ind
}

func (p *pyfile) deleteColon(r *rand.Rand) (*plan, error) {
	var cands []int
	for _, l := range p.lines {
		k := l.s
		if p.tok(k).text == "async" {
			k++
		}
		if k >= l.e || p.tok(k).kind != tIdent || !pyCompound[p.tok(k).text] {
			continue
		}
		lambdas := 0
		for j := k + 1; j < l.e; j++ {
			if m := p.lx.match[j]; m > j {
				j = m
				continue
			}
			if p.lx.ident(j) && p.tok(j).text == "lambda" {
				lambdas++
			}
			if p.lx.is(j, ":") {
				if lambdas > 0 {
					lambdas--
					continue
				}
				cands = append(cands, j)
				break
			}
		}
	}
	k := pick(r, len(cands))
	if k < 0 {
		return nil, noSite(OpDeleteColon, p.srcFile, "no compound statement")
	}
	t := p.tok(cands[k])
	kw := p.tok(p.lines[p.lineOf(cands[k])].s).text
	return &plan{
		edits: []edit{{start: t.start, end: t.end}}, at: t.start, expect: []int{t.start},
		desc: fmt.Sprintf("deleted the colon ending the `%s` statement at line %d", kw, t.line),
	}, nil
}

func (p *pyfile) deleteBracket(r *rand.Rand) (*plan, error) {
	var cands []int
	for _, l := range p.lines {
		for j := l.s; j < l.e; j++ {
			t := p.tok(j)
			if t.kind == tPunct && (t.text == ")" || t.text == "]" || t.text == "}") && p.lx.match[j] >= l.s && p.depth[j] == 0 {
				cands = append(cands, j)
			}
		}
	}
	k := pick(r, len(cands))
	if k < 0 {
		return nil, noSite(OpDeleteBracket, p.srcFile, "no closing bracket")
	}
	j := cands[k]
	t, o := p.tok(j), p.tok(p.lx.match[j])
	pl := &plan{
		edits: []edit{{start: t.start, end: t.end}}, at: t.start, expect: []int{o.start, t.start},
		desc: fmt.Sprintf("deleted the `%s` at line %d that closes the `%s` opened at line %d", t.text, t.line, o.text, o.line),
	}
	if li := p.lineOf(j); li+1 < len(p.lines) {
		pl.expect = append(pl.expect, p.tok(p.lines[li+1].s).start)
	}
	return pl, nil
}

func (p *pyfile) changeArity(r *rand.Rand) (*plan, error) {
	arity := map[string]int{}
	for _, d := range p.defs {
		if _, dup := arity[d.name]; dup || d.method || p.lines[d.line].indent != 0 || !d.simple {
			arity[d.name] = -1
			continue
		}
		arity[d.name] = len(d.params)
	}
	type call struct {
		tok, open, close int
		args             [][2]int
	}
	var cands []call
	for i, t := range p.lx.code {
		a, ok := arity[t.text]
		if t.kind != tIdent || !ok || a < 0 || !p.lx.is(i+1, "(") || p.lx.is(i-1, ".") || (p.lx.ident(i-1) && p.tok(i-1).text == "def") {
			continue
		}
		c := call{tok: i, open: i + 1, close: p.lx.match[i+1]}
		if c.close < 0 {
			continue
		}
		c.args = p.groups(c.open, c.close)
		plain := len(c.args) == a
		for _, g := range c.args {
			if p.lx.is(g[0], "*") || p.lx.is(g[0], "**") || p.lx.is(g[0]+1, "=") {
				plain = false
			}
		}
		if plain {
			cands = append(cands, c)
		}
	}
	k := pick(r, len(cands))
	if k < 0 {
		return nil, noSite(OpChangeArity, p.srcFile, "no positional call of a module-level function with plain parameters")
	}
	c := cands[k]
	n := len(c.args)
	var e edit
	var how string
	if n == 0 || r.IntN(2) == 1 {
		if n == 0 {
			o := p.tok(c.open).end
			e, how = edit{start: o, end: o, text: "None"}, "added an argument (None)"
		} else {
			last := c.args[n-1]
			arg := p.text(p.tok(last[0]).start, p.tok(last[1]-1).end)
			o := p.tok(last[1] - 1).end
			e, how = edit{start: o, end: o, text: ", " + arg}, "added an argument ("+arg+")"
		}
	} else {
		last := c.args[n-1]
		from := p.tok(c.open).end
		if n > 1 {
			from = p.tok(c.args[n-2][1] - 1).end
		}
		e = edit{start: from, end: p.tok(last[1] - 1).end}
		how = "dropped the last argument (" + p.text(p.tok(last[0]).start, p.tok(last[1]-1).end) + ")"
	}
	t := p.tok(c.tok)
	return &plan{
		edits: []edit{e}, at: t.start, expect: []int{t.start},
		desc: fmt.Sprintf("%s in the call of `%s` at line %d, which takes %d", how, t.text, t.line, n),
	}, nil
}

func (p *pyfile) mergeConflict(r *rand.Rand) (*plan, error) {
	simple := func(li int) bool {
		l := p.lines[li]
		f := p.tok(l.s)
		return p.alone(li) && !(f.kind == tIdent && (pyCompound[f.text] || f.text == "async")) && !p.lx.is(l.s, "@") && !p.lx.is(l.e-1, ":")
	}
	var cands []int
	for li := range p.lines {
		if simple(li) {
			cands = append(cands, li)
		}
	}
	k := pick(r, len(cands))
	if k < 0 {
		return nil, noSite(OpMergeConflict, p.srcFile, "no simple statement on lines of its own")
	}
	li := cands[k]
	b, what := li, "a statement"
	if li+1 < len(p.lines) && simple(li+1) && p.lines[li+1].indent == p.lines[li].indent && r.IntN(2) == 1 &&
		p.tok(p.lines[li+1].s).line == p.tok(p.lines[li].e).line+1 {
		b, what = li+1, "two statements"
	}
	s, e := p.span(li, b)
	return conflict(p.srcFile, s, e, r, what), nil
}
