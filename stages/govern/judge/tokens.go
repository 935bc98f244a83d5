package judge

import (
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/bluekeyes/go-gitdiff/gitdiff"

	"github.com/murphy-rl/murphy/compilefix/lang"
	"github.com/murphy-rl/murphy/topics"
)

// ---- Tokens ----------------------------------------------------------------

// codeLang is how a file's text is tokenised.
type codeLang int

const (
	// langGeneric: no known comment syntax; line ends are tokens.
	langGeneric codeLang = iota
	// langPython: # comments; logical lines and their indentation are tokens.
	langPython
	// langCLike: // and /* */ comments; line ends are white space.
	langCLike
	// langHash: # comments (shell, YAML, TOML, Make, Ruby, Perl, R); line
	// ends are tokens.
	langHash
)

// langOfPath returns the language of a file by its name.
func langOfPath(p string) (codeLang, bool) {
	base := strings.ToLower(path.Base(p))
	switch path.Ext(base) {
	case ".py", ".pyi", ".pyx", ".bzl":
		return langPython, true
	case ".c", ".h", ".cc", ".cpp", ".cxx", ".c++", ".hpp", ".hh", ".hxx", ".ipp", ".cu", ".cuh",
		".java", ".go", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx", ".rs", ".cs", ".kt", ".kts",
		".swift", ".scala", ".dart", ".proto", ".groovy", ".gradle", ".php", ".m", ".mm", ".zig", ".sol", ".v", ".sv":
		return langCLike, true
	case ".sh", ".bash", ".zsh", ".yaml", ".yml", ".toml", ".rb", ".pl", ".pm", ".r", ".cmake", ".mk",
		".cfg", ".conf", ".tf", ".nix", ".dockerfile":
		return langHash, true
	}
	switch base {
	case "makefile", "gnumakefile", "dockerfile", "cmakelists.txt", "requirements.txt", ".gitignore":
		return langHash, true
	case "build", "build.bazel", "workspace", "sconstruct", "sconscript":
		return langPython, true
	}
	return langGeneric, false
}

// progLang is how a whole program is tokenised: its lexer class, and its
// compile-fix language when known (lang.ForPath).
type progLang struct {
	kind codeLang
	src  lang.Language
}

// programLang returns the language of a whole program: the one file a diff
// names, else python for python-function tasks, else guessed from the code.
func programLang(kind, code string, diffs ...[]*gitdiff.File) progLang {
	for _, files := range diffs {
		if fs := changed(files); len(fs) == 1 {
			p := filePath(fs[0])
			if l, ok := langOfPath(p); ok {
				return progLang{l, lang.ForPath(p)}
			}
		}
	}
	if kind == topics.KindPythonFunction {
		return progLang{langPython, lang.Python}
	}
	return guessedLang(code)
}

// guessedLang is guessLang's class; a guessed Python program is tokenised
// as Python.
func guessedLang(code string) progLang {
	l := guessLang(code)
	if l == langPython {
		return progLang{l, lang.Python}
	}
	return progLang{kind: l}
}

var (
	pyBlock  = regexp.MustCompile(`^(def|class|if|elif|else|for|while|try|except|finally|with|async def)\b.*:$`)
	pyImport = regexp.MustCompile(`^(import [\w.]+( as \w+)?(, *[\w.]+( as \w+)?)*|from [\w.]+ import .*)$`)
)

// guessLang tells Python from C-like code by its lines.
func guessLang(code string) codeLang {
	py, c := 0, 0
	for line := range strings.SplitSeq(code, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case pyBlock.MatchString(t) || pyImport.MatchString(t):
			py++
		case strings.HasSuffix(t, ";") || strings.HasSuffix(t, "{") || t == "}" || strings.HasPrefix(t, "#include"):
			c++
		}
	}
	switch {
	case c > py:
		return langCLike
	case py > 0:
		return langPython
	}
	return langGeneric
}

// Multi-character operators, longest first: the longest match is one token.
var operators = []string{
	"<<=", ">>=", "**=", "//=", "...", "===", "!==", "<=>", ">>>", "&&=", "||=", "??=", "->*",
	"==", "!=", "<=", ">=", "&&", "||", "++", "--", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=",
	"->", "=>", "::", "<<", ">>", "**", "//", ":=", "<-", "??", "?.", "&^", "@=",
}

// Python string prefixes.
var pyPrefixes = map[string]bool{"r": true, "u": true, "b": true, "f": true, "br": true, "rb": true, "fr": true, "rf": true}

// Words after which a parenthesis is not a call: (a,) there is a tuple.
var notCallers = map[string]bool{
	"return": true, "in": true, "not": true, "and": true, "or": true, "if": true, "elif": true, "while": true,
	"yield": true, "else": true, "assert": true, "del": true, "for": true, "is": true, "await": true,
	"lambda": true, "match": true, "case": true, "with": true, "as": true, "from": true, "import": true,
	"except": true, "raise": true, "print": true,
}

const (
	tokIndent = "\x00indent"
	tokDedent = "\x00dedent"
	tokEOL    = "\x00eol"
)

// codeTokens splits src into the tokens PatchesEquivalent compares.
// columns (Python): a logical line's indentation is its column (for diff
// hunks, whose first line may be indented anywhere) rather than
// indent/dedent tokens of the block structure (for whole programs).
func codeTokens(src string, lang codeLang, columns bool) []string {
	z := &tokenizer{src: strings.ReplaceAll(src, "\r\n", "\n"), lang: lang, columns: columns,
		lineStart: true, lineEnds: lang != langCLike, hashComments: lang == langPython || lang == langHash}
	for i := 0; i < len(z.src); {
		if next, ok := z.skip(i); ok {
			i = next
			continue
		}
		z.lineStart = false
		i = z.token(i)
	}
	return dropTrailingCommas(z.toks)
}

// tokenizer is codeTokens' state.
type tokenizer struct {
	src          string
	lang         codeLang
	columns      bool
	toks         []string
	indents      []int
	depth        int  // open brackets
	lineStart    bool // at the start of a physical line
	col          int  // the physical line's indentation
	pendingEOL   bool // a logical line ended since the last token
	lineEnds     bool // line ends are tokens (not in C-like code)
	hashComments bool
}

// emit appends tok, after the line structure due before it: the line's
// column, or the end of line and indent/dedent tokens (Python), or the
// end of line.
func (z *tokenizer) emit(tok string) {
	if z.lineEnds && (len(z.toks) == 0 || z.pendingEOL) {
		switch {
		case z.lang == langPython && z.columns:
			z.toks = append(z.toks, "\x00col"+strconv.Itoa(z.col))
		case z.lang == langPython:
			if z.pendingEOL {
				z.toks = append(z.toks, tokEOL)
			}
			z.toks, z.indents = indentTokens(z.toks, z.indents, z.col)
		case z.pendingEOL:
			z.toks = append(z.toks, tokEOL)
		}
		z.pendingEOL = false
	}
	z.toks = append(z.toks, tok)
}

// skip skips what at src[i] makes no token (a line end, a line
// continuation, blanks, a comment) and returns the index after it, or
// false when a token starts at i.
func (z *tokenizer) skip(i int) (int, bool) {
	src, n, c := z.src, len(z.src), z.src[i]
	switch {
	case c == '\n':
		if z.depth == 0 && len(z.toks) > 0 {
			z.pendingEOL = true
		}
		z.lineStart, z.col = true, 0
		return i + 1, true
	case c == '\\' && i+1 < n && src[i+1] == '\n': // line continuation
		return i + 2, true
	case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
		if z.lineStart {
			if c == '\t' {
				z.col = (z.col/8 + 1) * 8
			} else {
				z.col++
			}
		}
		return i + 1, true
	case c == '#' && z.hashComments, c == '/' && z.lang == langCLike && i+1 < n && src[i+1] == '/':
		for i < n && src[i] != '\n' {
			i++
		}
		return i, true
	case c == '/' && z.lang == langCLike && i+1 < n && src[i+1] == '*':
		end := strings.Index(src[i+2:], "*/")
		if end < 0 {
			return n, true
		}
		return i + 2 + end + 2, true
	}
	return i, false
}

// token emits the token at src[i] (a string, a word or number, an
// operator) and returns the index after it.
func (z *tokenizer) token(i int) int {
	src, n, c := z.src, len(z.src), z.src[i]
	switch {
	case c == '"' || c == '\'' || (c == '`' && z.lang != langPython):
		tok, next := stringToken(src, i, "", z.lang)
		z.emit(tok)
		return next
	case isWordByte(c):
		j := i
		for j < n && isWordByte(src[j]) {
			j++
		}
		if c >= '0' && c <= '9' { // a number: 1.5e3, 0x1F, 1_000
			for j < n && (isWordByte(src[j]) || src[j] == '.') {
				j++
			}
		}
		word := src[i:j]
		if z.lang == langPython && j < n && (src[j] == '"' || src[j] == '\'') && pyPrefixes[strings.ToLower(word)] {
			tok, next := stringToken(src, j, strings.ToLower(word), z.lang)
			z.emit(tok)
			return next
		}
		z.emit(word)
		return j
	default:
		op := src[i : i+1]
		for _, o := range operators {
			if strings.HasPrefix(src[i:], o) {
				op = o
				break
			}
		}
		switch op {
		case "(", "[", "{":
			z.depth++
		case ")", "]", "}":
			z.depth = max(z.depth-1, 0)
		}
		z.emit(op)
		return i + len(op)
	}
}

// isWordByte reports whether c belongs to an identifier or number (bytes of
// multi-byte UTF-8 characters included: identifiers may be non-ASCII).
func isWordByte(c byte) bool {
	return c == '_' || c == '$' || c >= 0x80 || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

// stringToken reads the string literal starting at src[i] (its quote) and
// returns its token and the index after it. Python's ' and " strings are
// the same token; elsewhere the quote is part of it (a C char is not a
// string). An unterminated literal ends at the line end.
func stringToken(src string, i int, prefix string, lang codeLang) (string, int) {
	q := src[i]
	delim := src[i : i+1]
	if lang == langPython && strings.HasPrefix(src[i:], strings.Repeat(delim, 3)) {
		delim = strings.Repeat(delim, 3)
	}
	j := i + len(delim)
	raw := q == '`'
	for j < len(src) {
		switch {
		case strings.HasPrefix(src[j:], delim):
			body := src[i+len(delim) : j]
			kind := string(q)
			if lang == langPython {
				kind = strconv.Itoa(len(delim))
			}
			return "\x00s" + prefix + kind + "|" + body, j + len(delim)
		case src[j] == '\\' && !raw:
			j += 2
		case src[j] == '\n' && len(delim) == 1 && !raw:
			return "\x00s" + prefix + string(q) + "|" + src[i+1:j], j
		default:
			j++
		}
	}
	return "\x00s" + prefix + string(q) + "|" + src[i+len(delim):min(j, len(src))], len(src)
}

// dropTrailingCommas removes a comma right before a closing bracket, except
// in a one-element tuple: (a,) keeps its comma unless the parenthesis is a
// call's.
func dropTrailingCommas(toks []string) []string {
	type frame struct {
		commas int
		call   bool
	}
	out := make([]string, 0, len(toks))
	var stack []frame
	for _, tk := range toks {
		switch tk {
		case "(", "[", "{":
			call := false
			if n := len(out); n > 0 {
				prev := out[n-1]
				call = prev == ")" || prev == "]" || (isWordByte(prev[0]) && !notCallers[prev] && !(prev[0] >= '0' && prev[0] <= '9'))
			}
			stack = append(stack, frame{call: call})
		case ",":
			if len(stack) > 0 {
				stack[len(stack)-1].commas++
			}
		case ")", "]", "}":
			var top frame
			if len(stack) > 0 {
				top = stack[len(stack)-1]
				stack = stack[:len(stack)-1]
			}
			if n := len(out); n > 0 && out[n-1] == "," && (tk != ")" || top.call || top.commas >= 2) {
				out = out[:n-1]
			}
		}
		out = append(out, tk)
	}
	return out
}
