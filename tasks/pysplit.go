package tasks

import (
	"fmt"
	"strings"
)

// A small Python tokenizer: enough to cut test code into logical
// statements and to take `assert f(ARGS) == EXPECTED` apart, with strings,
// comments, brackets and line continuations handled. It never evaluates
// anything.

type tkind uint8

const (
	tName tkind = iota
	tNumber
	tString
	tOp
	tNewline
)

type token struct {
	kind       tkind
	text       string
	start, end int // byte offsets in the source
	depth      int // bracket depth the token sits at
	col        int // column of the token on its line
}

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80
}

func isIdentChar(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }

var pyOps3 = []string{"**=", "//=", ">>=", "<<=", "..."}
var pyOps2 = []string{"==", "!=", "<=", ">=", "->", "**", "//", "<<", ">>", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "@=", ":="}

// tokenize splits src into tokens with a tNewline at the end of every
// logical line.
func tokenize(src string) ([]token, error) {
	var toks []token
	depth, lineStart := 0, 0
	inLine := false
	newline := func(at int) {
		if inLine && depth == 0 {
			toks = append(toks, token{kind: tNewline, start: at, end: at})
			inLine = false
		}
	}
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == '\n':
			newline(i)
			i++
			lineStart = i
			continue
		case c == '\\' && i+1 < len(src) && (src[i+1] == '\n' || (src[i+1] == '\r' && i+2 < len(src) && src[i+2] == '\n')):
			i += 2
			if src[i-1] == '\r' {
				i++
			}
			lineStart = i
			continue
		case c == ' ' || c == '\t' || c == '\r' || c == '\f':
			i++
			continue
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
			continue
		}
		start := i
		tok := token{start: start, depth: depth, col: start - lineStart}
		if q, n := stringStart(src, i); q != "" {
			end, err := scanString(src, i+n, q)
			if err != nil {
				return nil, err
			}
			tok.kind, i = tString, end
		} else if isIdentStart(c) {
			for i < len(src) && isIdentChar(src[i]) {
				i++
			}
			tok.kind = tName
		} else if c >= '0' && c <= '9' || (c == '.' && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9') {
			for i < len(src) {
				d := src[i]
				if isIdentChar(d) || d == '.' {
					i++
				} else if (d == '+' || d == '-') && (src[i-1] == 'e' || src[i-1] == 'E') && !strings.HasPrefix(strings.ToLower(src[start:]), "0x") {
					i++
				} else {
					break
				}
			}
			tok.kind = tNumber
		} else {
			tok.kind = tOp
			n := 1
			for _, op := range pyOps3 {
				if strings.HasPrefix(src[i:], op) {
					n = 3
					break
				}
			}
			if n == 1 {
				for _, op := range pyOps2 {
					if strings.HasPrefix(src[i:], op) {
						n = 2
						break
					}
				}
			}
			i += n
			switch c {
			case '(', '[', '{':
				depth++
			case ')', ']', '}':
				if depth == 0 {
					return nil, fmt.Errorf("unbalanced %q at offset %d", c, start)
				}
				depth--
				tok.depth = depth
			}
		}
		tok.end = i
		tok.text = src[start:i]
		toks = append(toks, tok)
		inLine = true
	}
	if depth != 0 {
		return nil, fmt.Errorf("unclosed bracket at end of input")
	}
	newline(len(src))
	return toks, nil
}

// stringStart reports the quote of a string literal starting at i (with
// its prefix) and the prefix+quote length.
func stringStart(src string, i int) (string, int) {
	j := i
	for j < len(src) && j-i < 2 && strings.ContainsRune("rRbBuUfF", rune(src[j])) {
		j++
	}
	if j >= len(src) || (src[j] != '\'' && src[j] != '"') {
		return "", 0
	}
	q := src[j : j+1]
	if strings.HasPrefix(src[j:], q+q+q) {
		q = q + q + q
	}
	return q, j - i + len(q)
}

func scanString(src string, i int, q string) (int, error) {
	for i < len(src) {
		switch {
		case src[i] == '\\':
			i += 2
		case strings.HasPrefix(src[i:], q):
			return i + len(q), nil
		case len(q) == 1 && src[i] == '\n':
			return 0, fmt.Errorf("unterminated string at offset %d", i)
		default:
			i++
		}
	}
	return 0, fmt.Errorf("unterminated string")
}

// statement is one logical line.
type statement struct {
	toks  []token
	start int
	end   int
	col   int
}

func statements(toks []token) []statement {
	var out []statement
	var cur []token
	for _, t := range toks {
		if t.kind == tNewline {
			if len(cur) > 0 {
				out = append(out, statement{toks: cur, start: cur[0].start, end: cur[len(cur)-1].end, col: cur[0].col})
			}
			cur = nil
			continue
		}
		cur = append(cur, t)
	}
	return out
}

// splitAssert takes apart one assert statement over function fn. It
// returns args and expected for `assert fn(ARGS) == EXPECTED[, msg]`, or
// the assertion expression alone (message dropped) for any other form.
// ok is false when the statement is not an assert.
func splitAssert(src string, st statement, fn string) (args, expected, expr string, value, ok bool) {
	t := st.toks
	if len(t) < 2 || t[0].kind != tName || t[0].text != "assert" {
		return "", "", "", false, false
	}
	e := t[1:]
	for k, tk := range e {
		if tk.kind == tOp && tk.text == "," && tk.depth == 0 {
			e = e[:k]
			break
		}
	}
	if len(e) == 0 {
		return "", "", "", false, false
	}
	expr = src[e[0].start:e[len(e)-1].end]
	// fn ( ... ) == rest
	if len(e) < 5 || e[0].kind != tName || e[0].text != fn || e[1].text != "(" {
		return "", "", expr, false, true
	}
	closeAt := -1
	for k := 2; k < len(e); k++ {
		if e[k].kind == tOp && e[k].text == ")" && e[k].depth == 0 {
			closeAt = k
			break
		}
	}
	if closeAt < 0 || closeAt+2 >= len(e) || e[closeAt+1].text != "==" {
		return "", "", expr, false, true
	}
	rest := e[closeAt+2:]
	for _, tk := range rest {
		if tk.kind == tName && tk.text == fn {
			return "", "", expr, false, true
		}
		if tk.depth != 0 {
			continue
		}
		switch tk.text {
		case "==", "!=", "<", ">", "<=", ">=", "in", "not", "is", "and", "or", "if", "else", "lambda", ":=":
			return "", "", expr, false, true
		}
	}
	args = strings.TrimSpace(src[e[1].end:e[closeAt].start])
	expected = src[rest[0].start:rest[len(rest)-1].end]
	return args, expected, expr, true, true
}

// mentions reports whether the statement uses the name fn.
func mentions(st statement, fn string) bool {
	for _, t := range st.toks {
		if t.kind == tName && t.text == fn {
			return true
		}
	}
	return false
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

// splitCheck splits `def check(candidate): assert ...` into cases. It fails
// when the body holds anything but assert statements (loops, helpers,
// imports): such code is kept whole as one check.
func splitCheck(src string) (*checkSplit, error) {
	toks, err := tokenize(src)
	if err != nil {
		return nil, err
	}
	sts := statements(toks)
	def := -1
	for k, st := range sts {
		t := st.toks
		if st.col == 0 && len(t) >= 6 && t[0].text == "def" && t[1].text == "check" && t[2].text == "(" &&
			t[3].kind == tName && t[4].text == ")" && t[5].text == ":" && len(t) == 6 {
			def = k
			break
		}
	}
	if def < 0 {
		return nil, fmt.Errorf("no `def check(candidate):` at module level")
	}
	param := sts[def].toks[3].text
	end := def + 1
	for end < len(sts) && sts[end].col > 0 {
		end++
	}
	if end == def+1 {
		return nil, fmt.Errorf("check() has no body")
	}
	cs := &checkSplit{param: param}
	bodyCol := sts[def+1].col
	for _, st := range sts[def+1 : end] {
		if st.col != bodyCol {
			return nil, fmt.Errorf("check() holds compound statements")
		}
		args, expected, expr, value, ok := splitAssert(src, st, param)
		if !ok {
			return nil, fmt.Errorf("check() holds a statement other than assert: %.40q", src[st.start:st.end])
		}
		if !mentions(st, param) {
			continue // `assert True, "..."` tests nothing
		}
		cs.tests = append(cs.tests, splitCase{value: value, args: args, expected: expected, expr: expr})
	}
	if len(cs.tests) == 0 {
		return nil, fmt.Errorf("check() asserts nothing about %s", param)
	}
	defStart := sts[def].start
	// Back up to the start of the def's line.
	for defStart > 0 && src[defStart-1] != '\n' {
		defStart--
	}
	bodyEnd := sts[end-1].end
	for bodyEnd < len(src) && src[bodyEnd] != '\n' {
		bodyEnd++
	}
	cs.setup = strings.TrimSpace(src[:defStart] + src[bodyEnd:])
	return cs, nil
}

// callee returns the name called by `assert NAME(...`, the function an
// MBPP-style test exercises.
func callee(stmt string) (string, error) {
	toks, err := tokenize(stmt)
	if err != nil {
		return "", err
	}
	for k := 0; k+1 < len(toks); k++ {
		if toks[k].kind == tName && toks[k].text != "assert" && toks[k].text != "not" && toks[k+1].text == "(" {
			switch toks[k].text {
			case "set", "sorted", "list", "tuple", "abs", "round", "len", "str", "int", "float", "frozenset", "dict", "bool", "isclose", "math":
				continue
			}
			return toks[k].text, nil
		}
	}
	return "", fmt.Errorf("no function call in %.60q", stmt)
}
