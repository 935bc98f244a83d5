// Package flagdocs reads the Go doc comments of the fields of every struct
// type reachable from a root struct type (through its fields, embedded ones
// included) and renders them as a Go source file holding one map, keyed
// "package path.Type.Field" as reflect spells it (a command's own types are
// in package "main"), whose values are the first paragraph of each field's
// doc comment on one line. murphy's flags take their usage from that map, so
// a setting is documented once: on its Config field.
//
// It parses source with go/parser (no type checker, no dependency outside
// the standard library) and follows only types declared in the module that
// holds the root package; fields of types from other modules are not
// documented here.
package flagdocs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/build"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// Options says what to document and how to render it.
type Options struct {
	// Dir is the directory of the package declaring Type.
	Dir string
	// Type is the root struct type.
	Type string
	// Package is the package clause of the output (default: Dir's package).
	Package string
	// Var names the map variable of the output.
	Var string
	// Generator is named in the output's "Code generated" header
	// (default DefaultGenerator).
	Generator string
}

// DefaultGenerator is the command named in the output's header.
const DefaultGenerator = "go run ./internal/flagdocs/gen"

// Result is a rendered doc map.
type Result struct {
	// Source is the gofmt-ed Go file.
	Source []byte
	// Docs maps "package path.Type.Field" to the first paragraph of the
	// field's doc comment.
	Docs map[string]string
	// Undocumented lists the keys of exported fields without a doc comment,
	// but for fields holding a struct of the module (sections, whose own
	// fields are documented).
	Undocumented []string
}

// Generate documents every struct reachable from opt.Type in opt.Dir.
func Generate(opt Options) (*Result, error) {
	if opt.Type == "" || opt.Var == "" {
		return nil, errors.New("flagdocs: Type and Var are required")
	}
	dir, err := filepath.Abs(opt.Dir)
	if err != nil {
		return nil, err
	}
	root, modPath, err := findModule(dir)
	if err != nil {
		return nil, err
	}
	l := &loader{root: root, module: modPath, pkgs: map[string]*pkg{}, docs: map[string]string{}, seen: map[string]bool{}}
	rootPkg, err := l.loadDir(dir)
	if err != nil {
		return nil, err
	}
	if _, ok := rootPkg.types[opt.Type]; !ok {
		return nil, fmt.Errorf("flagdocs: no type %s in %s", opt.Type, dir)
	}
	if err := l.visit(rootPkg, opt.Type); err != nil {
		return nil, err
	}
	pkgName := opt.Package
	if pkgName == "" {
		pkgName = rootPkg.name
	}
	src, err := render(opt, pkgName, l.docs)
	if err != nil {
		return nil, err
	}
	sort.Strings(l.undocumented)
	return &Result{Source: src, Docs: l.docs, Undocumented: l.undocumented}, nil
}

// buildContext selects the files of a package the same way on every
// machine: murphy runs on linux.
func buildContext() build.Context {
	c := build.Default
	c.GOOS, c.GOARCH, c.CgoEnabled = "linux", "amd64", true
	return c
}

func findModule(dir string) (root, path string, err error) {
	for d := dir; ; d = filepath.Dir(d) {
		b, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil {
			s := bufio.NewScanner(bytes.NewReader(b))
			for s.Scan() {
				if rest, ok := strings.CutPrefix(strings.TrimSpace(s.Text()), "module "); ok {
					p := strings.TrimSpace(rest)
					if uq, err := strconv.Unquote(p); err == nil {
						p = uq
					}
					return d, p, nil
				}
			}
			return "", "", fmt.Errorf("flagdocs: no module line in %s", filepath.Join(d, "go.mod"))
		}
		if filepath.Dir(d) == d {
			return "", "", fmt.Errorf("flagdocs: no go.mod above %s", dir)
		}
	}
}

// pkg is one parsed package of the module.
type pkg struct {
	// path is the import path as reflect reports it: "main" for a command.
	path  string
	name  string
	types map[string]typeDecl
}

// typeDecl is a type declaration with the imports of its file.
type typeDecl struct {
	spec    *ast.TypeSpec
	imports map[string]string // local name -> import path, in-module only
}

type loader struct {
	root, module string
	pkgs         map[string]*pkg // by directory
	docs         map[string]string
	undocumented []string
	seen         map[string]bool // "path.Type" visited
}

func (l *loader) dirOf(importPath string) (string, bool) {
	if importPath == l.module {
		return l.root, true
	}
	rel, ok := strings.CutPrefix(importPath, l.module+"/")
	if !ok {
		return "", false
	}
	return filepath.Join(l.root, filepath.FromSlash(rel)), true
}

func (l *loader) loadDir(dir string) (*pkg, error) {
	if p, ok := l.pkgs[dir]; ok {
		return p, nil
	}
	ctx := buildContext()
	bp, err := ctx.ImportDir(dir, 0)
	if err != nil {
		return nil, fmt.Errorf("flagdocs: %s: %w", dir, err)
	}
	rel, err := filepath.Rel(l.root, dir)
	if err != nil {
		return nil, err
	}
	p := &pkg{name: bp.Name, types: map[string]typeDecl{}, path: l.module}
	if rel != "." {
		p.path = l.module + "/" + filepath.ToSlash(rel)
	}
	if bp.Name == "main" {
		p.path = "main"
	}
	l.pkgs[dir] = p
	fset := token.NewFileSet()
	files := append(append([]string{}, bp.GoFiles...), bp.CgoFiles...)
	sort.Strings(files)
	for _, name := range files {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("flagdocs: %w", err)
		}
		imports := map[string]string{}
		for _, is := range f.Imports {
			path, err := strconv.Unquote(is.Path.Value)
			if err != nil {
				continue
			}
			idir, inModule := l.dirOf(path)
			if !inModule {
				continue // types of other modules are not followed
			}
			local := ""
			if is.Name != nil {
				local = is.Name.Name
			} else {
				ip, err := ctx.ImportDir(idir, build.ImportComment)
				if err != nil {
					return nil, fmt.Errorf("flagdocs: import %s: %w", path, err)
				}
				local = ip.Name
			}
			if local != "_" && local != "." {
				imports[local] = path
			}
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, s := range gd.Specs {
				ts := s.(*ast.TypeSpec)
				if _, dup := p.types[ts.Name.Name]; !dup {
					p.types[ts.Name.Name] = typeDecl{spec: ts, imports: imports}
				}
			}
		}
	}
	return p, nil
}

// resolve names the in-module type expr refers to from a file of p with
// imports; ok is false for builtin, unnamed and other modules' types.
func (l *loader) resolve(p *pkg, imports map[string]string, expr ast.Expr) (*pkg, string, bool, error) {
	switch e := expr.(type) {
	case *ast.StarExpr:
		return l.resolve(p, imports, e.X)
	case *ast.ParenExpr:
		return l.resolve(p, imports, e.X)
	case *ast.Ident:
		if _, ok := p.types[e.Name]; ok {
			return p, e.Name, true, nil
		}
	case *ast.SelectorExpr:
		x, ok := e.X.(*ast.Ident)
		if !ok {
			return nil, "", false, nil
		}
		path, ok := imports[x.Name]
		if !ok {
			return nil, "", false, nil
		}
		dir, _ := l.dirOf(path)
		q, err := l.loadDir(dir)
		if err != nil {
			return nil, "", false, err
		}
		if _, ok := q.types[e.Sel.Name]; ok {
			return q, e.Sel.Name, true, nil
		}
	}
	return nil, "", false, nil
}

// underlying follows a defined type to its struct literal.
func (l *loader) underlying(p *pkg, name string, depth int) (*ast.StructType, *pkg, map[string]string, error) {
	d := p.types[name]
	if depth > 16 || d.spec.TypeParams != nil {
		return nil, nil, nil, nil
	}
	if st, ok := d.spec.Type.(*ast.StructType); ok {
		return st, p, d.imports, nil
	}
	q, n, ok, err := l.resolve(p, d.imports, d.spec.Type)
	if err != nil || !ok {
		return nil, nil, nil, err
	}
	return l.underlying(q, n, depth+1)
}

// visit documents the fields of the named type and of the types they hold.
func (l *loader) visit(p *pkg, name string) error {
	d := p.types[name]
	if d.spec.Assign.IsValid() { // an alias: reflect names the target
		q, n, ok, err := l.resolve(p, d.imports, d.spec.Type)
		if err != nil || !ok {
			return err
		}
		return l.visit(q, n)
	}
	key := p.path + "." + name
	if l.seen[key] {
		return nil
	}
	l.seen[key] = true
	st, sp, imports, err := l.underlying(p, name, 0)
	if err != nil || st == nil {
		return err
	}
	for _, f := range st.Fields.List {
		var names []string
		for _, n := range f.Names {
			names = append(names, n.Name)
		}
		if len(names) == 0 { // embedded: named by its type
			t := f.Type
			if s, ok := t.(*ast.StarExpr); ok {
				t = s.X
			}
			switch e := t.(type) {
			case *ast.Ident:
				names = []string{e.Name}
			case *ast.SelectorExpr:
				names = []string{e.Sel.Name}
			}
		}
		if f.Tag != nil {
			if tag, err := strconv.Unquote(f.Tag.Value); err == nil {
				if y, _, _ := strings.Cut(reflect.StructTag(tag).Get("yaml"), ","); y == "-" {
					continue
				}
			}
		}
		exported := false
		for _, n := range names {
			exported = exported || ast.IsExported(n)
		}
		if !exported {
			continue
		}
		q, n, ok, err := l.resolve(sp, imports, f.Type)
		if err != nil {
			return err
		}
		section := false // a struct of the module: its fields are the settings
		if ok {
			st, _, _, err := l.underlying(q, n, 0)
			if err != nil {
				return err
			}
			section = st != nil
		}
		doc := firstParagraph(f.Doc)
		if doc == "" {
			doc = firstParagraph(f.Comment)
		}
		for _, name := range names {
			switch {
			case !ast.IsExported(name):
			case doc != "":
				l.docs[key+"."+name] = doc
			case !section:
				l.undocumented = append(l.undocumented, key+"."+name)
			}
		}
		if ok {
			if err := l.visit(q, n); err != nil {
				return err
			}
		}
	}
	return nil
}

// firstParagraph is the first paragraph of a doc comment on one line.
func firstParagraph(cg *ast.CommentGroup) string {
	if cg == nil {
		return ""
	}
	para, _, _ := strings.Cut(strings.TrimSpace(cg.Text()), "\n\n")
	return strings.Join(strings.Fields(para), " ")
}

func render(opt Options, pkgName string, docs map[string]string) ([]byte, error) {
	gen := opt.Generator
	if gen == "" {
		gen = DefaultGenerator
	}
	keys := make([]string, 0, len(docs))
	for k := range docs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated by %s; DO NOT EDIT.\n\n", gen)
	fmt.Fprintf(&b, "package %s\n\n", pkgName)
	fmt.Fprintf(&b, "// %s maps \"package path.Type.Field\" of every field of a struct reachable\n", opt.Var)
	fmt.Fprintf(&b, "// from %s to the first paragraph of the field's doc comment.\n", opt.Type)
	fmt.Fprintf(&b, "var %s = map[string]string{\n", opt.Var)
	for _, k := range keys {
		fmt.Fprintf(&b, "\t%s: %s,\n", strconv.Quote(k), strconv.Quote(docs[k]))
	}
	b.WriteString("}\n")
	src, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("flagdocs: format: %w", err)
	}
	return src, nil
}
