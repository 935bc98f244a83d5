package layout

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDeferredCleanupsReadNoNamedResults: a deferred closure runs after the
// return statement has assigned the named results, so after `return nil,
// nil, err` it sees a nil close func, a nil *T: calling it panics. Every
// Go file of the repository is checked for a deferred closure that reads a
// named result other than an error (assigning one, as a recover handler
// does, is fine); `if err != nil { cleanup() }` must call a local.
func TestDeferredCleanupsReadNoNamedResults(t *testing.T) {
	t.Parallel()
	root := "../.."
	fset := token.NewFileSet()
	var bad []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, p, src, 0)
		if err != nil {
			return err
		}
		bad = append(bad, deferredReads(fset, f)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Error(b)
	}
}

// deferredReads lists the deferred closures of f that read a named result
// that is not an error.
func deferredReads(fset *token.FileSet, f *ast.File) []string {
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		var ft *ast.FuncType
		var body *ast.BlockStmt
		switch x := n.(type) {
		case *ast.FuncDecl:
			ft, body = x.Type, x.Body
		case *ast.FuncLit:
			ft, body = x.Type, x.Body
		default:
			return true
		}
		if body == nil || ft.Results == nil {
			return true
		}
		named := map[string]bool{}
		for _, fld := range ft.Results.List {
			if id, ok := fld.Type.(*ast.Ident); ok && id.Name == "error" {
				continue
			}
			for _, nm := range fld.Names {
				if nm.Name != "_" {
					named[nm.Name] = true
				}
			}
		}
		if len(named) == 0 {
			return true
		}
		ast.Inspect(body, func(m ast.Node) bool {
			if _, ok := m.(*ast.FuncLit); ok {
				// a nested function's own defers are checked on their own
				return m.Pos() == body.Pos()
			}
			d, ok := m.(*ast.DeferStmt)
			if !ok {
				return true
			}
			lit, ok := d.Call.Fun.(*ast.FuncLit)
			if !ok {
				return true
			}
			for _, id := range reads(lit.Body) {
				if named[id.Name] {
					out = append(out, fset.Position(id.Pos()).String()+": a deferred closure reads the named result "+id.Name+
						" (after `return nil, ..., err` it holds the returned value, not the one assigned earlier)")
				}
			}
			return true
		})
		return true
	})
	return out
}

// reads returns the identifiers of body that are read: every identifier
// but the plain ones on the left of an assignment.
func reads(body *ast.BlockStmt) []*ast.Ident {
	written := map[*ast.Ident]bool{}
	ast.Inspect(body, func(n ast.Node) bool {
		if a, ok := n.(*ast.AssignStmt); ok {
			for _, l := range a.Lhs {
				if id, ok := l.(*ast.Ident); ok {
					written[id] = true
				}
			}
		}
		return true
	})
	var out []*ast.Ident
	ast.Inspect(body, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && !written[id] {
			out = append(out, id)
		}
		return true
	})
	return out
}
