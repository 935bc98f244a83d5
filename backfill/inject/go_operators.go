package inject

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"

	"github.com/murphy-rl/murphy/compilefix/lang"
)

func (g *gofile) dropImport(r *rand.Rand) (*plan, error) {
	type cand struct {
		spec *ast.ImportSpec
		decl *ast.GenDecl
		uses []int
		name string
	}
	var cands []cand
	for _, d := range g.file.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.IMPORT {
			continue
		}
		for _, s := range gd.Specs {
			is := s.(*ast.ImportSpec)
			p, err := strconv.Unquote(is.Path.Value)
			if err != nil || p == "C" || (is.Name != nil && (is.Name.Name == "_" || is.Name.Name == ".")) {
				continue
			}
			name := importName(p)
			if is.Name != nil {
				name = is.Name.Name
			}
			var uses []int
			ast.Inspect(g.file, func(n ast.Node) bool {
				if se, ok := n.(*ast.SelectorExpr); ok {
					if id, ok := se.X.(*ast.Ident); ok && id.Name == name && id.Obj == nil {
						uses = append(uses, g.off(id.Pos()))
					}
				}
				return true
			})
			if len(uses) > 0 {
				cands = append(cands, cand{is, gd, uses, name})
			}
		}
	}
	k := pick(r, len(cands))
	if k < 0 {
		return nil, noSite(OpDropImport, g.srcFile, "no import the file uses")
	}
	cd := cands[k]
	var e edit
	s, end := g.off(cd.spec.Pos()), g.off(cd.spec.End())
	if cd.spec.Doc != nil {
		s = g.off(cd.spec.Doc.Pos())
	}
	switch {
	case !cd.decl.Lparen.IsValid():
		e = g.deleteLines(g.off(cd.decl.Pos()), g.off(cd.decl.End()))
	case g.alone(s, end):
		e = g.deleteLines(s, end)
	default:
		e = edit{start: g.off(cd.spec.Pos()), end: end}
	}
	return &plan{
		edits: []edit{e}, at: e.start, expect: cd.uses,
		desc: fmt.Sprintf("removed the import of %s (line %d); the file uses %s at line(s) %s",
			cd.spec.Path.Value, g.line(s), cd.name, lines(g.srcFile, cd.uses)),
	}, nil
}

// declaringNames are the identifiers that declare a name (functions,
// fields and parameters, vars, consts, types, := and range := targets)
// and the keys of composite literals: no use of a name to misspell.
func (g *gofile) declaringNames() map[token.Pos]bool {
	decl := map[token.Pos]bool{}
	ast.Inspect(g.file, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			decl[n.Name.Pos()] = true
		case *ast.Field:
			for _, id := range n.Names {
				decl[id.Pos()] = true
			}
		case *ast.ValueSpec:
			for _, id := range n.Names {
				decl[id.Pos()] = true
			}
		case *ast.TypeSpec:
			decl[n.Name.Pos()] = true
		case *ast.AssignStmt:
			if n.Tok == token.DEFINE {
				for _, x := range n.Lhs {
					if id, ok := x.(*ast.Ident); ok {
						decl[id.Pos()] = true
					}
				}
			}
		case *ast.RangeStmt:
			if n.Tok == token.DEFINE {
				for _, x := range []ast.Expr{n.Key, n.Value} {
					if id, ok := x.(*ast.Ident); ok {
						decl[id.Pos()] = true
					}
				}
			}
		case *ast.CompositeLit:
			for _, el := range n.Elts {
				if kv, ok := el.(*ast.KeyValueExpr); ok {
					decl[kv.Key.Pos()] = true
				}
			}
		}
		return true
	})
	return decl
}

func (g *gofile) misspell(r *rand.Rand) (*plan, error) {
	decl := g.declaringNames()
	var sites []*ast.Ident
	ast.Inspect(g.file, func(n ast.Node) bool {
		id, ok := n.(*ast.Ident)
		if !ok || id.Obj == nil || id.Name == "_" || len(id.Name) < 2 || decl[id.Pos()] || id.Pos() == id.Obj.Pos() {
			return true
		}
		switch id.Obj.Kind {
		case ast.Var, ast.Con, ast.Typ, ast.Fun:
			sites = append(sites, id)
		}
		return true
	})
	for len(sites) > 0 {
		k := r.IntN(len(sites))
		id := sites[k]
		bad, ok := misspell(id.Name, g.taken, r)
		if !ok {
			sites = append(sites[:k], sites[k+1:]...)
			continue
		}
		o := g.off(id.Pos())
		kind := map[ast.ObjKind]string{ast.Var: "variable", ast.Con: "constant", ast.Typ: "type", ast.Fun: "function"}[id.Obj.Kind]
		return &plan{
			edits: []edit{{start: o, end: o + len(id.Name), text: bad}}, at: o, expect: []int{o},
			desc: fmt.Sprintf("misspelled the %s `%s` as `%s` at line %d (declared at line %d)",
				kind, id.Name, bad, g.line(o), g.fset.Position(id.Obj.Pos()).Line),
		}, nil
	}
	return nil, noSite(OpMisspell, g.srcFile, "no use of a name declared in the file")
}

// funcUses are the offsets of the uses of fd outside it: its name for a
// function, a selector of its name for a method whose name no other
// method has (unique).
func (g *gofile) funcUses(fd *ast.FuncDecl, unique bool) []int {
	lo, hi := g.off(fd.Pos()), g.off(fd.End())
	var uses []int
	ast.Inspect(g.file, func(n ast.Node) bool {
		var id *ast.Ident
		switch n := n.(type) {
		case *ast.Ident:
			if fd.Recv == nil && n.Obj != nil && n.Obj.Decl == fd && n != fd.Name {
				id = n
			}
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok && x.Obj == nil && g.imps[x.Name] {
				break // a package's name (time.Time), not a method
			}
			if fd.Recv != nil && unique && n.Sel.Name == fd.Name.Name {
				id = n.Sel
			}
		}
		if id != nil {
			if o := g.off(id.Pos()); o < lo || o >= hi {
				uses = append(uses, o)
			}
		}
		return true
	})
	return uses
}

func (g *gofile) removeFunction(r *rand.Rand) (*plan, error) {
	type cand struct {
		fd   *ast.FuncDecl
		uses []int
	}
	methods := map[string]int{}
	for _, fd := range g.funcs {
		if fd.Recv != nil {
			methods[fd.Name.Name]++
		}
	}
	var cands []cand
	for _, fd := range g.funcs {
		name := fd.Name.Name
		if name == "_" || name == "init" || (name == "main" && g.file.Name.Name == "main") {
			continue
		}
		if uses := g.funcUses(fd, methods[name] == 1); len(uses) > 0 {
			cands = append(cands, cand{fd, uses})
		}
	}
	k := pick(r, len(cands))
	if k < 0 {
		return nil, noSite(OpRemoveFunction, g.srcFile, "no function declared here and used elsewhere in the file")
	}
	cd := cands[k]
	s, e := g.off(cd.fd.Pos()), g.off(cd.fd.End())
	if cd.fd.Doc != nil {
		s = g.off(cd.fd.Doc.Pos())
	}
	var ed edit
	if g.alone(s, e) {
		ed = g.deleteLines(s, e)
	} else {
		ed = edit{start: s, end: e}
	}
	what := "function"
	if cd.fd.Recv != nil {
		what = "method"
	}
	return &plan{
		edits: []edit{ed}, at: ed.start, expect: cd.uses,
		desc: fmt.Sprintf("removed the %s `%s` (lines %d-%d), still used at line(s) %s",
			what, cd.fd.Name.Name, g.line(s), g.line(e-1), lines(g.srcFile, cd.uses)),
	}, nil
}

func (g *gofile) deleteSemicolon(r *rand.Rand) (*plan, error) {
	type cand struct {
		e        edit
		explicit bool
	}
	var cands []cand
	ts := g.lf.Code
	punct := func(i int, p string) bool { return ts[i].Kind == lang.Punct && ts[i].Text == p }
	for i, t := range ts {
		explicit := punct(i, ";")
		if !explicit && t.Kind != lang.Newline || i+1 >= len(ts) || g.inBody(t.Start) == nil {
			continue
		}
		nx := ts[i+1]
		if explicit {
			cands = append(cands, cand{edit{start: t.Start, end: t.Start + 1}, true})
			continue
		}
		if t.Text != "\n" || g.srcFile.src[t.Start] != '\n' || punct(i+1, "}") || punct(i+1, ")") ||
			punct(i+1, ";") || nx.Kind == lang.Newline || i == 0 || punct(i-1, "{") {
			continue
		}
		gap := g.text(t.Start, nx.Start)
		if strings.TrimSpace(gap) != "" || strings.Count(gap, "\n") != 1 {
			continue
		}
		cands = append(cands, cand{edit{start: t.Start, end: nx.Start, text: " "}, false})
	}
	k := pick(r, len(cands))
	if k < 0 {
		return nil, noSite(OpDeleteSemicolon, g.srcFile, "no statement terminator in a function body")
	}
	cd := cands[k]
	desc := fmt.Sprintf("deleted the semicolon at line %d", g.line(cd.e.start))
	if !cd.explicit {
		desc = fmt.Sprintf("joined lines %d and %d, removing the statement terminator between them",
			g.line(cd.e.start), g.line(cd.e.start)+1)
	}
	return &plan{edits: []edit{cd.e}, at: cd.e.start, expect: []int{cd.e.start}, desc: desc}, nil
}

func (g *gofile) deleteBrace(r *rand.Rand) (*plan, error) {
	var cands []int
	for _, t := range g.lf.Code {
		if t.Kind == lang.Punct && t.Text == "}" && g.inBody(t.Start) != nil && strings.TrimSpace(g.lineText(g.line(t.Start))) == "}" {
			cands = append(cands, t.Start)
		}
	}
	k := pick(r, len(cands))
	if k < 0 {
		return nil, noSite(OpDeleteBrace, g.srcFile, "no closing brace on a line of its own in a function body")
	}
	o := cands[k]
	fd := g.inBody(o)
	what := "a block in `" + fd.Name.Name + "`"
	if g.off(fd.Body.Rbrace) == o {
		what = "the function `" + fd.Name.Name + "`"
	}
	pl := &plan{
		edits: []edit{g.deleteLines(o, o+1)}, at: o, expect: []int{o}, expectEnd: true,
		desc: fmt.Sprintf("deleted the closing brace of %s at line %d", what, g.line(o)),
	}
	if nf := g.nextFunc(o); nf >= 0 {
		pl.expect = append(pl.expect, nf)
	}
	return pl, nil
}

func (g *gofile) changeArity(r *rand.Rand) (*plan, error) {
	var cands []*ast.CallExpr
	ast.Inspect(g.file, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || call.Ellipsis.IsValid() {
			return true
		}
		id, ok := call.Fun.(*ast.Ident)
		if !ok || id.Obj == nil || id.Obj.Kind != ast.Fun {
			return true
		}
		fd, ok := id.Obj.Decl.(*ast.FuncDecl)
		if !ok || fd.Recv != nil {
			return true
		}
		np, variadic := 0, false
		for _, f := range fd.Type.Params.List {
			np += max(1, len(f.Names))
			_, dots := f.Type.(*ast.Ellipsis)
			variadic = variadic || dots
		}
		if !variadic && len(call.Args) == np {
			cands = append(cands, call)
		}
		return true
	})
	k := pick(r, len(cands))
	if k < 0 {
		return nil, noSite(OpChangeArity, g.srcFile, "no call of a function declared in the file")
	}
	call := cands[k]
	n := len(call.Args)
	name := call.Fun.(*ast.Ident).Name
	args := make([]lang.Span, n)
	for i, a := range call.Args {
		args[i] = lang.Span{Start: g.off(a.Pos()), End: g.off(a.End())}
	}
	e, how := arityEdit(g.srcFile, g.off(call.Lparen)+1, args, "0", n == 0 || r.IntN(2) == 1)
	o := g.off(call.Pos())
	return &plan{
		edits: []edit{e}, at: o, expect: []int{o, g.off(call.Rparen)},
		desc: fmt.Sprintf("%s in the call of `%s` at line %d, which takes %d", how, name, g.line(o), n),
	}, nil
}

// basicType classifies a type expression naming a predeclared basic type
// (go/types' universe).
func basicType(x ast.Expr) string {
	id, ok := x.(*ast.Ident)
	if !ok || id.Obj != nil {
		return ""
	}
	tn, ok := types.Universe.Lookup(id.Name).(*types.TypeName)
	if !ok {
		return ""
	}
	b, ok := tn.Type().(*types.Basic)
	switch {
	case !ok:
	case b.Info()&types.IsNumeric != 0:
		return "number"
	case b.Info()&types.IsBoolean != 0:
		return "bool"
	case b.Info()&types.IsString != 0:
		return "string"
	}
	return ""
}

func (g *gofile) typeMismatch(r *rand.Rand) (*plan, error) {
	type cand struct {
		x        ast.Expr
		typ, how string
	}
	var cands []cand
	replace := func(x ast.Expr, typ string) cand {
		if typ == "string" {
			return cand{x, typ, "0"}
		}
		return cand{x, typ, stringLit(g.src(x))}
	}
	var visit func(n ast.Node, results *ast.FieldList) bool
	visit = func(n ast.Node, results *ast.FieldList) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			ast.Inspect(n.Body, func(m ast.Node) bool { return m == n.Body || visit(m, n.Type.Results) })
			return false
		case *ast.ValueSpec:
			if t := basicType(n.Type); t != "" && len(n.Values) == len(n.Names) {
				for _, v := range n.Values {
					cands = append(cands, replace(v, g.src(n.Type)))
				}
			}
		case *ast.ReturnStmt:
			if results == nil {
				return true
			}
			var types []ast.Expr
			for _, f := range results.List {
				for range max(1, len(f.Names)) {
					types = append(types, f.Type)
				}
			}
			if len(types) != len(n.Results) {
				return true
			}
			for i, v := range n.Results {
				if t := basicType(types[i]); t != "" {
					cands = append(cands, replace(v, g.src(types[i])))
				}
			}
		}
		return true
	}
	for _, d := range g.file.Decls {
		var results *ast.FieldList
		if fd, ok := d.(*ast.FuncDecl); ok {
			results = fd.Type.Results
		}
		ast.Inspect(d, func(n ast.Node) bool { return visit(n, results) })
	}
	k := pick(r, len(cands))
	if k < 0 {
		return nil, noSite(OpTypeMismatch, g.srcFile, "no value of a basic declared type")
	}
	cd := cands[k]
	s, e := g.off(cd.x.Pos()), g.off(cd.x.End())
	return &plan{
		edits: []edit{{start: s, end: e, text: cd.how}}, at: s, expect: []int{s},
		desc: fmt.Sprintf("replaced %s with %s where a %s is expected, at line %d", g.text(s, e), cd.how, cd.typ, g.line(s)),
	}, nil
}

func (g *gofile) mergeConflict(r *rand.Rand) (*plan, error) {
	type region struct{ s, e int }
	var regs [][]region // runs of statements of one block
	for _, fd := range g.funcs {
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			var list []ast.Stmt
			switch n := n.(type) {
			case *ast.BlockStmt:
				list = n.List
			case *ast.CaseClause:
				list = n.Body
			case *ast.CommClause:
				list = n.Body
			}
			var run []region
			for _, st := range list {
				s, e := g.off(st.Pos()), g.off(st.End())
				if _, ok := st.(*ast.LabeledStmt); ok || !g.alone(s, e) || g.line(e)-g.line(s) > 6 {
					if len(run) > 0 {
						regs = append(regs, run)
					}
					run = nil
					continue
				}
				run = append(run, region{s, e})
			}
			if len(run) > 0 {
				regs = append(regs, run)
			}
			return true
		})
	}
	var all []region
	var next = map[int]region{}
	for _, run := range regs {
		for i, rg := range run {
			all = append(all, rg)
			if i+1 < len(run) {
				next[rg.s] = run[i+1]
			}
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].s < all[j].s })
	k := pick(r, len(all))
	if k < 0 {
		return nil, noSite(OpMergeConflict, g.srcFile, "no statement on lines of its own in a function body")
	}
	rg := all[k]
	start, end := g.lineStart(rg.s), g.lineEnd(rg.e-1)
	what := "a statement"
	if nx, ok := next[rg.s]; ok && r.IntN(2) == 1 && g.line(nx.s) == g.line(rg.e-1)+1 {
		end, what = g.lineEnd(nx.e-1), "two statements"
	}
	return conflict(g.srcFile, g.lf.Code, start, end, r, what), nil
}
