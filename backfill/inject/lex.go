package inject

import "strings"

// tokKind is the kind of a lexed token.
type tokKind int

const (
	tIdent   tokKind = iota
	tNumber          // a (pp-)number
	tString          // a string or character literal (any form)
	tPunct           // an operator or punctuator
	tComment         // a comment (kept in the full stream only)
	tPP              // a C preprocessor directive, continuations included
	tNewline         // Python: the end of a logical line
)

// ltok is one lexeme of a source file.
type ltok struct {
	kind       tokKind
	text       string
	start, end int // byte offsets in the source
	line       int // 1-based line of start
	first      bool
	// indent is, for Python, the indentation of the logical line the token
	// starts (meaningful on a logical line's first token).
	indent int
	// lstart marks the first token of a Python logical line.
	lstart bool
}

// lexed is a source file cut into tokens. Comments are in all only;
// code holds the rest (preprocessor directives and Python logical-line
// ends included), with match pairing its brackets.
type lexed struct {
	src   []byte
	all   []ltok
	code  []ltok
	match []int // code index of the matching bracket, -1 for none
}

var cPuncts = []string{
	"<<=", ">>=", "...", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||",
	"+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "##", "::",
}

var javaPuncts = []string{
	">>>=", "<<=", ">>=", ">>>", "...", "->", "::", "++", "--", "<<", ">>", "<=", ">=", "==", "!=",
	"&&", "||", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=",
}

var pyPuncts = []string{
	"**=", "//=", ">>=", "<<=", "...", "->", ":=", "==", "!=", "<=", ">=", "**", "//", "<<", ">>",
	"+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "@=",
}

func isIdentStart(c byte) bool {
	return c == '_' || c == '$' || c >= 0x80 || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentByte(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// lexBraces lexes C (cpp true) or Java source.
func lexBraces(src []byte, cpp bool) *lexed {
	lx := &lexed{src: src}
	puncts := javaPuncts
	if cpp {
		puncts = cPuncts
	}
	n := len(src)
	line, bol := 1, true
	emit := func(k tokKind, s, e int) {
		lx.all = append(lx.all, ltok{kind: k, text: string(src[s:e]), start: s, end: e, line: line, first: bol})
		line += strings.Count(string(src[s:e]), "\n")
		bol = false
	}
	for i := 0; i < n; {
		c := src[i]
		switch {
		case c == '\n':
			line++
			bol = true
			i++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '\\' && i+1 < n && src[i+1] == '\n': // a line splice
			i += 2
			line++
		case c == '/' && i+1 < n && src[i+1] == '/':
			j := i
			for j < n && src[j] != '\n' {
				j++
			}
			keep := bol
			emit(tComment, i, j)
			bol = keep
			i = j
		case c == '/' && i+1 < n && src[i+1] == '*':
			j := i + 2
			for j < n && !(src[j] == '*' && j+1 < n && src[j+1] == '/') {
				j++
			}
			j = min(j+2, n)
			keep := bol
			emit(tComment, i, j)
			bol = keep && !strings.Contains(string(src[i:j]), "\n")
			i = j
		case cpp && c == '#' && bol:
			j := i
			for j < n && src[j] != '\n' {
				switch {
				case src[j] == '\\' && j+1 < n && src[j+1] == '\n':
					j += 2
				case src[j] == '\\' && j+2 < n && src[j+1] == '\r' && src[j+2] == '\n':
					j += 3
				case src[j] == '/' && j+1 < n && src[j+1] == '*':
					k := j + 2
					for k < n && !(src[k] == '*' && k+1 < n && src[k+1] == '/') {
						k++
					}
					j = min(k+2, n)
				default:
					j++
				}
			}
			emit(tPP, i, j)
			i = j
		case !cpp && c == '"' && strings.HasPrefix(string(src[i:min(i+3, n)]), `"""`): // a text block
			j := i + 3
			for j < n && !strings.HasPrefix(string(src[j:min(j+3, n)]), `"""`) {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			emit(tString, i, min(j+3, n))
			i = min(j+3, n)
		case c == '"' || c == '\'':
			j := quoted(src, i+1, c)
			emit(tString, i, j)
			i = j
		case isIdentStart(c):
			j := i
			for j < n && isIdentByte(src[j]) {
				j++
			}
			if cpp && j < n && (src[j] == '"' || src[j] == '\'') {
				switch string(src[i:j]) {
				case "L", "u", "U", "u8":
					k := quoted(src, j+1, src[j])
					emit(tString, i, k)
					i = k
					continue
				}
			}
			emit(tIdent, i, j)
			i = j
		case isDigit(c) || (c == '.' && i+1 < n && isDigit(src[i+1])):
			j := ppNumber(src, i)
			emit(tNumber, i, j)
			i = j
		default:
			l := 1
			for _, p := range puncts {
				if strings.HasPrefix(string(src[i:min(i+len(p), n)]), p) {
					l = len(p)
					break
				}
			}
			emit(tPunct, i, i+l)
			i += l
		}
	}
	lx.finish()
	return lx
}

// quoted returns the end of a literal opened by q just before i: past the
// closing quote, or at the end of the line when there is none.
func quoted(src []byte, i int, q byte) int {
	n := len(src)
	for i < n {
		switch src[i] {
		case '\\':
			i += 2
			continue
		case q:
			return i + 1
		case '\n':
			return i
		}
		i++
	}
	return n
}

func ppNumber(src []byte, i int) int {
	n := len(src)
	j := i + 1
	for j < n {
		c := src[j]
		switch {
		case isIdentByte(c) || c == '.':
			j++
		case (c == '+' || c == '-') && strings.ContainsRune("eEpP", rune(src[j-1])):
			j++
		case c == '\'' && j+1 < n && isIdentByte(src[j+1]): // digit separator
			j++
		default:
			return j
		}
	}
	return j
}

// lexPython lexes Python source, with logical-line ends (tNewline) and
// each logical line's indentation.
func lexPython(src []byte) *lexed {
	lx := &lexed{src: src}
	n := len(src)
	line, bol := 1, true
	depth := 0
	pending := false // the logical line has tokens
	lineStart := true
	indent := 0
	emit := func(k tokKind, s, e int) {
		t := ltok{kind: k, text: string(src[s:e]), start: s, end: e, line: line, first: bol}
		if k != tComment && k != tNewline && !pending {
			t.lstart, t.indent = true, indent
			pending = true
		}
		lx.all = append(lx.all, t)
		line += strings.Count(string(src[s:e]), "\n")
		bol = false
	}
	for i := 0; i < n; {
		c := src[i]
		if lineStart {
			lineStart = false
			if depth == 0 && !pending {
				col, j := 0, i
				for j < n && (src[j] == ' ' || src[j] == '\t' || src[j] == '\f') {
					switch src[j] {
					case '\t':
						col = (col/8 + 1) * 8
					case ' ':
						col++
					}
					j++
				}
				indent = col
			}
		}
		switch {
		case c == '\n':
			if depth == 0 && pending {
				lx.all = append(lx.all, ltok{kind: tNewline, text: "\n", start: i, end: i + 1, line: line})
				pending = false
			}
			line++
			bol, lineStart = true, true
			i++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f':
			i++
		case c == '\\' && i+1 < n && (src[i+1] == '\n' || (src[i+1] == '\r' && i+2 < n && src[i+2] == '\n')):
			if src[i+1] == '\r' {
				i++
			}
			i += 2
			line++
		case c == '#':
			j := i
			for j < n && src[j] != '\n' {
				j++
			}
			keep := bol
			emit(tComment, i, j)
			bol = keep
			i = j
		case c == '"' || c == '\'':
			j := pyString(src, i)
			emit(tString, i, j)
			i = j
		case isIdentStart(c):
			j := i
			for j < n && isIdentByte(src[j]) {
				j++
			}
			if j < n && (src[j] == '"' || src[j] == '\'') && j-i <= 2 && strings.Trim(strings.ToLower(string(src[i:j])), "rbuf") == "" {
				k := pyString(src, j)
				emit(tString, i, k)
				i = k
				continue
			}
			emit(tIdent, i, j)
			i = j
		case isDigit(c) || (c == '.' && i+1 < n && isDigit(src[i+1])):
			j := ppNumber(src, i)
			emit(tNumber, i, j)
			i = j
		default:
			l := 1
			for _, p := range pyPuncts {
				if strings.HasPrefix(string(src[i:min(i+len(p), n)]), p) {
					l = len(p)
					break
				}
			}
			switch c {
			case '(', '[', '{':
				emit(tPunct, i, i+l)
				depth++
			case ')', ']', '}':
				emit(tPunct, i, i+l)
				depth = max(depth-1, 0)
			default:
				emit(tPunct, i, i+l)
			}
			i += l
		}
	}
	if pending {
		lx.all = append(lx.all, ltok{kind: tNewline, text: "", start: n, end: n, line: line})
	}
	lx.finish()
	return lx
}

// pyString returns the end of the string literal whose quote is at i.
func pyString(src []byte, i int) int {
	n := len(src)
	q := src[i]
	if i+2 < n && src[i+1] == q && src[i+2] == q {
		j := i + 3
		for j < n {
			if src[j] == '\\' {
				j += 2
				continue
			}
			if src[j] == q && j+2 < n && src[j+1] == q && src[j+2] == q {
				return j + 3
			}
			j++
		}
		return n
	}
	return quoted(src, i+1, q)
}

func (lx *lexed) finish() {
	for _, t := range lx.all {
		if t.kind != tComment {
			lx.code = append(lx.code, t)
		}
	}
	lx.match = make([]int, len(lx.code))
	var stack []int
	for i, t := range lx.code {
		lx.match[i] = -1
		if t.kind != tPunct {
			continue
		}
		switch t.text {
		case "(", "[", "{":
			stack = append(stack, i)
		case ")", "]", "}":
			open := map[string]string{")": "(", "]": "[", "}": "{"}[t.text]
			// Pop to the nearest opener of the same kind: a stray closer
			// (from a preprocessor branch) leaves the rest alone.
			for k := len(stack) - 1; k >= 0; k-- {
				if lx.code[stack[k]].text == open {
					lx.match[i], lx.match[stack[k]] = stack[k], i
					stack = stack[:k]
					break
				}
			}
		}
	}
}

// is reports whether code token i is the punctuator p.
func (lx *lexed) is(i int, p string) bool {
	return i >= 0 && i < len(lx.code) && lx.code[i].kind == tPunct && lx.code[i].text == p
}

// ident reports whether code token i is an identifier (keywords included).
func (lx *lexed) ident(i int) bool {
	return i >= 0 && i < len(lx.code) && lx.code[i].kind == tIdent
}

// lastOnLine reports whether code token i is the last token on its line
// (comments may follow).
func (lx *lexed) lastOnLine(i int) bool {
	t := lx.code[i]
	for j := t.end; j < len(lx.src); j++ {
		switch lx.src[j] {
		case ' ', '\t', '\r':
			continue
		case '\n':
			return true
		case '/':
			if j+1 < len(lx.src) && (lx.src[j+1] == '/' || lx.src[j+1] == '*') {
				return !lx.nextCodeOnLine(j)
			}
			return false
		case '#':
			return true // a Python comment (C directives start lines)
		}
		return false
	}
	return true
}

// nextCodeOnLine reports whether a code token starts on the same line after
// offset o.
func (lx *lexed) nextCodeOnLine(o int) bool {
	for _, t := range lx.code {
		if t.start > o {
			return !strings.Contains(string(lx.src[o:t.start]), "\n") && t.kind != tNewline
		}
	}
	return false
}
