package judge

import (
	"strconv"
	"strings"

	"github.com/murphy-rl/murphy/compilefix/lang"
)

// tokensFor splits src into the tokens PatchesEquivalent compares: for a
// compile-fix language (C, Go, Java, Python: ll) the tokens of the source
// layer (compilefix/lang, the module's one tokeniser for them), otherwise
// codeTokens' own lexer for the other languages a diff may touch.
func tokensFor(src string, kind codeLang, ll lang.Language, columns bool) []string {
	if ll != "" {
		if toks, ok := langTokens(src, ll, columns); ok {
			return dropTrailingCommas(toks)
		}
	}
	return codeTokens(src, kind, columns)
}

// langTokens renders lang's code tokens (comments dropped) as codeTokens
// does: literals by their quoting and body, Python's logical lines with
// their indentation (a column for a hunk, indent and dedent tokens for a
// whole program) and ends; other languages' line ends are white space.
func langTokens(src string, ll lang.Language, columns bool) ([]string, bool) {
	f, err := lang.Parse(ll, []byte(strings.ReplaceAll(src, "\r\n", "\n")))
	if err != nil {
		return nil, false
	}
	var toks []string
	if ll != lang.Python {
		for _, t := range f.Code {
			if t.Kind != lang.Newline {
				toks = append(toks, tokenText(t, ll))
			}
		}
		return toks, true
	}
	var indents []int
	for i, line := range f.LogicalLines() {
		switch {
		case columns:
			toks = append(toks, "\x00col"+strconv.Itoa(line.Indent))
		default:
			if i > 0 {
				toks = append(toks, tokEOL)
			}
			toks, indents = indentTokens(toks, indents, line.Indent)
		}
		for _, t := range f.Code[line.First:line.End] {
			toks = append(toks, tokenText(t, ll))
		}
	}
	return toks, true
}

// indentTokens adds the indent or dedent tokens of a logical line at col.
func indentTokens(toks []string, indents []int, col int) ([]string, []int) {
	switch {
	case len(indents) == 0:
		indents = append(indents, col)
	case col > indents[len(indents)-1]:
		indents = append(indents, col)
		toks = append(toks, tokIndent)
	default:
		for len(indents) > 0 && col < indents[len(indents)-1] {
			indents = indents[:len(indents)-1]
			toks = append(toks, tokDedent)
		}
		if len(indents) == 0 || col > indents[len(indents)-1] {
			indents = append(indents, col)
		}
	}
	return toks, indents
}

// tokenText is a token as compared: a literal as "\x00s" + its prefix and
// quoting + "|" + its body (Python's ' and " strings alike), anything else
// its text.
func tokenText(t lang.Token, ll lang.Language) string {
	if t.Kind != lang.String {
		return t.Text
	}
	s := t.Text
	prefix := ""
	if ll == lang.Python {
		i := strings.IndexAny(s, `'"`)
		if i < 0 {
			return "\x00s" + s
		}
		prefix, s = strings.ToLower(s[:i]), s[i:]
	}
	if s == "" || !strings.ContainsRune(`'"`+"`", rune(s[0])) {
		return "\x00s" + prefix + s // a C #include <path>
	}
	q := s[:1]
	delim := q
	if strings.HasPrefix(s, strings.Repeat(q, 3)) && len(s) >= 6 {
		delim = strings.Repeat(q, 3)
	}
	body := strings.TrimSuffix(strings.TrimPrefix(s, delim), delim)
	kind := q
	if ll == lang.Python {
		kind = strconv.Itoa(len(delim))
	}
	return "\x00s" + prefix + kind + "|" + body
}
