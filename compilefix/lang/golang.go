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

// goOffset is the byte offset of p in a Go file.
func (f *File) goOffset(p token.Pos) int { return f.Fset.Position(p).Offset }

// goFunctions are Go's function and method declarations.
func (f *File) goFunctions() []Function {
	if f.Go == nil {
		return nil
	}
	var out []Function
	for _, d := range f.Go.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Name == nil || fd.Type == nil || fd.Type.Params == nil {
			continue
		}
		fn := Function{Name: fd.Name.Name, NameAt: f.goSpan(fd.Name), Span: f.goSpan(fd), Decl: fd,
			Params: f.goSpan(fd.Type.Params), Method: fd.Recv != nil}
		if fd.Body != nil {
			fn.Body = f.goSpan(fd.Body)
		}
		fn.Parameters = f.goFields(fd.Type.Params)
		if n := len(fn.Parameters); n > 0 && fn.Parameters[n-1].Rest {
			fn.Variadic = true
		}
		fn.Results = f.goFields(fd.Type.Results)
		out = append(out, fn)
	}
	return out
}

// goFields reads a parameter or result list: one Param per name (one for
// an unnamed field).
func (f *File) goFields(list *ast.FieldList) []Param {
	if list == nil {
		return nil
	}
	var out []Param
	for _, fl := range list.List {
		typ := squash(f.Text(f.goSpan(fl.Type)))
		_, rest := fl.Type.(*ast.Ellipsis)
		if len(fl.Names) == 0 {
			out = append(out, Param{Type: typ, Rest: rest})
		}
		for _, id := range fl.Names {
			out = append(out, Param{Name: id.Name, NameAt: f.goSpan(id), Type: typ, Rest: rest})
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

// goSpan is the byte span of a Go node.
func (f *File) goSpan(n ast.Node) Span { return Span{f.goOffset(n.Pos()), f.goOffset(n.End())} }
