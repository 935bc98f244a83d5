package patch

import (
	"strings"

	"github.com/aymanbagabas/go-udiff/lcs"
)

// Similarity returns a similarity ratio in [0, 1] of two unified diffs: the
// difflib-style ratio 2·M/T over the sequences of their changed lines
// ("+" and "-" lines of hunks, with runs of whitespace collapsed and the
// ends trimmed), M the lines of a longest common subsequence and T the
// lines of both. Two diffs with no changed lines are 1; one without is 0
// against one with.
func Similarity(a, b string) float64 {
	la, lb := changedLines(a), changedLines(b)
	total := len(la) + len(lb)
	if total == 0 {
		return 1
	}
	if len(la) == 0 || len(lb) == 0 {
		return 0
	}
	removed := 0
	for _, d := range lcs.DiffLines(la, lb) {
		removed += d.End - d.Start
	}
	matches := len(la) - removed
	return 2 * float64(matches) / float64(total)
}

// changedLines lists a diff's changed lines, normalised. It reads hunks
// leniently (a miscounted header does not matter): a line is a change when
// it starts with + or - inside a hunk and is not a file header.
func changedLines(diff string) []string {
	var out []string
	inHunk := false
	lines := strings.Split(strings.ReplaceAll(diff, "\r\n", "\n"), "\n")
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "@@ "):
			inHunk = true
			continue
		case strings.HasPrefix(l, "diff --git "):
			inHunk = false
			continue
		case strings.HasPrefix(l, "--- ") && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "+++ "):
			inHunk = false
			continue
		case strings.HasPrefix(l, "+++ ") && i > 0 && strings.HasPrefix(lines[i-1], "--- "):
			continue
		}
		if !inHunk || l == "" {
			continue
		}
		switch l[0] {
		case '+', '-':
			out = append(out, l[:1]+strings.Join(strings.Fields(l[1:]), " "))
		case ' ', '\\':
		default:
			inHunk = false
		}
	}
	return out
}
