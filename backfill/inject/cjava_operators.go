package inject

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/murphy-rl/murphy/compilefix/lang"
)

// importSite is an import (Java) or #include (C) the file relies on: code
// tokens [s, e], what it reads, where the file uses what it declares.
type importSite struct {
	s, e int
	name string
	uses []int
}

func (c *cfile) dropImport(r *rand.Rand) (*plan, error) {
	var cands []importSite
	if c.java {
		cands = c.javaImports()
	} else {
		cands = c.includes()
	}
	k := pick(r, len(cands))
	if k < 0 {
		return nil, noSite(OpDropImport, c.srcFile, "no import whose names the file uses")
	}
	cd := cands[k]
	desc := fmt.Sprintf("removed `%s` (line %d)", cd.name, c.line(c.tok(cd.s).Start))
	if len(cd.uses) > 0 {
		desc += fmt.Sprintf("; the file uses what it declares at line(s) %s", lines(c.srcFile, cd.uses))
	}
	return &plan{edits: []edit{c.removal(cd.s, cd.e)}, at: c.tok(cd.s).Start, expect: cd.uses, desc: desc}, nil
}

// javaImports are the single-type imports whose simple name the file uses
// outside imports.
func (c *cfile) javaImports() []importSite {
	var decls []*lang.Node
	for _, n := range c.lf.Root.Children {
		if n.Kind == "import_declaration" || n.Kind == "package_declaration" {
			decls = append(decls, n)
		}
	}
	inDecl := func(k int) bool {
		for _, n := range decls {
			if n.Span().Contains(c.tok(k).Start) {
				return true
			}
		}
		return false
	}
	var out []importSite
	for _, n := range decls {
		named := n.NamedChildren()
		if n.Kind != "import_declaration" || n.ChildOfKind("asterisk") != nil || len(named) == 0 {
			continue
		}
		id := named[0]
		if id.Kind == "scoped_identifier" {
			id = id.Child("name")
		}
		s, e := c.lf.CodeAt(n.Start), c.lf.CodeAt(n.End-1)
		if id == nil || id.Kind != "identifier" || s < 0 || e < 0 {
			continue
		}
		if uses := c.nameUses(id.Text(c.src), func(k int) bool { return !inDecl(k) }); len(uses) > 0 {
			out = append(out, importSite{s: s, e: e, name: c.lf.Text(n.Span()), uses: uses})
		}
	}
	return out
}

// includes are the #include lines outside conditionals whose header is
// included once: a project header ("x.h"), or a standard one (<x.h>) that
// declares a name the file uses and does not declare itself.
func (c *cfile) includes() []importSite {
	var incs []*lang.Node
	seen := map[string]int{}
	c.lf.Root.Walk(func(n *lang.Node) bool {
		if n.Kind == "preproc_include" && n.Child("path") != nil {
			incs = append(incs, n)
			seen[n.Child("path").Text(c.src)]++
		}
		return true
	})
	var out []importSite
	for _, n := range incs {
		path := n.Child("path")
		rest := path.Text(c.src)
		s, e := c.lf.CodeAt(n.Start), c.lf.CodeAt(path.Start)
		if s < 0 || e < 0 || c.cond(s) || len(rest) < 3 || seen[rest] > 1 {
			continue // a header included twice stays included
		}
		var uses []int
		switch rest[0] {
		case '<':
			h := strings.TrimSuffix(rest[1:], ">")
			syms := map[string]bool{}
			for _, sym := range cHeaders[h] {
				syms[sym] = !c.declared(sym)
			}
			for k, u := range c.code {
				if u.Kind == lang.Ident && syms[u.Text] && !c.cond(k) && !c.is(k-1, ".") && !c.is(k-1, "->") {
					uses = append(uses, u.Start)
				}
			}
			if len(uses) == 0 {
				continue
			}
		case '"':
		default:
			continue
		}
		out = append(out, importSite{s: s, e: e, name: "#include " + rest, uses: uses})
	}
	return out
}

// misspellSite is a use of a declared name: its code token, what it
// names, where that is declared.
type misspellSite struct {
	tok  int
	kind string
	decl int
}

func (c *cfile) misspell(r *rand.Rand) (*plan, error) {
	sites := c.paramUses()
	if len(sites) == 0 || c.java {
		for _, call := range c.calls() {
			ds := c.defsNamed(call.name)
			if len(ds) == 0 || len(call.name) < 3 || ds[0].ctor {
				continue
			}
			sites = append(sites, misspellSite{tok: call.tok, kind: c.what(), decl: c.tok(ds[0].nameTok).Start})
		}
	}
	sites = uncond(c, sites, func(s misspellSite) int { return s.tok })
	for len(sites) > 0 {
		k := r.IntN(len(sites))
		s := sites[k]
		name := c.tok(s.tok).Text
		bad, ok := misspell(name, c.taken, r)
		if !ok {
			sites = append(sites[:k], sites[k+1:]...)
			continue
		}
		t := c.tok(s.tok)
		return &plan{
			edits:  []edit{{start: t.Start, end: t.End, text: bad}},
			at:     t.Start,
			expect: []int{t.Start},
			desc: fmt.Sprintf("misspelled the %s `%s` as `%s` at line %d (declared at line %d)",
				s.kind, name, bad, t.Line, c.line(s.decl)),
		}, nil
	}
	return nil, noSite(OpMisspell, c.srcFile, "no use of a declared parameter or "+c.what())
}

// paramUses are the uses of parameters in their function's body (member
// names, labels and goto targets of the same spelling aside).
func (c *cfile) paramUses() []misspellSite {
	var sites []misspellSite
	for _, d := range c.defs {
		for _, p := range d.params {
			if len(p.name) < 2 || p.tok < 0 {
				continue
			}
			for k := d.body + 1; k < d.end; k++ {
				t := c.tok(k)
				if t.Kind != lang.Ident || t.Text != p.name || c.is(k-1, ".") || c.is(k-1, "->") ||
					(c.is(k+1, ":") && (c.is(k-1, ";") || c.is(k-1, "{") || c.is(k-1, "}"))) || c.wordIs(k-1, "goto") {
					continue
				}
				sites = append(sites, misspellSite{tok: k, kind: "parameter", decl: c.tok(p.tok).Start})
			}
		}
	}
	return sites
}

func (c *cfile) removeFunction(r *rand.Rand) (*plan, error) {
	type cand struct {
		d    *cdef
		uses []int
	}
	var best, rest []cand
	calls := c.calls()
	for _, d := range c.defs {
		if d.ctor || d.override || len(c.defsNamed(d.name)) != 1 || d.name == "main" {
			continue
		}
		var uses []int
		plain := false // a use outside preprocessor conditionals
		for _, call := range calls {
			if call.name == d.name && (call.tok < d.start || call.tok > d.end) {
				uses = append(uses, c.tok(call.tok).Start)
				plain = plain || !c.cond(call.tok)
			}
		}
		if len(uses) == 0 {
			continue
		}
		cd := cand{d, uses}
		if plain && !c.cond(d.start) && (c.java || (d.static && !c.isProto(d.name))) {
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
			c.what(), cd.d.name, c.line(c.tok(cd.d.start).Start), c.line(c.tok(cd.d.end).Start), lines(c.srcFile, cd.uses)),
	}, nil
}

func (c *cfile) deleteSemicolon(r *rand.Rand) (*plan, error) {
	var cands []int
	for i := range c.code {
		if !c.is(i, ";") || c.is(i-1, ";") || c.is(i-1, "{") || i+1 >= len(c.code) {
			continue
		}
		d := c.bodyOf(i)
		if d == nil || c.paren[i] != c.paren[d.body] || !c.lastOnLine(i) {
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
		edits: []edit{{start: t.Start, end: t.End}}, at: t.Start, expect: []int{t.Start, c.tok(i + 1).Start},
		desc: fmt.Sprintf("deleted the semicolon ending the statement at line %d", t.Line),
	}, nil
}

func (c *cfile) deleteBrace(r *rand.Rand) (*plan, error) {
	var cands []int
	for i := range c.code {
		if !c.is(i, "}") || c.lf.Match(i) < 0 || !c.wholeLines(i, i) {
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
	pl := &plan{edits: []edit{c.deleteLines(t.Start, t.End)}, at: t.Start, expect: []int{t.Start}, expectEnd: true}
	for _, d := range c.defs {
		if d.start > i {
			pl.expect = append(pl.expect, c.tok(d.nameTok).Start)
			break
		}
	}
	what := "a block"
	if d := c.defEnding(i); d != nil {
		what = "the " + c.what() + " `" + d.name + "`"
	}
	pl.desc = fmt.Sprintf("deleted the closing brace of %s (line %d, opened at line %d)", what, t.Line, c.tok(c.lf.Match(i)).Line)
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
		if a, ok := arity[call.name]; ok && a >= 0 && len(call.args) == a {
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
	args := make([]lang.Span, n)
	for i, a := range call.args {
		args[i] = lang.Span{Start: c.tok(a[0]).Start, End: c.tok(a[1] - 1).End}
	}
	e, how := arityEdit(c.srcFile, c.tok(call.open).End, args, "0", n == 0 || r.IntN(2) == 1)
	t := c.tok(call.tok)
	return &plan{
		edits: []edit{e}, at: t.Start, expect: []int{t.Start, c.tok(call.close).Start},
		desc: fmt.Sprintf("%s in the call of `%s` at line %d, which takes %d", how, call.name, t.Line, n),
	}, nil
}

func (c *cfile) mergeConflict(r *rand.Rand) (*plan, error) {
	type stmt struct{ s, e int } // code tokens of the statement, e its ';'
	var stmts []stmt
	for i := range c.code {
		if !c.is(i, ";") {
			continue
		}
		d := c.bodyOf(i)
		if d == nil || c.paren[i] != c.paren[d.body] || !c.lastOnLine(i) {
			continue
		}
		k := i - 1
		for k > d.body {
			if c.is(k, ";") || c.is(k, "{") || c.is(k, "}") || c.directive[k] {
				break
			}
			if m := c.lf.Match(k); m >= 0 && m < k {
				k = m
			}
			k--
		}
		s := k + 1
		if s >= i || c.brace[s] != c.brace[i] || !c.wsBefore(c.code[s].Start) {
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
	start, end := c.lineStart(c.code[st.s].Start), c.lineEnd(c.code[st.e].Start)
	what := "a statement"
	if k+1 < len(stmts) && r.IntN(2) == 1 {
		nx := stmts[k+1]
		if c.line(c.code[nx.s].Start) == c.line(c.code[st.e].Start)+1 && c.brace[nx.s] == c.brace[st.s] {
			end = c.lineEnd(c.code[nx.e].Start)
			what = "two statements"
		}
	}
	return conflict(c.srcFile, c.code, start, end, r, what), nil
}
