package lang

import (
	"errors"
	"strings"

	sitter "github.com/tree-sitter/go-tree-sitter"
)

// Node is a node of a C, Java or Python syntax tree: tree-sitter's, copied
// into Go values so that it needs no closing and may be shared.
type Node struct {
	// Kind is the grammar's node type ("function_definition",
	// "identifier"; for an anonymous node its text: "(", "return").
	Kind string
	// Field is the node's field name in its parent ("name", "body"), ""
	// for none.
	Field string
	// Start and End are byte offsets.
	Start, End int
	// Named tells a named node from an anonymous one (a keyword or
	// punctuator); Error marks a part the parser could not read, Missing a
	// zero-width token it assumed to recover.
	Named, Error, Missing bool
	Parent                *Node
	Children              []*Node
}

// Span is the node's byte range.
func (n *Node) Span() Span { return Span{n.Start, n.End} }

// Text is the node's source.
func (n *Node) Text(src []byte) string { return string(src[n.Start:n.End]) }

// Child is the first child with field name field, nil for none.
func (n *Node) Child(field string) *Node {
	for _, c := range n.Children {
		if c.Field == field {
			return c
		}
	}
	return nil
}

// ChildOfKind is the first child of kind k, nil for none.
func (n *Node) ChildOfKind(k string) *Node {
	for _, c := range n.Children {
		if c.Kind == k {
			return c
		}
	}
	return nil
}

// NamedChildren are the named children, in order.
func (n *Node) NamedChildren() []*Node {
	var out []*Node
	for _, c := range n.Children {
		if c.Named {
			out = append(out, c)
		}
	}
	return out
}

// Walk calls fn for n and its descendants in source order; where fn
// returns false, the node's children are skipped.
func (n *Node) Walk(fn func(*Node) bool) {
	if !fn(n) {
		return
	}
	for _, c := range n.Children {
		c.Walk(fn)
	}
}

// Ancestor is the nearest proper ancestor of one of the kinds, nil for
// none.
func (n *Node) Ancestor(kinds ...string) *Node {
	for p := n.Parent; p != nil; p = p.Parent {
		for _, k := range kinds {
			if p.Kind == k {
				return p
			}
		}
	}
	return nil
}

// parseTree parses f.Src with tree-sitter and fills Root, Tokens and Err.
func (f *File) parseTree(g *grammar) error {
	p := sitter.NewParser()
	defer p.Close()
	if err := p.SetLanguage(g.lang); err != nil {
		return err
	}
	root, err := parseSpan(p, g, f.Src, 0)
	if err != nil {
		return err
	}
	f.Root = root
	f.Tokens = f.treeTokens(f.Root, nil)
	f.Err = f.firstError(f.Root)
	if f.Err != nil && f.Lang == Python {
		if err := f.parsePythonPieces(p, g); err != nil {
			return err
		}
	}
	return nil
}

// parseSpan parses src[base:] as one file; its nodes carry offsets into
// src.
func parseSpan(p *sitter.Parser, g *grammar, src []byte, base int) (*Node, error) {
	tree := p.Parse(src[base:], nil)
	if tree == nil {
		return nil, errors.New("lang: tree-sitter returned no tree")
	}
	defer tree.Close()
	return copyTree(tree, g, base), nil
}

// parsePythonPieces parses a Python file that has a syntax error again,
// piece by piece: each top-level def, class or decorated definition (a
// line at column 0 starting one, outside a string) on its own, so that an
// error (an unclosed bracket, above all) stays in its piece instead of
// swallowing the definitions after it, as one parse of the whole file
// lets it do.
func (f *File) parsePythonPieces(p *sitter.Parser, g *grammar) error {
	starts := []int{0}
	for _, t := range f.Tokens {
		if t.Col == 0 && t.Start > 0 && (t.Text == "def" || t.Text == "class" || t.Text == "async" || t.Text == "@") {
			starts = append(starts, t.Start)
		}
	}
	if len(starts) == 1 {
		return nil
	}
	root := &Node{Kind: "module", Named: true, End: len(f.Src)}
	for i, s := range starts {
		end := len(f.Src)
		if i+1 < len(starts) {
			end = starts[i+1]
		}
		piece, err := parseSpan(p, g, f.Src[:end], s)
		if err != nil {
			return err
		}
		for _, c := range piece.Children {
			c.Parent = root
			root.Children = append(root.Children, c)
		}
	}
	f.Root = root
	f.Tokens = f.treeTokens(f.Root, nil)
	f.Err = f.firstError(f.Root)
	return nil
}

// copyTree copies a tree-sitter tree into Nodes, walking it once with a
// cursor.
func copyTree(tree *sitter.Tree, g *grammar, base int) *Node {
	c := tree.Walk()
	defer c.Close()
	node := func() *Node {
		tn := c.Node()
		n := &Node{Start: base + int(tn.StartByte()), End: base + int(tn.EndByte())}
		// Named and Error follow from the kind: fewer calls into C.
		if id := int(tn.KindId()); id < len(g.kinds) {
			n.Kind, n.Named = g.kinds[id], g.named[id]
		} else {
			n.Kind, n.Named, n.Error = "ERROR", true, true
		}
		n.Missing = n.Start == n.End && tn.IsMissing()
		if id := int(c.FieldId()); id < len(g.fields) {
			n.Field = g.fields[id]
		}
		return n
	}
	root := node()
	stack := []*Node{root}
	adopt := func() {
		n := node()
		parent := stack[len(stack)-1]
		n.Parent = parent
		parent.Children = append(parent.Children, n)
		stack = append(stack, n)
	}
	for {
		if c.GotoFirstChild() {
			adopt()
			continue
		}
		for {
			stack = stack[:len(stack)-1]
			if c.GotoNextSibling() {
				adopt()
				break
			}
			if !c.GotoParent() {
				return root
			}
		}
	}
}

// Node kinds read as one token whatever their children.
var (
	commentKinds = wordSet("comment line_comment block_comment")
	stringKinds  = wordSet("string_literal char_literal system_lib_string raw_string_literal character_literal string")
	identKinds   = wordSet("identifier field_identifier type_identifier statement_identifier namespace_identifier")
	numberKinds  = wordSet(`number_literal integer float decimal_integer_literal hex_integer_literal octal_integer_literal
		binary_integer_literal decimal_floating_point_literal hex_floating_point_literal`)
)

// treeTokens appends the tokens of n to out.
func (f *File) treeTokens(n *Node, out []Token) []Token {
	if n.Missing || n.Start == n.End {
		return out
	}
	k, ok := f.tokenKind(n)
	if !ok {
		for _, c := range n.Children {
			out = f.treeTokens(c, out)
		}
		return out
	}
	text := n.Text(f.Src)
	if k == Punct && strings.TrimSpace(text) == "" || n.Kind == "line_continuation" {
		return out // the newline ending a directive, a Python line continuation
	}
	line, col := f.position(n.Start)
	return append(out, Token{Kind: k, Text: text, Start: n.Start, End: n.End, Line: line, Col: col})
}

// tokenKind is the kind of the token n is, ok false when n is not one
// token (its children are).
func (f *File) tokenKind(n *Node) (Kind, bool) {
	switch {
	case commentKinds[n.Kind]:
		return Comment, true
	case stringKinds[n.Kind] && n.Named:
		return String, true
	case len(n.Children) > 0:
		return 0, false
	}
	text := string(f.Src[n.Start:n.End])
	switch {
	case n.Error:
	case identKinds[n.Kind] && IsKeyword(f.Lang, text) && n.Ancestor("ERROR") != nil:
		return Keyword, true // a keyword the parser, recovering, read as a name
	case identKinds[n.Kind]:
		return Ident, true
	case numberKinds[n.Kind]:
		return Number, true
	case n.Kind == "preproc_arg" || n.Kind == "preproc_directive" || !n.Named && len(text) > 1 && text[0] == '#':
		return Directive, true
	case !n.Named && isWord(text):
		return Keyword, true
	case isWord(text) && IsKeyword(f.Lang, text):
		return Keyword, true // true, None, this, C's primitive types
	}
	if isWord(text) {
		return Ident, true
	}
	return Punct, true
}

// hasError reports whether n holds a part the parser could not read.
func hasError(n *Node) bool {
	bad := false
	n.Walk(func(m *Node) bool {
		bad = bad || m.Error || m.Missing
		return !bad
	})
	return bad
}

// firstError is the first node the parser could not read, as a
// *SyntaxError; nil when there is none.
func (f *File) firstError(root *Node) error {
	var bad *Node
	root.Walk(func(n *Node) bool {
		if bad != nil {
			return false
		}
		if n.Error || n.Missing {
			bad = n
			return false
		}
		return true
	})
	if bad == nil {
		return nil
	}
	line, col := f.position(bad.Start)
	if bad.Missing {
		return &SyntaxError{Line: line, Col: col, Msg: "missing " + bad.Kind}
	}
	text := bad.Text(f.Src)
	if len(text) > 24 {
		text = text[:24] + "..."
	}
	return &SyntaxError{Line: line, Col: col, Msg: "unexpected " + quote(text)}
}

func quote(s string) string {
	if s == "" {
		return "end of file"
	}
	return "`" + strings.ReplaceAll(s, "\n", `\n`) + "`"
}

// addNewlines inserts Python's logical line ends into tokens: a Newline
// where a line break follows a code token outside brackets (not a
// backslash continuation: comments and strings are tokens already), and
// one at the end of the file.
func addNewlines(src []byte, tokens []Token) []Token {
	out := make([]Token, 0, len(tokens)+len(tokens)/4)
	depth := 0
	last := -1 // index in out of the last code token
	flush := func(until int) {
		if last < 0 || depth > 0 {
			return
		}
		t := out[last]
		if nl := lineBreak(src, t.End, until); nl >= 0 {
			out = append(out, Token{Kind: Newline, Text: "\n", Start: nl, End: nl + 1, Line: t.Line + strings.Count(t.Text, "\n"), Col: nl - lineStartOf(src, nl)})
			last = -1
		}
	}
	for _, t := range tokens {
		if t.Kind == Comment {
			out = append(out, t)
			continue
		}
		flush(t.Start)
		out = append(out, t)
		last = len(out) - 1
		if t.Kind == Punct {
			switch t.Text {
			case "(", "[", "{":
				depth++
			case ")", "]", "}":
				depth = max(depth-1, 0)
			}
		}
	}
	depth = 0
	flush(len(src))
	if last >= 0 {
		t := out[last]
		out = append(out, Token{Kind: Newline, Start: len(src), End: len(src), Line: t.Line + strings.Count(t.Text, "\n"), Col: len(src) - lineStartOf(src, len(src))})
	}
	return out
}

// lineBreak is the offset of the first line break in src[from:to] that is
// not a backslash continuation (comments skipped), -1 for none.
func lineBreak(src []byte, from, to int) int {
	for j := from; j < to; j++ {
		switch src[j] {
		case '\\':
			if j+1 < to && src[j+1] == '\n' {
				j++
			} else if j+2 < to && src[j+1] == '\r' && src[j+2] == '\n' {
				j += 2
			}
		case '#':
			for j+1 < to && src[j+1] != '\n' {
				j++
			}
		case '\n':
			return j
		}
	}
	return -1
}

func lineStartOf(src []byte, o int) int {
	for o > 0 && src[o-1] != '\n' {
		o--
	}
	return o
}

// conditionals are the spans of C's preprocessor conditionals, each from
// after its #if to the end of its #endif (to the end of the file when it has
// none), include guards (#ifndef X followed by #define X) left out.
func conditionals(code []Token) []Span {
	type open struct {
		start int
		guard bool
	}
	var stack []open
	var out []Span
	for i, t := range code {
		if t.Kind != Directive {
			continue
		}
		switch t.Text {
		case "#if", "#ifdef", "#ifndef":
			guard := t.Text == "#ifndef" && i+3 < len(code) && code[i+2].Text == "#define" &&
				code[i+1].Kind == Ident && code[i+3].Text == code[i+1].Text
			stack = append(stack, open{t.End, guard})
		case "#endif":
			if n := len(stack); n > 0 {
				if !stack[n-1].guard {
					out = append(out, Span{stack[n-1].start, t.End})
				}
				stack = stack[:n-1]
			}
		}
	}
	for _, o := range stack {
		if !o.guard && len(code) > 0 {
			out = append(out, Span{o.start, code[len(code)-1].End})
		}
	}
	return out
}
