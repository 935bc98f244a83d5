package policy

import (
	"strings"
)

// ExtractCode returns the program in a model response.
//
// Rules, in order:
//
//  1. Reasoning blocks <think>...</think> are removed (an unclosed <think>
//     removes the rest of the text).
//  2. If the text has fenced code blocks (``` or ~~~, with an optional info
//     string), the result is the longest block tagged python, py or python3;
//     failing that the longest untagged block; failing that the longest
//     block of any tag. A fence left open at the end (a response cut at
//     max_tokens) runs to the end of the text.
//  3. Otherwise the whole text is the program.
//
// The result has surrounding blank lines removed and ends with one newline
// ("" when there is no code at all).
func ExtractCode(text string) string {
	text = stripThink(text)
	type block struct {
		lang string
		body string
	}
	var blocks []block
	lines := strings.SplitAfter(text, "\n")
	for i := 0; i < len(lines); i++ {
		trimmed := strings.TrimSpace(lines[i])
		fence := fenceOf(trimmed)
		if fence == "" {
			continue
		}
		lang := strings.ToLower(strings.TrimSpace(strings.TrimLeft(trimmed, fence[:1])))
		if f := strings.Fields(lang); len(f) > 0 {
			lang = f[0]
		}
		var body strings.Builder
		j := i + 1
		for ; j < len(lines); j++ {
			t := strings.TrimSpace(lines[j])
			if strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]) == "" {
				break
			}
			body.WriteString(lines[j])
		}
		blocks = append(blocks, block{lang: lang, body: body.String()})
		i = j
	}
	if len(blocks) == 0 {
		return tidy(text)
	}
	pick := func(ok func(string) bool) (string, bool) {
		best, found := "", false
		for _, b := range blocks {
			if ok(b.lang) && (!found || len(strings.TrimSpace(b.body)) > len(strings.TrimSpace(best))) {
				best, found = b.body, true
			}
		}
		return best, found
	}
	if b, ok := pick(func(l string) bool { return l == "python" || l == "py" || l == "python3" }); ok {
		return tidy(b)
	}
	if b, ok := pick(func(l string) bool { return l == "" }); ok {
		return tidy(b)
	}
	b, _ := pick(func(string) bool { return true })
	return tidy(b)
}

// fenceOf returns the fence that opens line ("```", "~~~~", ...) or "".
func fenceOf(line string) string {
	for _, ch := range []string{"`", "~"} {
		n := 0
		for n < len(line) && line[n:n+1] == ch {
			n++
		}
		if n >= 3 {
			return line[:n]
		}
	}
	return ""
}

func stripThink(s string) string {
	for {
		i := strings.Index(s, "<think>")
		if i < 0 {
			return s
		}
		j := strings.Index(s[i:], "</think>")
		if j < 0 {
			return s[:i]
		}
		s = s[:i] + s[i+j+len("</think>"):]
	}
}

func tidy(s string) string {
	lines := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}
