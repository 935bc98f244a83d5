package inject

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/murphy-rl/murphy/compilefix/lang"
)

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
		if f := p.tok(l.s).Text; l.indent == 0 && (f == "import" || f == "from") {
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
		if p.tok(l.s).Text == "from" {
			for k < l.e && p.tok(k).Text != "import" {
				k++
			}
			if p.tok(l.s+1).Text == "__future__" {
				continue
			}
			k++
		}
		star := false
		for k < l.e {
			e := k
			for e < l.e && !p.is(e, ",") {
				e++
			}
			var ids []string
			for j := k; j < e; j++ {
				switch {
				case p.is(j, "*"):
					star = true
				case p.word(j):
					ids = append(ids, p.tok(j).Text)
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
		if p.tok(k).Text == "async" {
			k++
		}
		var name, kind string
		switch {
		case (p.tok(k).Text == "def" || p.tok(k).Text == "class") && p.word(k+1):
			name, kind = p.tok(k+1).Text, map[string]string{"def": "function", "class": "class"}[p.tok(k).Text]
		case p.word(k) && p.is(k+1, "=") && !lang.IsKeyword(lang.Python, p.tok(k).Text):
			name, kind = p.tok(k).Text, "module-level name"
		default:
			continue
		}
		_ = li
		if len(name) < 3 {
			continue
		}
		for _, o := range p.loads(name, 0, 0, nil) {
			sites = append(sites, site{o, name, kind, p.tok(k).Start})
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
				if t.Kind == lang.Ident && t.Text == pn && !p.is(i-1, ".") && !p.kwarg(i) {
					sites = append(sites, site{t.Start, pn, "parameter", p.tok(d.nameTok).Start})
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
		for i, t := range p.code {
			if t.Kind != lang.Ident || t.Text != d.name || (i >= lo && i <= hi) {
				continue
			}
			if d.method {
				if p.is(i-1, ".") && p.word(i-2) && (p.tok(i-2).Text == "self" || p.tok(i-2).Text == "cls") {
					uses = append(uses, t.Start)
				}
			} else if l.indent == 0 && !p.is(i-1, ".") && !p.kwarg(i) && !(p.word(i-1) && p.tok(i-1).Text == "import") {
				if li := p.lineOf(i); li >= 0 && p.tok(p.lines[li].s).Text != "from" && p.tok(p.lines[li].s).Text != "import" {
					uses = append(uses, t.Start)
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
		if p.tok(k).Text == "async" {
			k++
		}
		if k >= l.e || !p.word(k) || !pyCompound[p.tok(k).Text] {
			continue
		}
		lambdas := 0
		for j := k + 1; j < l.e; j++ {
			if m := p.match(j); m > j {
				j = m
				continue
			}
			if p.word(j) && p.tok(j).Text == "lambda" {
				lambdas++
			}
			if p.is(j, ":") {
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
	kw := p.tok(p.lines[p.lineOf(cands[k])].s).Text
	return &plan{
		edits: []edit{{start: t.Start, end: t.End}}, at: t.Start, expect: []int{t.Start},
		desc: fmt.Sprintf("deleted the colon ending the `%s` statement at line %d", kw, t.Line),
	}, nil
}

func (p *pyfile) deleteBracket(r *rand.Rand) (*plan, error) {
	var cands []int
	for _, l := range p.lines {
		for j := l.s; j < l.e; j++ {
			t := p.tok(j)
			if t.Kind == lang.Punct && (t.Text == ")" || t.Text == "]" || t.Text == "}") && p.match(j) >= l.s && p.lf.Depth(j) == 0 {
				cands = append(cands, j)
			}
		}
	}
	k := pick(r, len(cands))
	if k < 0 {
		return nil, noSite(OpDeleteBracket, p.srcFile, "no closing bracket")
	}
	j := cands[k]
	t, o := p.tok(j), p.tok(p.match(j))
	pl := &plan{
		edits: []edit{{start: t.Start, end: t.End}}, at: t.Start, expect: []int{o.Start, t.Start},
		desc: fmt.Sprintf("deleted the `%s` at line %d that closes the `%s` opened at line %d", t.Text, t.Line, o.Text, o.Line),
	}
	if li := p.lineOf(j); li+1 < len(p.lines) {
		pl.expect = append(pl.expect, p.tok(p.lines[li+1].s).Start)
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
	for i, t := range p.code {
		a, ok := arity[t.Text]
		if t.Kind != lang.Ident || !ok || a < 0 || !p.is(i+1, "(") || p.is(i-1, ".") || (p.word(i-1) && p.tok(i-1).Text == "def") {
			continue
		}
		c := call{tok: i, open: i + 1, close: p.match(i + 1)}
		if c.close < 0 {
			continue
		}
		c.args = p.groups(c.open, c.close)
		plain := len(c.args) == a
		for _, g := range c.args {
			if p.is(g[0], "*") || p.is(g[0], "**") || p.is(g[0]+1, "=") {
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
	args := make([]lang.Span, n)
	for i, g := range c.args {
		args[i] = lang.Span{Start: p.tok(g[0]).Start, End: p.tok(g[1] - 1).End}
	}
	e, how := arityEdit(p.srcFile, p.tok(c.open).End, args, "None", n == 0 || r.IntN(2) == 1)
	t := p.tok(c.tok)
	return &plan{
		edits: []edit{e}, at: t.Start, expect: []int{t.Start},
		desc: fmt.Sprintf("%s in the call of `%s` at line %d, which takes %d", how, t.Text, t.Line, n),
	}, nil
}

func (p *pyfile) mergeConflict(r *rand.Rand) (*plan, error) {
	simple := func(li int) bool {
		l := p.lines[li]
		f := p.tok(l.s)
		return p.alone(li) && !(p.word(l.s) && (pyCompound[f.Text] || f.Text == "async")) && !p.is(l.s, "@") && !p.is(l.e-1, ":")
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
		p.tok(p.lines[li+1].s).Line == p.tok(p.lines[li].e).Line+1 {
		b, what = li+1, "two statements"
	}
	s, e := p.span(li, b)
	return conflict(p.srcFile, p.code, s, e, r, what), nil
}
