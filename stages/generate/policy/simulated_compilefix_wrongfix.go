package policy

import (
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
)

func deleteLine(lines []string, t int) ([]string, bool) {
	if blank(lines[t]) {
		return nil, false
	}
	return slices.Delete(slices.Clone(lines), t, t+1), true
}

func commentOut(lines []string, t int, lang string) ([]string, bool) {
	l := lines[t]
	body := strings.TrimLeft(l, " \t")
	pre := commentPrefix(lang)
	if blank(l) || strings.HasPrefix(body, pre) {
		return nil, false
	}
	out := slices.Clone(lines)
	out[t] = indentOf(l) + pre + " " + body
	return out, true
}

// wrongSpot makes the reference's repair of the target's line at a nearby
// line instead: the same substitution where the old text recurs, or the
// same insertion (a missing ";" or ")") at the end of a neighbour. Without
// a one-line reference repair it comments out a neighbour. The target's
// line, the other targets and the lines the reference changes stay as they
// are, so the error stays.
func (c *cfTask) wrongSpot(lines []string, t *cfTarget, r *rand.Rand) ([]string, bool) {
	untouchable, near := c.untouchable(t)
	pre := commentPrefix(c.langOf(t.file))
	var neighbours []int
	for d := 1; d <= 3; d++ {
		for _, j := range []int{t.line - d, t.line + d} {
			// A neighbour is a statement: not a lone brace, not a comment.
			if j >= 0 && j < len(lines) && !untouchable[j] && reIdentifier.MatchString(lines[j]) &&
				!strings.HasPrefix(strings.TrimSpace(lines[j]), pre) {
				neighbours = append(neighbours, j)
			}
		}
	}
	if len(neighbours) == 0 {
		return nil, false
	}
	// Statements of the target's own block first, then other statements,
	// then lines that open a block: the likelier wrong spots first.
	width := len(indentOf(lines[t.line]))
	rank := func(j int) int {
		code := strings.TrimRight(lines[j], " \t\r\n")
		switch {
		case strings.HasSuffix(code, "{") || strings.HasSuffix(code, ":"):
			return 2
		case len(indentOf(lines[j])) < width:
			return 1
		}
		return 0
	}
	slices.SortStableFunc(neighbours, func(a, b int) int { return rank(a) - rank(b) })
	if near != nil && near.end-near.start == 1 && len(near.ins) == 1 {
		if out, ok := repeatRepair(lines, neighbours, lines[near.start], near.ins[0]); ok {
			return out, true
		}
	}
	best := 1
	for best < min(2, len(neighbours)) && rank(neighbours[best]) == rank(neighbours[0]) {
		best++
	}
	j := neighbours[r.IntN(best)]
	return commentOut(lines, j, c.langOf(t.file))
}

// untouchable are the lines of t's file a wrong spot must leave alone (the
// targets', the reference's), and the reference's edit nearest t (nil for
// none).
func (c *cfTask) untouchable(t *cfTarget) (map[int]bool, *lineEdit) {
	untouchable := map[int]bool{t.line: true}
	for _, o := range c.targets {
		if o.file == t.file {
			untouchable[o.line] = true
		}
	}
	var near *lineEdit
	if fixed, ok := c.fixed[t.file]; ok {
		es := lineEdits(c.files[t.file], fixed)
		for i := range es {
			for k := es[i].start; k < es[i].end; k++ {
				untouchable[k] = true
			}
			if near == nil || editDistance(es[i], t.line) < editDistance(*near, t.line) {
				near = &es[i]
			}
		}
	}
	return untouchable, near
}

// repeatRepair makes the one-line repair from before to after at the first
// neighbour it changes: the same substitution, or the same insertion at the
// end or the start of the line.
func repeatRepair(lines []string, neighbours []int, before, after string) ([]string, bool) {
	oldMid, newMid, atEnd := lineChange(before, after)
	for _, j := range neighbours {
		var nl string
		switch {
		case oldMid != "":
			nl = replaceWord(lines[j], oldMid, newMid)
		case atEnd:
			body := strings.TrimRight(lines[j], " \t\r\n")
			nl = body + newMid + lines[j][len(body):]
		default:
			ind := indentOf(lines[j])
			nl = ind + newMid + lines[j][len(ind):]
		}
		if nl != lines[j] && nl != "" {
			out := slices.Clone(lines)
			out[j] = nl
			return out, true
		}
	}
	return nil, false
}

func editDistance(e lineEdit, line int) int {
	switch {
	case line < e.start:
		return e.start - line
	case line >= e.end:
		return line - e.end + 1
	}
	return 0
}

func isIdent(c byte) bool { return isWord(c) }

// lineChange is the change from line a to line b: the differing middle of
// each, widened to whole identifiers; atEnd says that the change sits at
// the end of the line's code.
func lineChange(a, b string) (oldMid, newMid string, atEnd bool) {
	a, b = strings.TrimRight(a, "\r\n"), strings.TrimRight(b, "\r\n")
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	for p > 0 && (isIdent(a[p-1]) && (p < len(a) && isIdent(a[p]) || p < len(b) && isIdent(b[p]))) {
		p--
	}
	for s > 0 && (isIdent(a[len(a)-s]) && (len(a)-s-1 >= p && isIdent(a[len(a)-s-1]) || len(b)-s-1 >= p && isIdent(b[len(b)-s-1]))) {
		s--
	}
	oldMid, newMid = a[p:len(a)-s], b[p:len(b)-s]
	return oldMid, newMid, strings.TrimSpace(a[len(a)-s:]) == ""
}

// replaceWord replaces the whole-word occurrences of w in line.
func replaceWord(line, w, repl string) string {
	re, err := regexp.Compile(`(^|[^A-Za-z0-9_])` + regexp.QuoteMeta(w) + `($|[^A-Za-z0-9_])`)
	if err != nil {
		return line
	}
	return re.ReplaceAllString(line, "${1}"+strings.ReplaceAll(repl, "$", "$$")+"${2}")
}
