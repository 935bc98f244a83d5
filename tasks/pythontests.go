package tasks

import (
	"fmt"
	"strings"

	"github.com/murphy-rl/murphy/compilefix/lang"
)

// Python test code taken apart with compilefix/lang (tree-sitter's Python
// grammar): HumanEval's `def check(candidate): assert ...` and MBPP's
// `assert f(ARGS) == EXPECTED` lines become test cases. Nothing is ever
// evaluated.

// parsePython parses src, which must be valid Python.
func parsePython(src string) (*lang.File, error) {
	f, err := lang.Parse(lang.Python, []byte(src))
	if err != nil {
		return nil, err
	}
	if f.Err != nil {
		return nil, fmt.Errorf("not valid Python: %w", f.Err)
	}
	return f, nil
}

// statements are the statements directly under a module or block.
func statements(n *lang.Node) []*lang.Node {
	var out []*lang.Node
	for _, c := range n.NamedChildren() {
		if c.Kind != "comment" {
			out = append(out, c)
		}
	}
	return out
}

// splitAssert takes apart one assert statement over function fn. It
// returns args and expected for `assert fn(ARGS) == EXPECTED[, msg]`, or
// the assertion expression alone (message dropped) for any other form.
// ok is false when the statement is not an assert.
func splitAssert(f *lang.File, st *lang.Node, fn string) (args, expected, expr string, value, ok bool) {
	if st.Kind != "assert_statement" {
		return "", "", "", false, false
	}
	parts := st.NamedChildren()
	if len(parts) == 0 {
		return "", "", "", false, false
	}
	e := parts[0]
	expr = e.Text(f.Src)
	// fn(...) == rest, one comparison, rest not calling fn again.
	if e.Kind != "comparison_operator" || len(e.Children) != 3 || e.Children[1].Kind != "==" {
		return "", "", expr, false, true
	}
	call, rest := e.Children[0], e.Children[2]
	callee, argList := call.Child("function"), call.Child("arguments")
	if call.Kind != "call" || callee == nil || argList == nil || callee.Kind != "identifier" || callee.Text(f.Src) != fn || mentions(f, rest, fn) {
		return "", "", expr, false, true
	}
	inner := argList.Text(f.Src)
	if argList.Kind == "argument_list" {
		inner = inner[1 : len(inner)-1]
	}
	return strings.TrimSpace(inner), rest.Text(f.Src), expr, true, true
}

// mentions reports whether n names fn.
func mentions(f *lang.File, n *lang.Node, fn string) bool {
	found := false
	n.Walk(func(m *lang.Node) bool {
		found = found || m.Kind == "identifier" && m.Text(f.Src) == fn
		return !found
	})
	return found
}

// checkSplit is the result of splitting HumanEval test code.
type checkSplit struct {
	param string      // the check function's parameter name
	tests []splitCase // one per assert that uses the parameter
	setup string      // module-level code other than check()
}

type splitCase struct {
	value    bool
	args     string
	expected string
	expr     string
}

// checkFunction is the module-level `def check(PARAM):` with its body on
// lines of its own, and PARAM.
func checkFunction(f *lang.File) (*lang.Node, string, error) {
	for _, st := range statements(f.Root) {
		if st.Kind != "function_definition" || st.Child("name").Text(f.Src) != "check" || st.Child("return_type") != nil {
			continue
		}
		ps := statements(st.Child("parameters"))
		body := st.Child("body")
		if len(ps) != 1 || ps[0].Kind != "identifier" || f.Line(body.Start) == f.Line(st.Start) {
			continue
		}
		return st, ps[0].Text(f.Src), nil
	}
	return nil, "", fmt.Errorf("no `def check(candidate):` at module level")
}

// splitCheck splits `def check(candidate): assert ...` into cases. It fails
// when the body holds anything but assert statements (loops, helpers,
// imports): such code is kept whole as one check.
func splitCheck(src string) (*checkSplit, error) {
	f, err := parsePython(src)
	if err != nil {
		return nil, err
	}
	def, param, err := checkFunction(f)
	if err != nil {
		return nil, err
	}
	cs := &checkSplit{param: param}
	for _, st := range statements(def.Child("body")) {
		args, expected, expr, value, ok := splitAssert(f, st, param)
		if !ok {
			return nil, fmt.Errorf("check() holds a statement other than assert: %.40q", st.Text(f.Src))
		}
		if !mentions(f, st, param) {
			continue // `assert True, "..."` tests nothing
		}
		cs.tests = append(cs.tests, splitCase{value: value, args: args, expected: expected, expr: expr})
	}
	if len(cs.tests) == 0 {
		return nil, fmt.Errorf("check() asserts nothing about %s", param)
	}
	defStart := f.LineStart(f.Line(def.Start))
	bodyEnd := f.LineStart(f.Line(def.End) + 1)
	cs.setup = strings.TrimSpace(src[:defStart] + src[bodyEnd:])
	return cs, nil
}

// notEntryPoints are the callables an MBPP test wraps the entry point's
// call in.
var notEntryPoints = map[string]bool{
	"set": true, "sorted": true, "list": true, "tuple": true, "abs": true, "round": true, "len": true, "str": true,
	"int": true, "float": true, "frozenset": true, "dict": true, "bool": true, "isclose": true, "math": true,
}

// callee returns the name called by `assert NAME(...`, the function an
// MBPP-style test exercises: the first call, in source order, of a name or
// method that is not a wrapper (set(...), math.isclose(...)).
func callee(stmt string) (string, error) {
	f, err := parsePython(stmt)
	if err != nil {
		return "", err
	}
	name := ""
	f.Root.Walk(func(n *lang.Node) bool {
		if name != "" {
			return false
		}
		if n.Kind != "call" {
			return true
		}
		fn := n.Child("function")
		if fn != nil && fn.Kind == "attribute" {
			fn = fn.Child("attribute")
		}
		if fn != nil && fn.Kind == "identifier" && !notEntryPoints[fn.Text(f.Src)] {
			name = fn.Text(f.Src)
		}
		return true
	})
	if name == "" {
		return "", fmt.Errorf("no function call in %.60q", stmt)
	}
	return name, nil
}
