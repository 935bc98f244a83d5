package lang

import "strings"

// cFunctions are C's function definitions and prototypes outside function
// bodies.
func (f *File) cFunctions() []Function {
	var out []Function
	f.Root.Walk(func(n *Node) bool {
		switch n.Kind {
		case "compound_statement":
			return false // no definitions and no prototypes of interest inside bodies
		case "function_definition":
			if fn, ok := f.cFunction(n, n.Child("declarator")); ok {
				fn.Body = n.Child("body").Span()
				out = append(out, fn)
			}
			return false
		case "declaration":
			for _, d := range n.Children {
				if d.Field != "declarator" {
					continue
				}
				if fn, ok := f.cFunction(n, d); ok {
					out = append(out, fn)
				}
			}
			return false
		}
		return true
	})
	return out
}

// cFunction reads the function declarator d of the definition or
// declaration n; ok is false when d declares no named function (a
// variable, a function pointer).
func (f *File) cFunction(n, d *Node) (Function, bool) {
	stars := ""
	for d != nil && (d.Kind == "pointer_declarator" || d.Kind == "attributed_declarator") {
		if d.Kind == "pointer_declarator" {
			stars += "*"
		}
		d = d.Child("declarator")
	}
	if d == nil || d.Kind != "function_declarator" || n.Child("body") == nil && n.Kind == "function_definition" {
		return Function{}, false
	}
	name, params := d.Child("declarator"), d.Child("parameters")
	if name == nil || name.Kind != "identifier" || params == nil || hasError(d) {
		return Function{}, false // a header the grammar cannot read: a macro in it
	}
	fn := Function{Name: name.Text(f.Src), NameAt: name.Span(), Span: n.Span(), Params: params.Span(), Node: n,
		Conditional: f.InConditional(n.Start)}
	var quals []string
	for _, c := range n.Children {
		switch {
		case c.Kind == "storage_class_specifier" && c.Text(f.Src) == "static":
			fn.Static = true
		case c.Kind == "type_qualifier":
			quals = append(quals, c.Text(f.Src))
		}
	}
	if t := n.Child("type"); t != nil {
		typ := squash(strings.Join(append(quals, t.Text(f.Src)), " "))
		if stars != "" {
			typ += " " + stars
		}
		if typ != "void" {
			fn.Results = []Param{{Type: typ}}
		}
	}
	fn.Parameters, fn.OpenParams, fn.Variadic = f.cParams(params)
	return fn, true
}

func (f *File) cParams(list *Node) (ps []Param, open, variadic bool) {
	decls := list.NamedChildren()
	var kept []*Node
	for _, p := range decls {
		if !commentKinds[p.Kind] {
			kept = append(kept, p)
		}
	}
	switch {
	case len(kept) == 0:
		return nil, true, false
	case len(kept) == 1 && kept[0].Kind == "parameter_declaration" && kept[0].Child("declarator") == nil &&
		squash(kept[0].Text(f.Src)) == "void":
		return nil, false, false
	}
	for _, p := range kept {
		if p.Kind == "variadic_parameter" {
			ps = append(ps, Param{Type: "...", Rest: true})
			variadic = true
			continue
		}
		ps = append(ps, f.declParam(p))
	}
	return ps, false, variadic
}

// declParam reads a C parameter_declaration: the name is the identifier
// its declarator chain ends in, the type the rest of its text.
func (f *File) declParam(p *Node) Param {
	d := p.Child("declarator")
	for d != nil && d.Kind != "identifier" {
		next := d.Child("declarator")
		if next == nil && d.Kind == "parenthesized_declarator" && len(d.NamedChildren()) == 1 {
			next = d.NamedChildren()[0]
		}
		d = next
	}
	if d == nil {
		return Param{Type: squash(p.Text(f.Src))}
	}
	typ := string(f.Src[p.Start:d.Start]) + string(f.Src[d.End:p.End])
	return Param{Name: d.Text(f.Src), NameAt: d.Span(), Type: squash(typ)}
}
