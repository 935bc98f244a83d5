package inspect

import (
	"fmt"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"
)

// DiffLine is one line of a unified line diff: Op is ' ' (context), '-'
// (only in the parent's response), '+' (only in this response) or '@' (a
// hunk header, "@@ -a,b +c,d @@"; also the note that lines were cut).
type DiffLine struct {
	Op   string `json:"op"`
	Text string `json:"text"`
}

// noNewline follows a last line that has no line end (as in git).
const noNewline = `\ No newline at end of file`

// diffContext is the number of unchanged lines kept around each change.
const diffContext = 3

// LineDiff returns the line diff from parent to child (go-udiff's Myers
// line diff as unified hunks, diffContext lines of context), at most
// maxLines lines (0 = no cap). Identical texts give an empty diff.
func LineDiff(parent, child string, maxLines int) []DiffLine {
	if parent == child {
		return []DiffLine{}
	}
	edits := udiff.Lines(parent, child)
	u, err := udiff.ToUnifiedDiff("parent", "node", parent, edits, diffContext)
	if err != nil {
		// Lines' edits are always valid for parent; should that ever change,
		// show the two texts whole rather than nothing.
		return wholeDiff(parent, child, maxLines)
	}
	var out []DiffLine
	for _, h := range u.Hunks {
		del, ins := 0, 0
		for _, l := range h.Lines {
			switch l.Kind {
			case udiff.Delete:
				del++
			case udiff.Insert:
				ins++
			default:
				del++
				ins++
			}
		}
		out = append(out, DiffLine{Op: "@", Text: fmt.Sprintf("@@ -%s +%s @@", span(h.FromLine, del), span(h.ToLine, ins))})
		for _, l := range h.Lines {
			op := " "
			switch l.Kind {
			case udiff.Delete:
				op = "-"
			case udiff.Insert:
				op = "+"
			}
			out = append(out, DiffLine{Op: op, Text: strings.TrimSuffix(l.Content, "\n")})
			if !strings.HasSuffix(l.Content, "\n") {
				out = append(out, DiffLine{Op: "@", Text: noNewline})
			}
		}
	}
	if out == nil {
		out = []DiffLine{}
	}
	return capLines(out, maxLines)
}

func span(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start-1)
	}
	if n == 1 {
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}

func wholeDiff(parent, child string, maxLines int) []DiffLine {
	var out []DiffLine
	for _, l := range strings.Split(strings.TrimSuffix(parent, "\n"), "\n") {
		out = append(out, DiffLine{Op: "-", Text: l})
	}
	for _, l := range strings.Split(strings.TrimSuffix(child, "\n"), "\n") {
		out = append(out, DiffLine{Op: "+", Text: l})
	}
	return capLines(out, maxLines)
}

func capLines(ls []DiffLine, maxLines int) []DiffLine {
	if maxLines <= 0 || len(ls) <= maxLines {
		return ls
	}
	cut := len(ls) - maxLines
	return append(ls[:maxLines:maxLines], DiffLine{Op: "@", Text: fmt.Sprintf("… %d more diff lines not shown", cut)})
}
