package lang

import (
	"fmt"
	"go/ast"
	"go/token"
	"sort"
)

// Kind is the kind of a token.
type Kind uint8

// Token kinds.
const (
	// Ident is an identifier: a variable, function, type, field or label
	// name.
	Ident Kind = iota
	// Keyword is a keyword where the parse reads one (the literals true,
	// false, null, None included).
	Keyword
	// Number is a numeric literal.
	Number
	// String is a string or character literal, whole: prefix, quotes and
	// interpolations included (a C #include's <path> too).
	String
	// Punct is an operator or punctuator.
	Punct
	// Comment is a comment.
	Comment
	// Directive is a C preprocessor directive's name ("#include",
	// "#ifdef") or a macro's replacement text, which the grammar does not
	// read further.
	Directive
	// Newline ends a logical line: Python's NEWLINE, Go's implicit
	// semicolon. Its Text is "\n" ("" at the end of the file).
	Newline
)

var kindNames = [...]string{"ident", "keyword", "number", "string", "punct", "comment", "directive", "newline"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", k)
}

// Token is one token of a file.
type Token struct {
	Kind Kind
	Text string
	// Start and End are byte offsets: Text is Src[Start:End] (a Newline is
	// the "\n" it stands for).
	Start, End int
	// Line is 1-based, Col the 0-based byte column of Start.
	Line, Col int
}

// Span is a byte range [Start, End) of a file.
type Span struct{ Start, End int }

// Len is the span's length in bytes.
func (s Span) Len() int { return s.End - s.Start }

// Contains reports whether offset o is in the span.
func (s Span) Contains(o int) bool { return s.Start <= o && o < s.End }

// SyntaxError is where a parse found the file not to be in its language.
type SyntaxError struct {
	Line, Col int // 1-based line, 0-based byte column
	Msg       string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("%d:%d: %s", e.Line, e.Col, e.Msg) }

// File is a parsed source file.
type File struct {
	Lang Language
	Src  []byte
	// Tokens are every token in source order, comments included.
	Tokens []Token
	// Code are the tokens without comments.
	Code []Token
	// Root is the syntax tree (C, Java, Python); nil for Go.
	Root *Node
	// Go and Fset are the Go syntax tree (go/parser, with comments and
	// object resolution), for Go only.
	Go   *ast.File
	Fset *token.FileSet
	// Err is the first syntax error (a *SyntaxError), nil when the file
	// parses cleanly. Both parsers recover: the rest of File is filled in
	// either way.
	Err error

	match      []int // code index of the matching bracket, -1 for none
	depth      []int // bracket depth before each code token
	lineStarts []int
	conds      []Span // C: preprocessor conditional branches, include guards aside
}

// Parse reads src as a file of l. Syntax errors do not fail it (see
// File.Err); only an unsupported language does.
func Parse(l Language, src []byte) (*File, error) {
	f := &File{Lang: l, Src: src}
	f.lineStarts = lineStarts(src)
	switch l {
	case Go:
		f.parseGo()
	case C, Java, Python:
		if err := f.parseTree(grammarOf(l)); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("lang: unsupported language %q", l)
	}
	if l == Python {
		f.Tokens = addNewlines(f.Src, f.Tokens)
	}
	for _, t := range f.Tokens {
		if t.Kind != Comment {
			f.Code = append(f.Code, t)
		}
	}
	f.match, f.depth = matchBrackets(f.Code)
	if l == C {
		f.conds = conditionals(f.Code)
	}
	return f, nil
}

func lineStarts(src []byte) []int {
	starts := []int{0}
	for i, c := range src {
		if c == '\n' && i+1 < len(src) {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// Line is the 1-based line of offset o.
func (f *File) Line(o int) int {
	return sort.Search(len(f.lineStarts), func(i int) bool { return f.lineStarts[i] > o })
}

// LineStart is the offset where line n (1-based) starts.
func (f *File) LineStart(n int) int {
	switch {
	case n < 1:
		return 0
	case n > len(f.lineStarts):
		return len(f.Src)
	}
	return f.lineStarts[n-1]
}

// Lines is the number of lines (a last line without a newline counts).
func (f *File) Lines() int { return len(f.lineStarts) }

func (f *File) position(o int) (line, col int) {
	line = f.Line(o)
	return line, o - f.lineStarts[line-1]
}

// Text is the source of s.
func (f *File) Text(s Span) string { return string(f.Src[s.Start:s.End]) }

// Match is the code index of the bracket matching code token i (( [ {
// and their closers), -1 when there is none.
func (f *File) Match(i int) int {
	if i < 0 || i >= len(f.match) {
		return -1
	}
	return f.match[i]
}

// Depth is the bracket depth at code token i: the brackets open before it
// (a closer has its opener's depth).
func (f *File) Depth(i int) int { return f.depth[i] }

// CodeAt is the index of the code token starting at offset o, -1 for none.
func (f *File) CodeAt(o int) int {
	i := sort.Search(len(f.Code), func(i int) bool { return f.Code[i].Start >= o })
	if i < len(f.Code) && f.Code[i].Start == o && f.Code[i].Kind != Newline {
		return i
	}
	return -1
}

// CodeIn is the range [lo, hi) of the code tokens that lie in s.
func (f *File) CodeIn(s Span) (lo, hi int) {
	lo = sort.Search(len(f.Code), func(i int) bool { return f.Code[i].Start >= s.Start })
	hi = sort.Search(len(f.Code), func(i int) bool { return f.Code[i].End > s.End || f.Code[i].Start >= s.End })
	return lo, max(lo, hi)
}

// Names are the identifiers the file spells (Ident tokens).
func (f *File) Names() map[string]bool {
	m := map[string]bool{}
	for _, t := range f.Code {
		if t.Kind == Ident {
			m[t.Text] = true
		}
	}
	return m
}

// Mask returns a copy of the source with every comment and string or
// character literal blanked (each byte a space, line ends kept), so that
// what remains is code at the offsets it had.
func (f *File) Mask() []byte {
	out := append([]byte(nil), f.Src...)
	for _, t := range f.Tokens {
		if t.Kind != Comment && t.Kind != String {
			continue
		}
		for i := t.Start; i < t.End; i++ {
			if out[i] != '\n' && out[i] != '\r' {
				out[i] = ' '
			}
		}
	}
	return out
}

// InConditional reports whether offset o lies in a branch of a C
// preprocessor conditional (#if, #ifdef, #ifndef, #elif, #else) other than
// an include guard: code there may not be compiled. Always false for the
// other languages.
func (f *File) InConditional(o int) bool {
	for _, s := range f.conds {
		if s.Contains(o) {
			return true
		}
	}
	return false
}

// LogicalLine is a logical line (Python, Go): the code tokens [First, End), the
// Newline that ends it at End.
type LogicalLine struct {
	First, End int
	// Indent is the column of the first token, tabs to multiples of 8 (as
	// Python counts them).
	Indent int
}

// LogicalLines are the file's logical lines, split at Newline tokens (for
// C and Java, which have none, the whole file is one).
func (f *File) LogicalLines() []LogicalLine {
	var out []LogicalLine
	s := 0
	for i, t := range f.Code {
		if t.Kind != Newline {
			continue
		}
		if i > s {
			out = append(out, LogicalLine{First: s, End: i, Indent: f.indent(f.Code[s].Start)})
		}
		s = i + 1
	}
	if s < len(f.Code) {
		out = append(out, LogicalLine{First: s, End: len(f.Code), Indent: f.indent(f.Code[s].Start)})
	}
	return out
}

// indent is the column of offset o with tabs expanded to multiples of 8.
func (f *File) indent(o int) int {
	col := 0
	for _, c := range f.Src[f.lineStarts[f.Line(o)-1]:o] {
		switch c {
		case '\t':
			col = (col/8 + 1) * 8
		default:
			col++
		}
	}
	return col
}

// matchBrackets pairs the brackets of code: a closer pairs with the nearest
// open bracket of its kind, so that a stray one (from a preprocessor
// branch, a syntax error) leaves the rest paired.
func matchBrackets(code []Token) (match, depth []int) {
	match, depth = make([]int, len(code)), make([]int, len(code))
	var stack []int
	for i, t := range code {
		match[i], depth[i] = -1, len(stack)
		if t.Kind != Punct {
			continue
		}
		switch t.Text {
		case "(", "[", "{":
			stack = append(stack, i)
		case ")", "]", "}":
			open := map[string]string{")": "(", "]": "[", "}": "{"}[t.Text]
			for k := len(stack) - 1; k >= 0; k-- {
				if code[stack[k]].Text == open {
					match[i], match[stack[k]] = stack[k], i
					stack = stack[:k]
					depth[i] = k
					break
				}
			}
		}
	}
	return match, depth
}
