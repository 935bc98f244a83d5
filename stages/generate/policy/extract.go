package policy

import (
	"regexp"
	"strings"
)

// ExtractCode returns the program in a model response.
//
// Rules, in order:
//
//  1. Reasoning blocks <think>...</think> are removed (an unclosed <think>
//     removes the rest of the text).
//  2. If the text has fenced code blocks (``` or ~~~, with an optional info
//     string), the result is the longest block tagged diff, patch or udiff;
//     failing that the longest block that reads as a unified diff (a
//     "diff --git" line, "---"/"+++" headers or an "@@ -n +m @@" hunk),
//     untagged ones first; failing that the longest block tagged python, py
//     or python3; failing that the longest untagged block; failing that the
//     longest block of any tag. A fence left open at the end (a response
//     cut at max_tokens) runs to the end of the text.
//  3. Otherwise, when the text holds a unified diff, the diff: from its
//     first "diff --git" line or "---"/"+++" header pair (else its first
//     hunk header) to its last diff line, without the prose around it.
//  4. Otherwise the whole text is the program.
//
// The result has surrounding blank lines removed and ends with one newline
// ("" when there is no code at all). A diff keeps its trailing context
// lines that hold a single space (blank lines of the file); only empty
// lines are removed after it.
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
		if d, ok := diffPart(text); ok {
			return tidyDiff(d)
		}
		return tidy(text)
	}
	pickBlock := func(ok func(block) bool) (string, bool) {
		best, found := "", false
		for _, b := range blocks {
			if ok(b) && (!found || len(strings.TrimSpace(b.body)) > len(strings.TrimSpace(best))) {
				best, found = b.body, true
			}
		}
		return best, found
	}
	pick := func(ok func(string) bool) (string, bool) {
		return pickBlock(func(b block) bool { return ok(b.lang) })
	}
	if b, ok := pick(func(l string) bool { return l == "diff" || l == "patch" || l == "udiff" }); ok {
		return tidyDiff(b)
	}
	if b, ok := pickBlock(func(b block) bool { return b.lang == "" && looksLikeUnifiedDiff(b.body) }); ok {
		return tidyDiff(b)
	}
	if b, ok := pickBlock(func(b block) bool { return looksLikeUnifiedDiff(b.body) }); ok {
		return tidyDiff(b)
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

var reDiffHunk = regexp.MustCompile(`^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@`)

// looksLikeUnifiedDiff says whether s has a "diff --git" line, a "---" line
// followed by a "+++" line, or a hunk header.
func looksLikeUnifiedDiff(s string) bool {
	_, ok := diffStart(strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n"))
	return ok
}

// diffStart is the index of the line where a diff starts: the first
// "diff --git" line or "---"/"+++" pair, else the first hunk header.
func diffStart(lines []string) (int, bool) {
	for i, l := range lines {
		if strings.HasPrefix(l, "diff --git ") ||
			strings.HasPrefix(l, "--- ") && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "+++ ") {
			return i, true
		}
	}
	for i, l := range lines {
		if reDiffHunk.MatchString(l) {
			return i, true
		}
	}
	return 0, false
}

// diffPart is the unified diff in unfenced text, from its start to its
// last line that can be part of a diff (prose after it is dropped).
func diffPart(text string) (string, bool) {
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	start, ok := diffStart(lines)
	if !ok {
		return "", false
	}
	end := len(lines)
	for end > start+1 && !diffLine(lines[end-1]) {
		end--
	}
	return strings.Join(lines[start:end], "\n") + "\n", true
}

// diffLine says whether a non-empty line can belong to a unified diff.
func diffLine(l string) bool {
	if l == "" {
		return false
	}
	switch l[0] {
	case ' ', '+', '-', '@', '\\':
		return true
	}
	for _, p := range []string{"diff ", "index ", "new file mode", "deleted file mode", "old mode", "new mode",
		"similarity index", "rename from", "rename to", "Binary files"} {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return false
}

// tidyDiff is tidy for a diff: leading blank lines go, and trailing empty
// ones, but a trailing " " is a context line and stays.
func tidyDiff(s string) string {
	lines := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
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
