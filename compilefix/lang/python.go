package lang

// pythonFunctions are Python's function definitions, methods included.
func (f *File) pythonFunctions() []Function {
	var out []Function
	f.Root.Walk(func(n *Node) bool {
		if n.Kind != "function_definition" {
			return true
		}
		name, params, body := n.Child("name"), n.Child("parameters"), n.Child("body")
		if name == nil || params == nil || body == nil {
			return true
		}
		outer := n
		if n.Parent != nil && n.Parent.Kind == "decorated_definition" {
			outer = n.Parent
		}
		fn := Function{Name: name.Text(f.Src), NameAt: name.Span(), Span: outer.Span(), Params: params.Span(),
			Body: body.Span(), Node: outer}
		if r := n.Child("return_type"); r != nil {
			fn.Results = []Param{{Type: squash(r.Text(f.Src))}}
		}
		if p := outer.Parent; p != nil && p.Kind == "block" && p.Parent != nil && p.Parent.Kind == "class_definition" {
			fn.Method = true
		}
		for _, d := range outer.Children {
			if d.Kind == "decorator" && squash(d.Text(f.Src)) == "@staticmethod" {
				fn.Static = true
			}
		}
		for _, p := range params.NamedChildren() {
			if commentKinds[p.Kind] {
				continue
			}
			pp := f.pythonParam(p)
			fn.Variadic = fn.Variadic || pp.Rest && p.Kind == "list_splat_pattern"
			fn.Parameters = append(fn.Parameters, pp)
		}
		out = append(out, fn)
		return true // nested definitions
	})
	return out
}

// pythonParam reads one parameter node.
func (f *File) pythonParam(p *Node) Param {
	switch p.Kind {
	case "identifier":
		return Param{Name: p.Text(f.Src), NameAt: p.Span()}
	case "keyword_separator", "positional_separator":
		return Param{Marker: true, Type: p.Text(f.Src)}
	case "list_splat_pattern", "dictionary_splat_pattern":
		pp := Param{Rest: true}
		if id := p.ChildOfKind("identifier"); id != nil {
			pp.Name, pp.NameAt = id.Text(f.Src), id.Span()
		}
		return pp
	}
	// typed_parameter, default_parameter, typed_default_parameter
	pp := Param{Default: p.Child("value") != nil}
	if t := p.Child("type"); t != nil {
		pp.Type = squash(t.Text(f.Src))
	}
	id := p.Child("name")
	if id == nil && len(p.Children) > 0 {
		id = p.Children[0] // typed_parameter: the name (or a splat) comes first
	}
	if id != nil {
		if id.Kind == "list_splat_pattern" || id.Kind == "dictionary_splat_pattern" {
			pp.Rest = true
			id = id.ChildOfKind("identifier")
		}
		if id != nil && id.Kind == "identifier" {
			pp.Name, pp.NameAt = id.Text(f.Src), id.Span()
		}
	}
	return pp
}
