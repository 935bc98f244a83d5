package lang

import (
	"go/ast"
	"strings"
)

// Function is a function or method definition, or a C prototype.
type Function struct {
	Name   string
	NameAt Span
	// Span is the whole definition, from its first specifier, modifier,
	// annotation or decorator (Go: from "func"; a comment before it is not
	// part of it) to its end.
	Span Span
	// Params is the parameter list, parentheses included.
	Params     Span
	Parameters []Param
	// OpenParams marks C's "()", which says nothing of the parameters
	// ("(void)" declares none).
	OpenParams bool
	// Results are the declared results: Go's result list; the return type
	// of C and Java (none for void, or a constructor); Python's return
	// annotation.
	Results []Param
	// Body is the body, braces included (C, Go, Java), Python's block;
	// empty for a prototype or a method without one (abstract, interface).
	Body Span
	// Static (C and Java static, Python @staticmethod), Method (Java, a
	// Python def in a class body, a Go method), Constructor (Java),
	// Override (Java @Override).
	Static, Method, Constructor, Override bool
	// Variadic: the last parameter collects the rest (C and Java "...", Go
	// "...T", Python *args).
	Variadic bool
	// Conditional (C): the definition lies in a preprocessor conditional
	// (File.InConditional).
	Conditional bool
	// Node is the definition's syntax node (C, Java, Python: for Python the
	// decorated_definition when there is one); Decl the Go declaration.
	Node *Node
	Decl *ast.FuncDecl
}

// Param is a parameter or a result.
type Param struct {
	// Name is "" for an unnamed one (a C prototype's, a Go result's).
	Name   string
	NameAt Span
	// Type is as written, white space collapsed ("const char *", "int[]",
	// "...int"); "" when none is written (Python); a Marker's "*" or "/".
	Type string
	// Default: a Python parameter with a default value. Rest: it collects
	// the remaining arguments (C and Java "...", Go "...T", Python *args and
	// **kwargs). Marker: Python's bare * or /, which is no parameter.
	Default, Rest, Marker bool
}

// Arity is the number of parameters (Python's markers not counted), -1
// for C's "()".
func (fn *Function) Arity() int {
	if fn.OpenParams {
		return -1
	}
	n := 0
	for _, p := range fn.Parameters {
		if !p.Marker {
			n++
		}
	}
	return n
}

// Defined reports whether the function has a body.
func (fn *Function) Defined() bool { return fn.Body.Len() > 0 }

// Functions are the file's function and method definitions, with C's
// prototypes (declarations outside function bodies), in source order.
func (f *File) Functions() []Function {
	switch f.Lang {
	case C:
		return f.cFunctions()
	case Java:
		return f.javaFunctions()
	case Python:
		return f.pythonFunctions()
	case Go:
		return f.goFunctions()
	}
	return nil
}

// FunctionAt is the innermost function whose body holds offset o, nil
// for none.
func (f *File) FunctionAt(o int) *Function {
	var best *Function
	fns := f.Functions()
	for i := range fns {
		fn := &fns[i]
		if fn.Body.Contains(o) && (best == nil || fn.Body.Start >= best.Body.Start) {
			best = fn
		}
	}
	return best
}

// Call is a call of a named function or method.
type Call struct {
	// Name is the called name: the identifier, or the member of a method
	// call (f in a.f(), a->f(), this.f()).
	Name   string
	NameAt Span
	// Receiver is the object of a method call (a in a.f()), empty for a
	// plain call.
	Receiver Span
	// Args is the argument list, parentheses included; Arguments the
	// arguments.
	Args      Span
	Arguments []Span
	// Node is the call's syntax node (C, Java, Python); Expr the Go call.
	Node *Node
	Expr *ast.CallExpr
}

// Calls are the calls of named functions and methods, in source order
// (calls through an expression, (*fp)(x) or f()(), are left out, as are
// Java's constructor calls).
func (f *File) Calls() []Call {
	if f.Lang == Go {
		return f.goCalls()
	}
	if f.Root == nil {
		return nil
	}
	var out []Call
	f.Root.Walk(func(n *Node) bool {
		var c *Call
		switch {
		case f.Lang == C && n.Kind == "call_expression":
			c = f.memberCall(n, "function", "field_expression", "argument", "field")
		case f.Lang == Python && n.Kind == "call":
			c = f.memberCall(n, "function", "attribute", "object", "attribute")
		case f.Lang == Java && n.Kind == "method_invocation":
			c = f.javaCall(n)
		}
		if c != nil {
			out = append(out, *c)
		}
		return true
	})
	return out
}

// memberCall reads a call whose callee (field fn) is an identifier or a
// member expression of kind member (object and name fields).
func (f *File) memberCall(n *Node, fn, member, object, name string) *Call {
	callee, args := n.Child(fn), n.Child("arguments")
	if callee == nil || args == nil {
		return nil
	}
	c := &Call{Node: n, Args: args.Span()}
	switch {
	case callee.Kind == "identifier":
		c.Name, c.NameAt = callee.Text(f.Src), callee.Span()
	case callee.Kind == member && callee.Child(object) != nil && callee.Child(name) != nil:
		id := callee.Child(name)
		c.Name, c.NameAt, c.Receiver = id.Text(f.Src), id.Span(), callee.Child(object).Span()
	default:
		return nil
	}
	c.Arguments = f.arguments(args)
	return c
}

func (f *File) javaCall(n *Node) *Call {
	name, args := n.Child("name"), n.Child("arguments")
	if name == nil || args == nil {
		return nil
	}
	c := &Call{Node: n, Name: name.Text(f.Src), NameAt: name.Span(), Args: args.Span(), Arguments: f.arguments(args)}
	if o := n.Child("object"); o != nil {
		c.Receiver = o.Span()
	}
	return c
}

// arguments are the spans of an argument list's arguments (a Python
// generator argument, f(x for x in xs), is the one argument).
func (f *File) arguments(args *Node) []Span {
	if args.Kind == "generator_expression" {
		return []Span{args.Span()}
	}
	var out []Span
	for _, a := range args.NamedChildren() {
		if !commentKinds[a.Kind] {
			out = append(out, a.Span())
		}
	}
	return out
}

// squash is s with runs of white space collapsed.
func squash(s string) string { return strings.Join(strings.Fields(s), " ") }
