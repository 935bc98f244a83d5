package lang

// javaFunctions are Java's method and constructor declarations.
func (f *File) javaFunctions() []Function {
	var out []Function
	f.Root.Walk(func(n *Node) bool {
		if n.Kind != "method_declaration" && n.Kind != "constructor_declaration" {
			return true
		}
		name, params := n.Child("name"), n.Child("parameters")
		if name == nil || params == nil {
			return true
		}
		fn := Function{Name: name.Text(f.Src), NameAt: name.Span(), Span: n.Span(), Params: params.Span(), Node: n,
			Method: true, Constructor: n.Kind == "constructor_declaration"}
		if b := n.Child("body"); b != nil {
			fn.Body = b.Span()
		}
		if t := n.Child("type"); t != nil && t.Kind != "void_type" {
			fn.Results = []Param{{Type: squash(t.Text(f.Src))}}
		}
		if mods := n.ChildOfKind("modifiers"); mods != nil {
			for _, m := range mods.Children {
				switch m.Kind {
				case "static":
					fn.Static = true
				case "marker_annotation", "annotation":
					if a := m.Child("name"); a != nil && (a.Text(f.Src) == "Override" || a.Text(f.Src) == "java.lang.Override") {
						fn.Override = true
					}
				}
			}
		}
		for _, p := range params.NamedChildren() {
			switch p.Kind {
			case "formal_parameter":
				fn.Parameters = append(fn.Parameters, f.javaParam(p, p.Child("name"), false))
			case "spread_parameter":
				var id *Node
				if v := p.ChildOfKind("variable_declarator"); v != nil {
					id = v.Child("name")
				}
				fn.Parameters = append(fn.Parameters, f.javaParam(p, id, true))
				fn.Variadic = true
			}
		}
		out = append(out, fn)
		return true // methods of local and anonymous classes
	})
	return out
}

// javaParam reads a parameter whose name is id: its type is the rest of
// its text.
func (f *File) javaParam(p, id *Node, rest bool) Param {
	if id == nil {
		return Param{Type: squash(p.Text(f.Src)), Rest: rest}
	}
	typ := string(f.Src[p.Start:id.Start]) + string(f.Src[id.End:p.End])
	return Param{Name: id.Text(f.Src), NameAt: id.Span(), Type: squash(typ), Rest: rest}
}
