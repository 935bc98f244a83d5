package policy

import (
	"fmt"
	"math/rand/v2"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/murphy-rl/murphy/compilefix/lang"
	"github.com/murphy-rl/murphy/compilefix/patch"
)

// badContext is the reference repair (else the target commented out)
// written against a misremembered file: the identifiers of the lines
// around the change renamed the way a model misquotes code, so that the
// hunk matches nothing. At least one removed line is a misremembered one,
// which no fuzz can match.
func (c *cfTask) badContext(lines []string, t *cfTarget) (string, bool) {
	old := strings.Join(lines, "")
	language := c.langOf(t.file)
	var es []lineEdit
	if fixed, ok := c.fixed[t.file]; ok {
		es = lineEdits(old, fixed)
	} else if nl, ok := commentOut(lines, t.line, language); ok {
		es = lineEdits(old, strings.Join(nl, ""))
	}
	if len(es) == 0 {
		return "", false
	}
	inEdit := func(i int) bool {
		return slices.ContainsFunc(es, func(e lineEdit) bool { return i >= e.start && i < e.end })
	}
	inWindow := func(i int) bool {
		return slices.ContainsFunc(es, func(e lineEdit) bool {
			return i >= e.start-patch.ContextLines && i < e.end+patch.ContextLines
		})
	}
	known := map[string]bool{}
	for _, l := range lines {
		known[normalizeSpaces(l)] = true
	}
	wrong := slices.Clone(lines)
	altered := map[int]bool{}
	for i, l := range lines {
		if inWindow(i) && !blank(l) {
			if m, ok := misremember(lang.Normalize(language), l, known); ok {
				wrong[i], altered[i] = m, true
			}
		}
	}
	deletesAltered := false
	for i := range lines {
		deletesAltered = deletesAltered || altered[i] && inEdit(i)
	}
	if !deletesAltered {
		var ok bool
		if es, ok = restoreMisremembered(lines, wrong, es, altered, commentPrefix(language)); !ok {
			return "", false
		}
	}
	d := patch.Diff(t.file, strings.Join(wrong, ""), strings.Join(applyEdits(wrong, es), ""))
	return d, d != ""
}

// restoreMisremembered makes the edits es remove a misremembered line
// when they remove none: the nearest altered line is "restored" (the hunk
// removes it and adds it back as it is); failing any, a removed line (or
// the nearest line in the window) is misquoted in wrong with a comment
// (pre) and restored. ok is false when there is no line to use.
func restoreMisremembered(lines, wrong []string, es []lineEdit, altered map[int]bool, pre string) ([]lineEdit, bool) {
	inEdit := func(i int) bool {
		return slices.ContainsFunc(es, func(e lineEdit) bool { return i >= e.start && i < e.end })
	}
	inWindow := func(i int) bool {
		return slices.ContainsFunc(es, func(e lineEdit) bool {
			return i >= e.start-patch.ContextLines && i < e.end+patch.ContextLines
		})
	}
	best := -1
	near := func(i int) bool { return best < 0 || editDistance(es[0], i) < editDistance(es[0], best) }
	for i := range lines {
		if altered[i] && !inEdit(i) && near(i) {
			best = i
		}
	}
	if best < 0 {
		for i := range lines {
			if inWindow(i) && !blank(lines[i]) && (inEdit(i) || near(i)) {
				best = i
				if inEdit(i) {
					break
				}
			}
		}
		if best < 0 {
			return nil, false
		}
		body := strings.TrimRight(lines[best], "\r\n")
		wrong[best] = body + " " + pre + " fixed" + lines[best][len(body):]
	}
	if !inEdit(best) {
		es = append(es, lineEdit{best, best + 1, []string{lines[best]}})
		// An insertion before the restored line must come first.
		slices.SortStableFunc(es, func(a, b lineEdit) int {
			if a.start != b.start {
				return a.start - b.start
			}
			return a.end - b.end
		})
	}
	return es, true
}

// libraryNames are names a model quotes right whatever else it
// misremembers: the standard libraries' most used.
var libraryNames = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`main printf fprintf malloc free strlen memcpy fmt strings Println Printf
		Sprintf Errorf System out println String List Integer Override Exception self cls`) {
		libraryNames[w] = true
	}
}

var reIdentifier = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)

// aliases are names a model recalls as others.
var aliases = map[string]string{"sum": "acc", "xs": "arr", "arr": "xs", "res": "out", "err": "e", "buf": "buffer",
	"idx": "index", "cnt": "count", "val": "value", "tmp": "temp", "num": "n", "ptr": "p", "ret": "result"}

// alias is how a model misremembers an identifier of a file in language
// l: a known alias, else a long name without its inner vowels (counter →
// cntr); keywords and predeclared names (compilefix/lang), library names
// and short names stay.
func alias(l lang.Language, w string) string {
	if lang.IsReserved(l, w) || libraryNames[w] {
		return w
	}
	if a, ok := aliases[w]; ok {
		return a
	}
	if len(w) < 4 {
		return w
	}
	var b strings.Builder
	b.WriteByte(w[0])
	for i := 1; i < len(w); i++ {
		if !strings.ContainsRune("aeiouAEIOU", rune(w[i])) || i == len(w)-1 {
			b.WriteByte(w[i])
		}
	}
	return b.String()
}

// misremember is line l as a model misquotes it: its identifiers renamed
// (the same way wherever they occur). ok is false when that changes
// nothing or gives another line of the file; imports and includes are
// quoted right.
func misremember(language lang.Language, l string, known map[string]bool) (string, bool) {
	body := strings.TrimRight(l, "\r\n")
	trim := strings.TrimSpace(body)
	for _, p := range []string{"#", "import ", "package ", "from ", "using "} {
		if strings.HasPrefix(trim, p) {
			return l, false
		}
	}
	out := reIdentifier.ReplaceAllStringFunc(body, func(w string) string { return alias(language, w) })
	if n := normalizeSpaces(out); n == normalizeSpaces(body) || known[n] {
		return l, false
	}
	return out + l[len(body):], true
}

func normalizeSpaces(s string) string { return strings.Join(strings.Fields(s), " ") }

var reHunkHeader = regexp.MustCompile(`^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@`)

var reHunkCounts = regexp.MustCompile(`^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@`)

// malformHeader spoils the first hunk header of a diff, in a way that GNU
// patch and go-gitdiff both reject: its closing "@@" left out, or its
// ranges written as first..last lines instead of start,count.
func malformHeader(diff string, r *rand.Rand) (string, bool) {
	lines := splitKeep(diff)
	for i, l := range lines {
		m := reHunkCounts.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		if r.IntN(2) == 0 {
			lines[i] = strings.TrimSuffix(m[0], " @@") + "\n"
		} else {
			span := func(start, count string) string {
				a, _ := strconv.Atoi(start)
				n := 1
				if count != "" {
					n, _ = strconv.Atoi(count)
				}
				return fmt.Sprintf("%d..%d", a, a+max(n, 1)-1)
			}
			lines[i] = "@@ -" + span(m[1], m[2]) + " +" + span(m[3], m[4]) + " @@\n"
		}
		return strings.Join(lines, ""), true
	}
	return "", false
}

// truncateHunk cuts a diff inside its last hunk, before that hunk's last
// changed line, sometimes in the middle of a line: a reply cut short.
func truncateHunk(diff string, r *rand.Rand) (string, bool) {
	lines := splitKeep(diff)
	h, last := -1, -1
	for i, l := range lines {
		switch {
		case reHunkHeader.MatchString(l):
			h, last = i, -1
		case h >= 0 && (strings.HasPrefix(l, "+") || strings.HasPrefix(l, "-")) &&
			!strings.HasPrefix(l, "+++ ") && !strings.HasPrefix(l, "--- "):
			last = i
		}
	}
	if h < 0 || last < 0 {
		return "", false
	}
	k := h + 1 + r.IntN(last-h) // keep lines[:k]: the header, never line last
	out := strings.Join(lines[:k], "")
	if k < last && r.IntN(2) == 0 {
		if body := strings.TrimRight(lines[k], "\n"); len(body) > 4 {
			return out + body[:len(body)/2], true
		}
	}
	return strings.TrimSuffix(out, "\n"), true
}

// missingFile points the diff's first file at a path the workspace lacks:
// a typo in the name, another directory.
func (c *cfTask) missingFile(diff string, t *cfTarget, r *rand.Rand) (string, bool) {
	if diff == "" {
		return "", false
	}
	p := ""
	if t != nil {
		p = t.file
	}
	if fs, err := patch.Parse(diff); err == nil && len(fs) > 0 {
		p = patch.FilePath(fs[0])
	}
	if p == "" {
		return "", false
	}
	var alts []string
	dir, base := path.Split(p)
	ext := path.Ext(base)
	stem := strings.TrimSuffix(base, ext)
	if n := len(stem); n >= 3 {
		i := n / 2
		if stem[i] != stem[i-1] {
			alts = append(alts, dir+stem[:i-1]+stem[i:i+1]+stem[i-1:i]+stem[i+1:]+ext)
		}
	}
	if dir != "" {
		alts = append(alts, base)
	} else {
		alts = append(alts, "src/"+p)
	}
	alts = slices.DeleteFunc(alts, func(a string) bool { _, ok := c.files[a]; return ok || a == p })
	if len(alts) == 0 {
		return "", false
	}
	np := alts[r.IntN(len(alts))]
	lines := splitKeep(diff)
	changed := false
	for i, l := range lines {
		if strings.HasPrefix(l, "diff --git ") || strings.HasPrefix(l, "--- ") || strings.HasPrefix(l, "+++ ") {
			nl := strings.ReplaceAll(strings.ReplaceAll(l, "a/"+p, "a/"+np), "b/"+p, "b/"+np)
			changed = changed || nl != l
			lines[i] = nl
		}
	}
	return strings.Join(lines, ""), changed
}
