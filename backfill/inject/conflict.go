package inject

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/murphy-rl/murphy/compilefix/lang"
)

var branches = []string{"feature/refactor", "origin/main", "topic/cleanup", "fix-build", "develop", "upstream/master"}

// conflict plans merge-conflict markers around the whole lines
// [start, end) of f (start at a line start, end just past a newline or at
// the end of the file). The other side is the same lines with a number
// changed (the first decimal integer literal among code's tokens there),
// or nothing when they have none (the lines deleted there).
func conflict(f *srcFile, code []lang.Token, start, end int, r *rand.Rand, what string) *plan {
	ours := f.text(start, end)
	if !strings.HasSuffix(ours, "\n") {
		ours += "\n"
	}
	theirs := ""
	for _, t := range code {
		if t.Start < start || t.End > end || t.Kind != lang.Number || strings.Trim(t.Text, "0123456789") != "" {
			continue
		}
		if n, err := strconv.Atoi(t.Text); err == nil { // too many digits: leave this one
			theirs = ours[:t.Start-start] + strconv.Itoa(n+1) + ours[t.End-start:]
			break
		}
	}
	branch := branches[r.IntN(len(branches))]
	block := "<<<<<<< HEAD\n" + ours + "=======\n" + theirs + ">>>>>>> " + branch + "\n"
	l := f.line(start)
	oursLines, theirsLines := strings.Count(ours, "\n"), strings.Count(theirs, "\n")
	side := "a version with a number changed"
	if theirs == "" {
		side = "an empty side (the lines deleted there)"
	}
	lastOrig := f.line(max(end-1, start))
	return &plan{
		edits:     []edit{{start: start, end: end, text: block}},
		at:        start,
		expectNew: []int{l, l + 1 + oursLines, l + 2 + oursLines + theirsLines},
		desc: fmt.Sprintf("left merge-conflict markers (HEAD against %s, %s) around %s at lines %d-%d",
			branch, side, what, l, lastOrig),
	}
}

// stringLit is a string literal made from an expression's text: the text
// quoted when it is a short plain literal or name, else "0".
func stringLit(expr string) string {
	e := strings.TrimSpace(expr)
	if len(e) > 0 && len(e) <= 24 && !strings.ContainsAny(e, "\"'`\\ \t\n") {
		return `"` + e + `"`
	}
	return `"0"`
}
