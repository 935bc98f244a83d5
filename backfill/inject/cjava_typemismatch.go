package inject

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/murphy-rl/murphy/compilefix/lang"
)

// initSite is a variable declared with one initialiser: its name and type
// as written, the replacement, the initialiser's code tokens [s, e).
type initSite struct {
	name, typ, repl string
	s, e            int
}

// typeMismatch gives a declared variable a literal of another type: C
// pointers a float, floating-point variables a string (a hard error),
// integers a string (GCC 14's int-conversion error: a soft choice); Java
// String variables a number, primitives a string.
func (c *cfile) typeMismatch(r *rand.Rand) (*plan, error) {
	var hard, soft []initSite
	c.lf.Root.Walk(func(n *lang.Node) bool {
		if n.Parent != nil && (n.Parent.Kind == "for_statement" || n.Parent.Kind == "enhanced_for_statement") {
			return true // a loop header's declaration
		}
		switch {
		case !c.java && n.Kind == "declaration":
			if s, isHard, ok := c.cInit(n); ok && isHard {
				hard = append(hard, s)
			} else if ok {
				soft = append(soft, s)
			}
		case c.java && (n.Kind == "local_variable_declaration" || n.Kind == "field_declaration"):
			if s, ok := c.javaInit(n); ok {
				hard = append(hard, s)
			}
		}
		return true
	})
	hard, soft = uncond(c, hard, func(cd initSite) int { return cd.s }), uncond(c, soft, func(cd initSite) int { return cd.s })
	if len(hard) == 0 || (c.cond(hard[0].s) && len(soft) > 0 && !c.cond(soft[0].s)) {
		hard = soft
	}
	k := pick(r, len(hard))
	if k < 0 {
		return nil, noSite(OpTypeMismatch, c.srcFile, "no initialised variable of a known type")
	}
	cd := hard[k]
	s, e := c.tok(cd.s).Start, c.tok(cd.e-1).End
	return &plan{
		edits: []edit{{start: s, end: e, text: cd.repl}}, at: s, expect: []int{s},
		desc: fmt.Sprintf("initialised `%s` (%s) with %s instead of %s at line %d", cd.name, cd.typ, cd.repl, c.text(s, e), c.line(s)),
	}, nil
}

// initOf is the one declarator of a declaration n, nil when it has
// several.
func initOf(n *lang.Node) *lang.Node {
	var d *lang.Node
	for _, ch := range n.Children {
		if ch.Field == "declarator" {
			if d != nil {
				return nil
			}
			d = ch
		}
	}
	return d
}

// cInit reads a C declaration `T name = value;` (pointers included): ok
// when its type is a pointer, floating-point or integer one.
func (c *cfile) cInit(n *lang.Node) (site initSite, hard, ok bool) {
	d, typ := initOf(n), n.Child("type")
	if d == nil || d.Kind != "init_declarator" || typ == nil || d.Child("value") == nil || d.Child("value").Kind == "initializer_list" {
		return site, false, false
	}
	id, stars := d.Child("declarator"), ""
	for id != nil && id.Kind == "pointer_declarator" {
		id, stars = id.Child("declarator"), stars+"*"
	}
	if id == nil || id.Kind != "identifier" {
		return site, false, false
	}
	var words []string
	for _, ch := range n.Children {
		if ch.Kind == "storage_class_specifier" || ch.Kind == "type_qualifier" || ch == typ {
			words = append(words, strings.Fields(ch.Text(c.src))...)
		}
	}
	site = initSite{name: id.Text(c.src), typ: strings.Join(words, " ")}
	if stars != "" {
		site.typ += " " + stars
	}
	value := d.Child("value")
	site.s, site.e = c.lf.CodeIn(value.Span())
	if site.s >= site.e {
		return site, false, false
	}
	init := c.lf.Text(value.Span())
	floating, numeric := false, typ.Kind == "primitive_type" || typ.Kind == "sized_type_specifier"
	for _, w := range strings.Fields(typ.Text(c.src)) {
		switch w {
		case "float", "double":
			floating = true
		case "void", "bool", "_Bool":
			numeric = false
		}
	}
	switch {
	case stars != "":
		site.repl = "1.5"
		return site, true, true
	case floating:
		site.repl = stringLit(init)
		return site, true, true
	case numeric:
		site.repl = stringLit(init)
		return site, false, true
	}
	return site, false, false
}

// javaInit reads a Java declaration `T name = value;` whose type is String
// or a primitive (not annotated, not an array).
func (c *cfile) javaInit(n *lang.Node) (initSite, bool) {
	d, typ := initOf(n), n.Child("type")
	if d == nil || typ == nil || d.Child("value") == nil || d.Child("dimensions") != nil || d.Child("value").Kind == "array_initializer" {
		return initSite{}, false
	}
	var words []string
	if mods := n.ChildOfKind("modifiers"); mods != nil {
		for _, m := range mods.Children {
			if m.Named { // an annotation
				return initSite{}, false
			}
			words = append(words, m.Text(c.src))
		}
	}
	value := d.Child("value")
	site := initSite{name: d.Child("name").Text(c.src), typ: strings.Join(append(words, typ.Text(c.src)), " ")}
	site.s, site.e = c.lf.CodeIn(value.Span())
	switch {
	case site.s >= site.e:
		return site, false
	case typ.Kind == "type_identifier" && typ.Text(c.src) == "String":
		site.repl = "42"
	case typ.Kind == "integral_type" || typ.Kind == "floating_point_type" || typ.Kind == "boolean_type":
		site.repl = stringLit(c.lf.Text(value.Span()))
	default:
		return site, false
	}
	return site, true
}
