package inject

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
)

var (
	goKeywords = wordSet(`break case chan const continue default defer else fallthrough for func go goto if
		import interface map package range return select struct switch type var`)
	goPredeclared = wordSet(`any bool byte comparable complex64 complex128 error float32 float64 int int8 int16
		int32 int64 rune string uint uint8 uint16 uint32 uint64 uintptr true false iota nil append cap clear
		close complex copy delete imag len make max min new panic print println real recover`)
	goNumeric = wordSet(`int int8 int16 int32 int64 uint uint8 uint16 uint32 uint64 uintptr float32 float64
		complex64 complex128 byte rune`)
)

// gofile is a parsed Go file.
type gofile struct {
	*srcFile
	fset  *token.FileSet
	file  *ast.File
	names map[string]bool
	funcs []*ast.FuncDecl
	imps  map[string]bool // names the imports bind
}

func newGoFile(f *srcFile) (*gofile, error) {
	g := &gofile{srcFile: f, fset: token.NewFileSet(), names: map[string]bool{}}
	file, err := parser.ParseFile(g.fset, f.path, f.src, parser.ParseComments)
	if err != nil {
		return nil, fmt.Errorf("inject: %s does not parse as Go: %w", f.path, err)
	}
	g.file = file
	ast.Inspect(file, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			g.names[id.Name] = true
		}
		return true
	})
	for _, d := range file.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
			g.funcs = append(g.funcs, fd)
		}
	}
	g.imps = map[string]bool{}
	for _, is := range file.Imports {
		if is.Name != nil {
			g.imps[is.Name.Name] = true
		} else if p, err := strconv.Unquote(is.Path.Value); err == nil {
			g.imps[importName(p)] = true
		}
	}
	return g, nil
}

func (g *gofile) off(p token.Pos) int { return g.fset.Position(p).Offset }

func (g *gofile) src(n ast.Node) string { return g.text(g.off(n.Pos()), g.off(n.End())) }

func (g *gofile) taken(s string) bool { return g.names[s] || goKeywords[s] || goPredeclared[s] }

// inBody reports whether offset o is inside a function body (braces
// included) and returns the function.
func (g *gofile) inBody(o int) *ast.FuncDecl {
	for _, fd := range g.funcs {
		if o >= g.off(fd.Body.Lbrace) && o <= g.off(fd.Body.Rbrace) {
			return fd
		}
	}
	return nil
}

// nextFunc is the first function declaration starting after offset o.
func (g *gofile) nextFunc(o int) int {
	for _, d := range g.file.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && g.off(fd.Pos()) > o {
			return g.off(fd.Pos())
		}
	}
	return -1
}

// alone reports whether [s, e) fills its lines: blanks before, blanks or
// a line comment after.
func (g *gofile) alone(s, e int) bool {
	rest := strings.TrimSpace(g.restOfLine(e))
	return g.wsBefore(s) && (rest == "" || strings.HasPrefix(rest, "//"))
}

func goOps() map[string]opFunc {
	wrap := func(fn func(g *gofile, r *rand.Rand) (*plan, error)) opFunc {
		return func(f *srcFile, r *rand.Rand) (*plan, error) {
			g, err := newGoFile(f)
			if err != nil {
				return nil, err
			}
			return fn(g, r)
		}
	}
	return map[string]opFunc{
		OpDropImport:      wrap((*gofile).dropImport),
		OpMisspell:        wrap((*gofile).misspell),
		OpRemoveFunction:  wrap((*gofile).removeFunction),
		OpDeleteSemicolon: wrap((*gofile).deleteSemicolon),
		OpDeleteBrace:     wrap((*gofile).deleteBrace),
		OpChangeArity:     wrap((*gofile).changeArity),
		OpTypeMismatch:    wrap((*gofile).typeMismatch),
		OpMergeConflict:   wrap((*gofile).mergeConflict),
	}
}

// importName guesses the name an import path binds.
func importName(p string) string {
	els := strings.Split(p, "/")
	n := els[len(els)-1]
	if len(els) > 1 && len(n) > 1 && n[0] == 'v' && strings.Trim(n[1:], "0123456789") == "" {
		n = els[len(els)-2]
	}
	n = strings.TrimPrefix(n, "go-")
	n = strings.TrimSuffix(strings.TrimSuffix(n, ".go"), "-go")
	if i := strings.IndexAny(n, ".-"); i >= 0 {
		n = n[:i]
	}
	return n
}

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

func (g *gofile) misspell(r *rand.Rand) (*plan, error) {
	decl := map[token.Pos]bool{}
	keys := map[token.Pos]bool{}
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
					keys[kv.Key.Pos()] = true
				}
			}
		}
		return true
	})
	var sites []*ast.Ident
	ast.Inspect(g.file, func(n ast.Node) bool {
		id, ok := n.(*ast.Ident)
		if !ok || id.Obj == nil || id.Name == "_" || len(id.Name) < 2 || decl[id.Pos()] || keys[id.Pos()] || id.Pos() == id.Obj.Pos() {
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
				if fd.Recv != nil && methods[name] == 1 && n.Sel.Name == name {
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
		if len(uses) > 0 {
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

// gotok is a scanned Go token.
type gotok struct {
	off int
	tok token.Token
	lit string
}

func (g *gofile) tokens() []gotok {
	var s scanner.Scanner
	tf := token.NewFileSet().AddFile(g.path, -1, len(g.srcFile.src))
	s.Init(tf, g.srcFile.src, nil, 0)
	var out []gotok
	for {
		p, t, lit := s.Scan()
		if t == token.EOF {
			break
		}
		out = append(out, gotok{tf.Offset(p), t, lit})
	}
	return out
}

func (g *gofile) deleteSemicolon(r *rand.Rand) (*plan, error) {
	type cand struct {
		e        edit
		explicit bool
	}
	var cands []cand
	ts := g.tokens()
	for i, t := range ts {
		if t.tok != token.SEMICOLON || i+1 >= len(ts) || g.inBody(t.off) == nil {
			continue
		}
		nx := ts[i+1]
		if t.lit == ";" {
			cands = append(cands, cand{edit{start: t.off, end: t.off + 1}, true})
			continue
		}
		if t.lit != "\n" || g.srcFile.src[t.off] != '\n' || nx.tok == token.RBRACE || nx.tok == token.RPAREN ||
			nx.tok == token.SEMICOLON || i == 0 || ts[i-1].tok == token.LBRACE {
			continue
		}
		gap := g.text(t.off, nx.off)
		if strings.TrimSpace(gap) != "" || strings.Count(gap, "\n") != 1 {
			continue
		}
		cands = append(cands, cand{edit{start: t.off, end: nx.off, text: " "}, false})
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
	for _, t := range g.tokens() {
		if t.tok == token.RBRACE && g.inBody(t.off) != nil && strings.TrimSpace(g.lineText(g.line(t.off))) == "}" {
			cands = append(cands, t.off)
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
	var e edit
	var how string
	if n == 0 || r.IntN(2) == 1 {
		if n == 0 {
			o := g.off(call.Lparen) + 1
			e, how = edit{start: o, end: o, text: "0"}, "added an argument (0)"
		} else {
			last := call.Args[n-1]
			o := g.off(last.End())
			e, how = edit{start: o, end: o, text: ", " + g.src(last)}, "added an argument ("+g.src(last)+")"
		}
	} else {
		last := call.Args[n-1]
		from := g.off(call.Lparen) + 1
		if n > 1 {
			from = g.off(call.Args[n-2].End())
		}
		e, how = edit{start: from, end: g.off(last.End())}, "dropped the last argument ("+g.src(last)+")"
	}
	o := g.off(call.Pos())
	return &plan{
		edits: []edit{e}, at: o, expect: []int{o, g.off(call.Rparen)},
		desc: fmt.Sprintf("%s in the call of `%s` at line %d, which takes %d", how, name, g.line(o), n),
	}, nil
}

// basicType classifies a type expression naming a predeclared basic type.
func basicType(x ast.Expr) string {
	id, ok := x.(*ast.Ident)
	if !ok || id.Obj != nil {
		return ""
	}
	switch {
	case goNumeric[id.Name]:
		return "number"
	case id.Name == "bool":
		return "bool"
	case id.Name == "string":
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
	return conflict(g.srcFile, start, end, r, what), nil
}
