package inject

import (
	"fmt"
	"go/ast"
	"go/token"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/murphy-rl/murphy/compilefix/lang"
)

// gofile is a parsed Go file (compilefix/lang: go/parser's tree, go/scanner's
// tokens).
type gofile struct {
	*srcFile
	lf    *lang.File
	fset  *token.FileSet
	file  *ast.File
	names map[string]bool
	funcs []*ast.FuncDecl
	imps  map[string]bool // names the imports bind
}

func newGoFile(f *srcFile) (*gofile, error) {
	lf, err := lang.Parse(lang.Go, f.src)
	if err != nil {
		return nil, err
	}
	if lf.Err != nil {
		return nil, fmt.Errorf("inject: %s does not parse as Go: %w", f.path, lf.Err)
	}
	g := &gofile{srcFile: f, lf: lf, fset: lf.Fset, file: lf.Go, names: map[string]bool{}}
	file := g.file
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

func (g *gofile) taken(s string) bool { return g.names[s] || lang.IsReserved(lang.Go, s) }

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
