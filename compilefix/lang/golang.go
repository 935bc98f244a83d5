package lang

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
)

// parseGo fills Tokens (go/scanner, comments included, the implicit
// semicolons as Newline), Go, Fset and Err (go/parser, which recovers a
// partial tree from a broken file).
func (f *File) parseGo() {
	f.Fset = token.NewFileSet()
	var firstScan error
	var s scanner.Scanner
	tf := token.NewFileSet().AddFile("", -1, len(f.Src))
	s.Init(tf, f.Src, func(pos token.Position, msg string) {
		if firstScan == nil {
			firstScan = &SyntaxError{Line: pos.Line, Col: pos.Column - 1, Msg: msg}
		}
	}, scanner.ScanComments)
	for {
		p, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		o := tf.Offset(p)
		t := Token{Text: lit, Start: o}
		switch {
		case tok == token.COMMENT:
			t.Kind = Comment
		case tok == token.SEMICOLON && lit != ";":
			t.Kind, t.Text = Newline, lit // "\n", or "" at the end of the file
		case tok == token.IDENT:
			t.Kind = Ident
		case tok.IsKeyword():
			t.Kind, t.Text = Keyword, tok.String()
		case tok == token.INT || tok == token.FLOAT || tok == token.IMAG:
			t.Kind = Number
		case tok == token.CHAR || tok == token.STRING:
			t.Kind = String
		default:
			t.Kind, t.Text = Punct, tok.String()
		}
		t.End = o + len(t.Text)
		t.Line, t.Col = f.position(o)
		f.Tokens = append(f.Tokens, t)
	}
	file, err := parser.ParseFile(f.Fset, "", f.Src, parser.ParseComments)
	f.Go = file
	var list scanner.ErrorList
	switch {
	case errors.As(err, &list) && len(list) > 0:
		f.Err = &SyntaxError{Line: list[0].Pos.Line, Col: list[0].Pos.Column - 1, Msg: list[0].Msg}
	case err != nil:
		f.Err = err
	default:
		f.Err = firstScan
	}
}

// goOffset is the byte offset of p in the file's Go tree (-1 when p is not
// valid).
func (f *File) goOffset(p token.Pos) int { return goTree{f, f.Fset, 0}.offset(p) }

// goTree maps a go/parser tree's positions to offsets in a File: the
// file's own tree, or a piece of it parsed alone (shift is where the
// piece's source starts, less the header put before it).
type goTree struct {
	f     *File
	fset  *token.FileSet
	shift int
}

func (t goTree) offset(p token.Pos) int {
	if !p.IsValid() {
		return -1
	}
	return t.fset.Position(p).Offset + t.shift
}

// span is n's span, empty when the parser could not place it.
func (t goTree) span(n ast.Node) Span {
	s := Span{t.offset(n.Pos()), t.offset(n.End())}
	if s.Start < 0 || s.End < s.Start || s.End > len(t.f.Src) {
		return Span{}
	}
	return s
}

// goFunctions are Go's function and method declarations. go/parser gives
// up on the rest of a file at an error in a function body, so a file that
// does not parse is read again piece by piece: each top-level func (at
// column 0, outside brackets) on its own.
func (f *File) goFunctions() []Function {
	if f.Go == nil {
		return nil
	}
	if f.Err == nil {
		return goTree{f, f.Fset, 0}.functions(f.Go)
	}
	var starts []int
	for i, t := range f.Code {
		if t.Kind == Keyword && t.Text == "func" && t.Col == 0 && f.Depth(i) == 0 {
			starts = append(starts, t.Start)
		}
	}
	const header = "package p\n"
	var out []Function
	for k, s := range starts {
		end := len(f.Src)
		if k+1 < len(starts) {
			end = starts[k+1]
		}
		fset := token.NewFileSet()
		piece, _ := parser.ParseFile(fset, "", header+string(f.Src[s:end]), parser.ParseComments)
		if piece != nil {
			out = append(out, goTree{f, fset, s - len(header)}.functions(piece)...)
		}
	}
	return out
}

func (t goTree) functions(file *ast.File) []Function {
	var out []Function
	for _, d := range file.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Name == nil || fd.Type == nil || fd.Type.Params == nil {
			continue
		}
		fn := Function{Name: fd.Name.Name, NameAt: t.span(fd.Name), Span: t.span(fd), Decl: fd,
			Params: t.span(fd.Type.Params), Method: fd.Recv != nil}
		if fd.Body != nil {
			fn.Body = t.body(fd.Body)
			fn.Span.End = max(fn.Span.End, fn.Body.End)
		}
		fn.Parameters = t.fields(fd.Type.Params)
		if n := len(fn.Parameters); n > 0 && fn.Parameters[n-1].Rest {
			fn.Variadic = true
		}
		fn.Results = t.fields(fd.Type.Results)
		out = append(out, fn)
	}
	return out
}

// body is a function body's span; when the parser lost its closing brace
// (an error inside), the brace matching its opening one among the tokens.
func (t goTree) body(b *ast.BlockStmt) Span {
	s := Span{t.offset(b.Lbrace), t.offset(b.Rbrace) + 1}
	if s.Start >= 0 && b.Rbrace.IsValid() {
		return s
	}
	if i := t.f.CodeAt(s.Start); i >= 0 && t.f.Match(i) > i {
		return Span{s.Start, t.f.Code[t.f.Match(i)].End}
	}
	return Span{}
}

// fields reads a parameter or result list: one Param per name (one for an
// unnamed field).
func (t goTree) fields(list *ast.FieldList) []Param {
	if list == nil {
		return nil
	}
	var out []Param
	for _, fl := range list.List {
		typ := squash(t.f.Text(t.span(fl.Type)))
		_, rest := fl.Type.(*ast.Ellipsis)
		if len(fl.Names) == 0 {
			out = append(out, Param{Type: typ, Rest: rest})
		}
		for _, id := range fl.Names {
			out = append(out, Param{Name: id.Name, NameAt: t.span(id), Type: typ, Rest: rest})
		}
	}
	return out
}

// goCalls are the calls of a name or a selector (x.f()).
func (f *File) goCalls() []Call {
	if f.Go == nil {
		return nil
	}
	var out []Call
	ast.Inspect(f.Go, func(n ast.Node) bool {
		ce, ok := n.(*ast.CallExpr)
		if !ok || !ce.Lparen.IsValid() || !ce.Rparen.IsValid() {
			return true
		}
		c := Call{Expr: ce, Args: Span{f.goOffset(ce.Lparen), f.goOffset(ce.Rparen) + 1}}
		switch fun := ce.Fun.(type) {
		case *ast.Ident:
			c.Name, c.NameAt = fun.Name, f.goSpan(fun)
		case *ast.SelectorExpr:
			c.Name, c.NameAt, c.Receiver = fun.Sel.Name, f.goSpan(fun.Sel), f.goSpan(fun.X)
		default:
			return true
		}
		for _, a := range ce.Args {
			c.Arguments = append(c.Arguments, f.goSpan(a))
		}
		out = append(out, c)
		return true
	})
	return out
}

// goSpan is the byte span of a node of the file's Go tree.
func (f *File) goSpan(n ast.Node) Span { return goTree{f, f.Fset, 0}.span(n) }
