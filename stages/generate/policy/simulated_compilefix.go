package policy

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"
	"github.com/bluekeyes/go-gitdiff/gitdiff"

	"github.com/murphy-rl/murphy/topics"
)

// Compile-fix outcomes. A compile-fix sample is a unified diff against the
// task's workspace: the reference patch, a plausible wrong fix (it applies
// and the build still fails, or builds without the repair), or a broken
// patch (it does not apply).
const (
	DeleteLine   Mutation = "delete_line"   // the target's line removed
	CommentOut   Mutation = "comment_out"   // the target's line commented out
	StubFunction Mutation = "stub_function" // the enclosing function's body replaced by a zero-value return
	WrongSpot    Mutation = "wrong_spot"    // the repair made at a nearby line; the target stays

	BadContext      Mutation = "bad_context"      // hunk lines misremembered: they match nothing
	MalformedHeader Mutation = "malformed_header" // a hunk header patch cannot read
	TruncatedHunk   Mutation = "truncated_hunk"   // the reply cut inside a hunk
	MissingFile     Mutation = "missing_file"     // a diff against a file the workspace lacks

	// NoPatch is the fallback for a task with neither a reference patch nor
	// a file the policy could edit: a reply without a diff.
	NoPatch Mutation = "no_patch"
)

// WrongFixes are the compile-fix samples whose patch applies but does not
// repair the build as the reference does (a fresh slice).
func WrongFixes() []Mutation { return []Mutation{DeleteLine, CommentOut, StubFunction, WrongSpot} }

// BrokenPatches are the compile-fix samples whose patch does not apply (a
// fresh slice).
func BrokenPatches() []Mutation {
	return []Mutation{BadContext, MalformedHeader, TruncatedHunk, MissingFile}
}

// chooseCompileFix is choose for a compile-fix task. The feedback of a
// refinement is read from Prompt.Feedback only: a compile-fix prompt's text
// repeats the task's own diagnostics, which say nothing about the attempt.
// Compile diagnostics that name a target (its file and line, or its
// message) make a repair most likely (PRepairDiagnostic); diagnostics that
// name none count as an error (PRepairError). Status names
// ("compile_error") are not error names here: a bare status is
// uninformative.
func (s *Simulated) chooseCompileFix(p *topics.Prompt, task *topics.Task, nodeID string) (Outcome, string) {
	r := s.rng(nodeID)
	c := parseCompileFix(task)
	o := Outcome{}
	pRight := s.cfg.PReference
	if p.ParentID != "" {
		o.Feedback = ClassifyFeedback(reStatusName.ReplaceAllString(p.Feedback, ""))
		switch o.Feedback {
		case FeedbackDiagnostic:
			if namesTarget(p.Feedback, task) {
				pRight = s.cfg.PRepairDiagnostic
			} else {
				o.Feedback = FeedbackError
				pRight = s.cfg.PRepairError
			}
		case FeedbackFailingCase:
			pRight = s.cfg.PRepairFailingCase
		case FeedbackError:
			pRight = s.cfg.PRepairError
		default:
			o.Feedback = FeedbackUninformative
			pRight = s.cfg.PRepairUninformative
		}
	}
	right := r.Float64() < pRight
	if right && c.ref != "" {
		o.Reference = true
		return o, c.ref
	}
	families := [][]Mutation{WrongFixes(), BrokenPatches()}
	if r.Float64() < s.cfg.PBroken {
		families[0], families[1] = families[1], families[0]
	}
	var t *cfTarget
	if len(c.targets) > 0 {
		t = &c.targets[r.IntN(len(c.targets))]
	}
	for _, family := range families {
		for _, k := range r.Perm(len(family)) {
			if d, ok := c.make(family[k], t, r); ok {
				o.Mutation = family[k]
				return o, d
			}
		}
	}
	o.Mutation = NoPatch
	return o, "I could not find what breaks the build; the code looks correct to me.\n"
}

var reStatusName = regexp.MustCompile(`\b(compile_error|runtime_error|sandbox_error|wrong_answer|patch_failed|output_limit|not_run)\b`)

// namesTarget says whether feedback names one of the task's target
// diagnostics: its file and line ("main.c:12") or its message.
func namesTarget(feedback string, task *topics.Task) bool {
	if task.CompileFix == nil {
		return false
	}
	for _, d := range task.CompileFix.Targets {
		if f := cleanPath(d.File); f != "" && d.Line > 0 && containsLocation(feedback, f, d.Line) {
			return true
		}
		if m := strings.TrimSpace(d.Message); len(m) >= 8 && strings.Contains(feedback, m) {
			return true
		}
	}
	return false
}

// containsLocation finds "file:line" not followed by another digit.
func containsLocation(s, file string, line int) bool {
	loc := file + ":" + strconv.Itoa(line)
	for i := 0; ; {
		k := strings.Index(s[i:], loc)
		if k < 0 {
			return false
		}
		end := i + k + len(loc)
		if end == len(s) || s[end] < '0' || s[end] > '9' {
			return true
		}
		i = end
	}
}

var patchLeads = []string{
	"Here is a patch that fixes the build.",
	"The diff below fixes the compile error.",
	"This change should make the build pass:",
	"Apply this patch:",
}

var patchTails = []string{"", "", "After this change the code compiles.", "This addresses the reported diagnostic."}

// renderPatch wraps a diff the way a chat model answers: mostly a sentence
// and a ```diff block, sometimes the bare diff or the diff after a sentence
// without a fence. A truncated hunk is a reply cut short: its fence is
// never closed.
func renderPatch(diff string, o Outcome, r *rand.Rand) string {
	if o.Mutation == NoPatch {
		return diff
	}
	lead := patchLeads[r.IntN(len(patchLeads))]
	switch r.IntN(10) {
	case 0:
		return diff
	case 1:
		return lead + "\n\n" + diff
	}
	tag := "diff"
	if r.IntN(5) == 0 {
		tag = "patch"
	}
	text := lead + "\n\n```" + tag + "\n" + strings.TrimRight(diff, "\n") + "\n"
	if o.Mutation == TruncatedHunk {
		return strings.TrimSuffix(text, "\n")
	}
	text += "```\n"
	if tail := patchTails[r.IntN(len(patchTails))]; tail != "" {
		text += "\n" + tail + "\n"
	}
	return text
}

// cfTask is what the simulated policy reads of a compile-fix task.
type cfTask struct {
	lang  string            // the task's language, lower case
	files map[string]string // path → content, from the prompt's file blocks
	ref   string            // the reference patch as the task states it
	// fixed holds, for each file the reference changes (and that it applies
	// to), the file's content after the reference patch.
	fixed   map[string]string
	targets []cfTarget
}

// cfTarget is a place to act on: a target diagnostic's line (0-based) in a
// file the prompt shows.
type cfTarget struct {
	file string
	line int
}

var reFileBlock = regexp.MustCompile(`^--- (\S(?:.*\S)?) ---$`)

// parseCompileFix reads the task: the prompt's "--- path ---" file blocks
// (each runs to the next header or the end of the prompt), the reference
// patch (go-gitdiff, applied to those files) and the target diagnostics.
// Targets outside the shown files are skipped; without any, the first line
// the reference changes is the target.
func parseCompileFix(task *topics.Task) *cfTask {
	c := &cfTask{lang: strings.ToLower(task.TaskLanguage()), files: fileBlocks(task.Prompt),
		ref: task.ReferencePatch, fixed: map[string]string{}}
	if strings.TrimSpace(c.ref) == "" {
		c.ref = ""
	} else {
		c.ref = tidyDiff(c.ref)
	}
	if c.ref != "" {
		if fs, _, err := gitdiff.Parse(strings.NewReader(c.ref)); err == nil {
			for _, f := range fs {
				p := diffPath(f)
				old, ok := c.files[p]
				if !ok || f.IsBinary || f.IsNew || f.IsDelete || len(f.TextFragments) == 0 {
					continue
				}
				if fixed, ok := applyFile(f, old); ok && fixed != old {
					c.fixed[p] = fixed
				}
			}
		}
	}
	if task.CompileFix != nil {
		for _, d := range task.CompileFix.Targets {
			p := cleanPath(d.File)
			content, ok := c.files[p]
			if ok && d.Line >= 1 && d.Line <= len(splitKeep(content)) {
				c.targets = append(c.targets, cfTarget{p, d.Line - 1})
			}
		}
	}
	if len(c.targets) == 0 {
		for _, p := range sortedKeys(c.fixed) {
			old := c.files[p]
			if es := lineEdits(old, c.fixed[p]); len(es) > 0 {
				l := min(es[0].start, len(splitKeep(old))-1)
				if l >= 0 {
					c.targets = append(c.targets, cfTarget{p, l})
					break
				}
			}
		}
	}
	return c
}

// fileBlocks parses the "--- path ---\n<content>" blocks of a prompt. A
// block whose content is one fenced code block loses the fence. Blank lines
// at the end of a block are taken for a separator, not for the file's: a
// prompt may or may not space its blocks, and few source files end with a
// blank line, while a phantom one breaks every hunk that reaches the end
// of the file (patch anchors such a hunk there).
func fileBlocks(prompt string) map[string]string {
	files := map[string]string{}
	cur := ""
	var b strings.Builder
	flush := func() {
		if cur != "" {
			files[cur] = trimBlankTail(unfence(b.String()))
		}
		b.Reset()
	}
	for _, l := range strings.SplitAfter(strings.ReplaceAll(prompt, "\r\n", "\n"), "\n") {
		if m := reFileBlock.FindStringSubmatch(strings.TrimRight(l, "\n")); m != nil {
			flush()
			cur = cleanPath(m[1])
			continue
		}
		if cur != "" {
			b.WriteString(l)
		}
	}
	flush()
	return files
}

func trimBlankTail(s string) string {
	ls := splitKeep(s)
	for len(ls) > 0 && blank(ls[len(ls)-1]) {
		ls = ls[:len(ls)-1]
	}
	return strings.Join(ls, "")
}

func unfence(s string) string {
	ls := splitKeep(s)
	first, last := 0, len(ls)-1
	for last >= 0 && strings.TrimSpace(ls[last]) == "" {
		last--
	}
	if last <= first || fenceOf(strings.TrimSpace(ls[first])) == "" {
		return s
	}
	f := fenceOf(strings.TrimSpace(ls[first]))
	if t := strings.TrimSpace(ls[last]); !strings.HasPrefix(t, f) || strings.Trim(t, f[:1]) != "" {
		return s
	}
	return strings.Join(ls[first+1:last], "")
}

func cleanPath(p string) string {
	p = strings.TrimSpace(p)
	if p == "" {
		return ""
	}
	return strings.TrimPrefix(path.Clean(p), "./")
}

// diffPath is the workspace path a file diff changes, a/ or b/ dropped.
func diffPath(f *gitdiff.File) string {
	p := f.NewName
	if p == "" || p == "/dev/null" || f.IsDelete {
		p = f.OldName
	}
	if strings.HasPrefix(p, "a/") || strings.HasPrefix(p, "b/") {
		p = p[2:]
	}
	return cleanPath(p)
}

// applyFile applies one file's diff to old: strictly, else each hunk where
// its old lines occur nearest its stated position.
func applyFile(f *gitdiff.File, old string) (string, bool) {
	var buf bytes.Buffer
	if gitdiff.Apply(&buf, strings.NewReader(old), f) == nil {
		return buf.String(), true
	}
	lines := splitKeep(old)
	frags := slices.Clone(f.TextFragments)
	slices.SortStableFunc(frags, func(a, b *gitdiff.TextFragment) int { return int(a.OldPosition - b.OldPosition) })
	var out []string
	pos := 0
	for _, fr := range frags {
		var oldL, newL []string
		for _, l := range fr.Lines {
			if l.Old() {
				oldL = append(oldL, l.Line)
			}
			if l.New() {
				newL = append(newL, l.Line)
			}
		}
		at := -1
		hint := int(fr.OldPosition) - 1
		for k := pos; k+len(oldL) <= len(lines); k++ {
			if slices.Equal(lines[k:k+len(oldL)], oldL) && (at < 0 || absInt(k-hint) < absInt(at-hint)) {
				at = k
			}
		}
		if at < 0 || len(oldL) == 0 {
			return "", false
		}
		out = append(out, lines[pos:at]...)
		out = append(out, newL...)
		pos = at + len(oldL)
	}
	out = append(out, lines[pos:]...)
	return strings.Join(out, ""), true
}

func absInt(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// splitKeep splits s into lines that keep their "\n" (the last may lack it).
func splitKeep(s string) []string {
	ls := strings.SplitAfter(s, "\n")
	if len(ls) > 0 && ls[len(ls)-1] == "" {
		ls = ls[:len(ls)-1]
	}
	return ls
}

// lineEdit replaces lines [start, end) with ins.
type lineEdit struct {
	start, end int
	ins        []string
}

// lineEdits are the line edits (go-udiff) that turn old into new.
func lineEdits(old, new string) []lineEdit {
	var out []lineEdit
	for _, e := range udiff.Lines(old, new) {
		s := strings.Count(old[:e.Start], "\n")
		end := strings.Count(old[:e.End], "\n")
		if e.End == len(old) && len(old) > 0 && old[len(old)-1] != '\n' {
			end++
		}
		out = append(out, lineEdit{s, end, splitKeep(e.New)})
	}
	return out
}

// applyEdits applies sorted, disjoint line edits.
func applyEdits(lines []string, es []lineEdit) []string {
	var out []string
	pos := 0
	for _, e := range es {
		out = append(out, lines[pos:e.start]...)
		out = append(out, e.ins...)
		pos = e.end
	}
	return append(out, lines[pos:]...)
}

// fileDiff is the git-style unified diff (three lines of context) that
// turns old into new, computed with go-udiff; "" when they are equal.
func fileDiff(p, old, new string) string {
	return labelledDiff(p, p, old, new)
}

func labelledDiff(from, to, old, new string) string {
	if old == new {
		return ""
	}
	u, err := udiff.ToUnified("a/"+from, "b/"+to, old, udiff.Lines(old, new), udiff.DefaultContextLines)
	if err != nil || u == "" {
		return ""
	}
	return "diff --git a/" + from + " b/" + to + "\n" + u
}

// make builds the diff of outcome m acting on target t (nil when the task
// has none); ok is false when m does not apply to this task.
func (c *cfTask) make(m Mutation, t *cfTarget, r *rand.Rand) (string, bool) {
	switch m {
	case DeleteLine, CommentOut, StubFunction, WrongSpot, BadContext:
		if t == nil {
			return "", false
		}
		old := c.files[t.file]
		lines := splitKeep(old)
		var nl []string
		var ok bool
		switch m {
		case DeleteLine:
			nl, ok = deleteLine(lines, t.line)
		case CommentOut:
			nl, ok = commentOut(lines, t.line, c.langOf(t.file))
		case StubFunction:
			nl, ok = stubFunction(lines, t.line, c.langOf(t.file))
		case WrongSpot:
			nl, ok = c.wrongSpot(lines, t, r)
		case BadContext:
			return c.badContext(lines, t)
		}
		if !ok {
			return "", false
		}
		d := fileDiff(t.file, old, strings.Join(nl, ""))
		return d, d != ""
	case MalformedHeader:
		return malformHeader(c.base(t), r)
	case TruncatedHunk:
		return truncateHunk(c.base(t), r)
	case MissingFile:
		return c.missingFile(c.base(t), t, r)
	}
	return "", false
}

// base is the diff the broken patches spoil: the reference repair of the
// target's file as go-udiff writes it, else the reference patch, else the
// target line commented out.
func (c *cfTask) base(t *cfTarget) string {
	if t != nil {
		if fixed, ok := c.fixed[t.file]; ok {
			return fileDiff(t.file, c.files[t.file], fixed)
		}
	}
	if c.ref != "" {
		return c.ref
	}
	if t != nil {
		old := c.files[t.file]
		if nl, ok := commentOut(splitKeep(old), t.line, c.langOf(t.file)); ok {
			return fileDiff(t.file, old, strings.Join(nl, ""))
		}
	}
	return ""
}

// langOf is a file's language, by extension, else the task's.
func (c *cfTask) langOf(p string) string {
	switch strings.ToLower(path.Ext(p)) {
	case ".py":
		return "python"
	case ".go":
		return "go"
	case ".java":
		return "java"
	case ".c", ".h":
		return "c"
	case ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx":
		return "cpp"
	case ".rs":
		return "rust"
	case ".js", ".mjs", ".ts", ".tsx", ".jsx":
		return "js"
	case ".sh", ".bash":
		return "sh"
	case ".rb":
		return "ruby"
	}
	return c.lang
}

func commentPrefix(lang string) string {
	switch lang {
	case "python", "sh", "bash", "ruby", "perl", "r", "make", "yaml", "toml":
		return "#"
	case "sql", "lua", "haskell":
		return "--"
	}
	return "//"
}

func blank(l string) bool { return strings.TrimSpace(l) == "" }

func indentOf(l string) string { return l[:len(l)-len(strings.TrimLeft(l, " \t"))] }

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
	untouchable := map[int]bool{t.line: true}
	for _, o := range c.targets {
		if o.file == t.file {
			untouchable[o.line] = true
		}
	}
	var near *lineEdit
	fixed, hasFix := c.fixed[t.file]
	if hasFix {
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
		oldMid, newMid, atEnd := lineChange(lines[near.start], near.ins[0])
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
	}
	best := 1
	for best < min(2, len(neighbours)) && rank(neighbours[best]) == rank(neighbours[0]) {
		best++
	}
	j := neighbours[r.IntN(best)]
	return commentOut(lines, j, c.langOf(t.file))
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

// badContext is the reference repair (else the target commented out)
// written against a misremembered file: the identifiers of the lines
// around the change renamed the way a model misquotes code, so that the
// hunk matches nothing. At least one removed line is a misremembered one,
// which no fuzz can match.
func (c *cfTask) badContext(lines []string, t *cfTarget) (string, bool) {
	old := strings.Join(lines, "")
	lang := c.langOf(t.file)
	var es []lineEdit
	if fixed, ok := c.fixed[t.file]; ok {
		es = lineEdits(old, fixed)
	} else if nl, ok := commentOut(lines, t.line, lang); ok {
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
			return i >= e.start-udiff.DefaultContextLines && i < e.end+udiff.DefaultContextLines
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
			if m, ok := misremember(l, known); ok {
				wrong[i], altered[i] = m, true
			}
		}
	}
	deletesAltered := false
	for i := range lines {
		deletesAltered = deletesAltered || altered[i] && inEdit(i)
	}
	if !deletesAltered {
		// The change removes no misremembered line: "restore" the nearest
		// one, so that the hunk removes it. Failing any, a removed line (or
		// the nearest line) is misquoted with a comment.
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
				return "", false
			}
			body := strings.TrimRight(lines[best], "\r\n")
			wrong[best] = body + " " + commentPrefix(lang) + " fixed" + lines[best][len(body):]
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
	}
	d := fileDiff(t.file, strings.Join(wrong, ""), strings.Join(applyEdits(wrong, es), ""))
	return d, d != ""
}

var keepWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`include define ifdef ifndef endif return static const struct union enum
		typedef unsigned signed void char short long float double sizeof while break continue switch case
		default else goto extern inline func package import type interface chan select defer range string
		error true false public private protected class final abstract extends implements throws throw catch
		finally null this super boolean byte native from lambda pass raise yield with assert async await
		global nonlocal None True False self elif print main println printf strings fmt Println Sprintf
		Errorf List Integer String System out len range append make malloc free NULL nil def len isinstance
		Override Exception str int float bool list dict set tuple bytes object`) {
		keepWords[w] = true
	}
}

var reIdentifier = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)

// aliases are names a model recalls as others.
var aliases = map[string]string{"sum": "acc", "xs": "arr", "arr": "xs", "res": "out", "err": "e", "buf": "buffer",
	"idx": "index", "cnt": "count", "val": "value", "tmp": "temp", "num": "n", "ptr": "p", "ret": "result"}

// alias is how a model misremembers an identifier: a known alias, else a
// long name without its inner vowels (counter → cntr); keywords, library
// names and short names stay.
func alias(w string) string {
	if keepWords[w] {
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
func misremember(l string, known map[string]bool) (string, bool) {
	body := strings.TrimRight(l, "\r\n")
	trim := strings.TrimSpace(body)
	for _, p := range []string{"#", "import ", "package ", "from ", "using "} {
		if strings.HasPrefix(trim, p) {
			return l, false
		}
	}
	out := reIdentifier.ReplaceAllStringFunc(body, alias)
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
	if fs, _, err := gitdiff.Parse(strings.NewReader(diff)); err == nil && len(fs) > 0 {
		p = diffPath(fs[0])
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

// stubFunction replaces the body of the function around line t with a
// return of a zero value of its result type (none for void).
func stubFunction(lines []string, t int, lang string) ([]string, bool) {
	if lang == "python" {
		return stubPython(lines, t)
	}
	return stubBraces(lines, t, lang)
}

var reDef = regexp.MustCompile(`^(\s*)(?:async\s+)?def\s+\w+`)

func stubPython(lines []string, t int) ([]string, bool) {
	width := func(l string) int { return len(indentOf(l)) }
	minIndent := 1 << 30
	d := -1
	for i := t; i >= 0; i-- {
		if blank(lines[i]) {
			continue
		}
		if reDef.MatchString(lines[i]) && (i == t || width(lines[i]) < minIndent) {
			d = i
			break
		}
		minIndent = min(minIndent, width(lines[i]))
	}
	if d < 0 {
		return nil, false
	}
	defIndent := width(lines[d])
	// The header ends at the first line ending with ':' outside brackets.
	e, depth := d, 0
	for i := d; i < len(lines) && i < d+10; i++ {
		m := maskStrings(strings.TrimRight(lines[i], "\r\n"))
		depth += strings.Count(m, "(") + strings.Count(m, "[") - strings.Count(m, ")") - strings.Count(m, "]")
		if depth <= 0 && strings.HasSuffix(strings.TrimSpace(m), ":") {
			e = i
			break
		}
	}
	end := e + 1
	for k := e + 1; k < len(lines); k++ {
		if blank(lines[k]) {
			continue
		}
		if width(lines[k]) <= defIndent {
			break
		}
		end = k + 1
	}
	if end == e+1 {
		return nil, false
	}
	var ind string
	for k := e + 1; k < end; k++ {
		if !blank(lines[k]) {
			ind = indentOf(lines[k])
			break
		}
	}
	header := strings.Join(lines[d:e+1], "")
	ann := ""
	if i := strings.LastIndex(header, "->"); i >= 0 {
		ann = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(header[i+2:]), ":"))
	}
	stub := ind + "return " + pyZero(ann) + "\n"
	if end-e-1 == 1 && lines[e+1] == stub {
		return nil, false
	}
	out := slices.Clone(lines[:e+1])
	out = append(out, stub)
	return append(out, lines[end:]...), true
}

func pyZero(ann string) string {
	base := ann
	if i := strings.IndexAny(base, "[ |"); i >= 0 {
		base = base[:i]
	}
	switch strings.TrimPrefix(strings.TrimPrefix(base, "typing."), "t.") {
	case "int":
		return "0"
	case "float":
		return "0.0"
	case "complex":
		return "0j"
	case "str":
		return `""`
	case "bytes":
		return `b""`
	case "bool":
		return "False"
	case "list", "List":
		return "[]"
	case "dict", "Dict":
		return "{}"
	case "set", "Set":
		return "set()"
	case "tuple", "Tuple":
		return "()"
	}
	return "None"
}

// maskCode blanks the comments and string literals of a brace language's
// lines (same lengths), so that braces and parentheses can be counted.
func maskCode(lines []string, lang string) []string {
	out := make([]string, len(lines))
	inBlock, inRaw := false, false
	for i, l := range lines {
		b := []byte(l)
		for j := 0; j < len(b); j++ {
			ch := b[j]
			switch {
			case ch == '\n' || ch == '\r':
			case inBlock:
				if ch == '*' && j+1 < len(b) && b[j+1] == '/' {
					b[j+1] = ' '
					j++
					inBlock = false
				}
				b[j] = ' '
			case inRaw:
				if ch == '`' {
					inRaw = false
				}
				b[j] = ' '
			case ch == '/' && j+1 < len(b) && b[j+1] == '/':
				for k := j; k < len(b) && b[k] != '\n' && b[k] != '\r'; k++ {
					b[k] = ' '
				}
				j = len(b)
			case ch == '/' && j+1 < len(b) && b[j+1] == '*':
				b[j], b[j+1] = ' ', ' '
				j++
				inBlock = true
			case ch == '`' && lang == "go":
				b[j] = ' '
				inRaw = true
			case ch == '"' || (ch == '\'' && lang != "rust"):
				b[j] = ' '
				for j++; j < len(b) && b[j] != '\n'; j++ {
					if b[j] == '\\' && j+1 < len(b) && b[j+1] != '\n' {
						b[j], b[j+1] = ' ', ' '
						j++
						continue
					}
					if b[j] == ch {
						b[j] = ' '
						break
					}
					b[j] = ' '
				}
			}
		}
		out[i] = string(b)
	}
	return out
}

var controlWords = map[string]bool{"if": true, "for": true, "while": true, "switch": true, "catch": true,
	"else": true, "do": true, "try": true, "synchronized": true, "return": true, "sizeof": true,
	"foreach": true, "using": true, "lock": true, "match": true, "with": true}

// stubBraces stubs the innermost function (by its header: Go "func",
// else a name and a parameter list that is not a control statement) whose
// braces hold line t. The braces must open at the end of a line and close
// at the start of one.
func stubBraces(lines []string, t int, lang string) ([]string, bool) {
	masked := maskCode(lines, lang)
	type pair struct{ openLine, openCol, closeLine int }
	var stack []pair
	var pairs []pair
	for i, m := range masked {
		for j := 0; j < len(m); j++ {
			switch m[j] {
			case '{':
				stack = append(stack, pair{i, j, -1})
			case '}':
				if n := len(stack); n > 0 {
					p := stack[n-1]
					stack = stack[:n-1]
					p.closeLine = i
					pairs = append(pairs, p)
				}
			}
		}
	}
	// Innermost first: pairs close in order, so an inner pair precedes the
	// pair that holds it; the first function found is the innermost one.
	for _, p := range pairs {
		header, hStart := braceHeader(masked, p.openLine, p.openCol)
		if t < hStart || t > p.closeLine {
			continue
		}
		stmt, isFunc := stubStatement(header, lang, strings.Join(lines, ""))
		if !isFunc {
			continue
		}
		if p.openLine == p.closeLine || strings.TrimSpace(masked[p.openLine][p.openCol+1:]) != "" ||
			strings.TrimSpace(masked[p.closeLine][:strings.IndexByte(masked[p.closeLine], '}')]) != "" {
			return nil, false
		}
		ind := ""
		for k := p.openLine + 1; k < p.closeLine; k++ {
			if !blank(lines[k]) {
				ind = indentOf(lines[k])
				break
			}
		}
		if ind == "" {
			unit := "    "
			if lang == "go" || strings.HasPrefix(indentOf(lines[p.closeLine]), "\t") {
				unit = "\t"
			}
			ind = indentOf(lines[p.closeLine]) + unit
		}
		out := slices.Clone(lines[:p.openLine+1])
		if stmt != "" {
			out = append(out, ind+stmt+"\n")
		}
		out = append(out, lines[p.closeLine:]...)
		if slices.Equal(out, lines) {
			return nil, false
		}
		return out, true
	}
	return nil, false
}

// braceHeader is the code before the brace at (line, col), back to the
// previous statement, block or preprocessor line (at most five lines).
func braceHeader(masked []string, line, col int) (string, int) {
	h := masked[line][:col]
	start := line
	if k := strings.LastIndexAny(h, ";{}"); k >= 0 {
		return h[k+1:], line
	}
	for l := line - 1; l >= 0 && l >= line-5; l-- {
		seg := strings.TrimRight(masked[l], "\r\n")
		if blank(seg) || strings.HasPrefix(strings.TrimSpace(seg), "#") {
			break
		}
		if k := strings.LastIndexAny(seg, ";{}"); k >= 0 {
			if tail := seg[k+1:]; !blank(tail) {
				h, start = tail+" "+h, l
			}
			break
		}
		h, start = seg+" "+h, l
	}
	return h, start
}

// stubStatement reads a brace header: whether it opens a function and the
// statement returning a zero value of its result ("" for none).
func stubStatement(header, lang, file string) (string, bool) {
	h := normalizeSpaces(header)
	if lang == "go" {
		if !strings.HasPrefix(h, "func ") && !strings.HasPrefix(h, "func(") {
			return "", false
		}
		return goStub(h[4:])
	}
	open := strings.IndexByte(h, '(')
	if open < 0 {
		return "", false
	}
	pre := strings.TrimSpace(h[:open])
	k := len(pre)
	for k > 0 && isIdent(pre[k-1]) {
		k--
	}
	name := pre[k:]
	typ := strings.TrimSpace(pre[:k])
	if name == "" || controlWords[name] || strings.ContainsAny(typ, "=(") || strings.HasSuffix(typ, ".") ||
		typ == "new" || strings.HasSuffix(typ, " new") {
		return "", false
	}
	close := matchParen(h, open)
	if close < 0 || strings.Contains(h[close:], ";") {
		return "", false
	}
	rest := strings.TrimSpace(h[close+1:])
	switch lang {
	case "java", "kotlin", "csharp":
		return javaStub(typ)
	case "rust":
		if !strings.Contains(typ, "fn") {
			return "", false
		}
		if !strings.HasPrefix(rest, "->") {
			return "", true
		}
		return "Default::default()", true
	case "js":
		return "return;", true
	}
	return cStub(typ, name, lang, file)
}

// matchParen is the index of the parenthesis closing the one at open.
func matchParen(s string, open int) int {
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

func cStub(typ, name, lang, file string) (string, bool) {
	var kept []string
	for _, w := range strings.Fields(strings.ReplaceAll(typ, "*", " * ")) {
		switch w {
		case "static", "inline", "extern", "virtual", "explicit", "constexpr", "__inline", "__inline__", "friend":
			continue
		}
		kept = append(kept, w)
	}
	// "Foo::bar": the qualifier is not part of the type.
	for len(kept) > 0 && strings.HasSuffix(kept[len(kept)-1], "::") {
		kept = kept[:len(kept)-1]
	}
	t := strings.ReplaceAll(strings.Join(kept, " "), " *", "*")
	t = strings.ReplaceAll(t, "* ", "*")
	switch {
	case t == "" || t == "void" || strings.HasPrefix(name, "~"):
		return "", true
	case name == "main":
		return "return 0;", true
	case strings.Contains(t, "*"):
		if lang == "cpp" {
			return "return nullptr;", true
		}
		if strings.Contains(file, "NULL") || strings.Contains(file, "<std") || strings.Contains(file, "<string.h>") {
			return "return NULL;", true
		}
		return "return 0;", true
	case t == "bool" || t == "_Bool" || t == "const bool":
		if lang == "cpp" {
			return "return false;", true
		}
		return "return 0;", true
	case cScalar(t):
		return "return 0;", true
	case lang == "cpp":
		return "return {};", true
	}
	return "return (" + t + "){0};", true
}

var reCInt = regexp.MustCompile(`^u?int(?:_least|_fast)?\d*_t$`)

func cScalar(t string) bool {
	words := strings.Fields(t)
	if len(words) > 0 && words[0] == "const" {
		words = words[1:]
	}
	if len(words) > 0 && words[0] == "enum" {
		return true
	}
	for _, w := range words {
		switch w {
		case "int", "long", "short", "char", "unsigned", "signed", "float", "double", "size_t", "ssize_t",
			"ptrdiff_t", "intptr_t", "uintptr_t", "off_t", "wchar_t", "intmax_t", "uintmax_t":
		default:
			if !reCInt.MatchString(w) {
				return false
			}
		}
	}
	return len(words) > 0
}

func javaStub(typ string) (string, bool) {
	var kept []string
	depth := 0
	for _, w := range strings.Fields(strings.NewReplacer("<", " < ", ">", " > ").Replace(typ)) {
		switch {
		case w == "<":
			depth++
			if depth == 1 && len(kept) == 0 {
				continue // type parameters: <T> T first(...)
			}
		case w == ">":
			depth--
		case strings.HasPrefix(w, "@"):
			continue
		}
		switch w {
		case "public", "private", "protected", "static", "final", "abstract", "synchronized", "native",
			"default", "strictfp", "override", "virtual", "async", "internal":
			continue
		}
		if depth > 0 && len(kept) == 0 {
			continue
		}
		if w == ">" && len(kept) == 0 {
			continue
		}
		kept = append(kept, w)
	}
	t := strings.Join(kept, "")
	switch t {
	case "", "void":
		return "", true
	case "boolean", "bool":
		return "return false;", true
	case "int", "long", "short", "byte", "char", "float", "double":
		return "return 0;", true
	}
	return "return null;", true
}

// goStub reads what follows "func" in a Go header: an optional receiver,
// the name, type parameters, the parameters and the results.
func goStub(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "(") {
		c := matchParen(s, 0)
		if c < 0 {
			return "", false
		}
		s = strings.TrimSpace(s[c+1:])
	}
	k := 0
	for k < len(s) && isIdent(s[k]) {
		k++
	}
	if k == 0 {
		return "", false
	}
	s = strings.TrimSpace(s[k:])
	if strings.HasPrefix(s, "[") {
		depth := 0
		for i := 0; i < len(s); i++ {
			if s[i] == '[' {
				depth++
			} else if s[i] == ']' {
				depth--
				if depth == 0 {
					s = strings.TrimSpace(s[i+1:])
					break
				}
			}
		}
	}
	if !strings.HasPrefix(s, "(") {
		return "", false
	}
	c := matchParen(s, 0)
	if c < 0 {
		return "", false
	}
	res := strings.TrimSpace(s[c+1:])
	if res == "" {
		return "", true
	}
	items := []string{res}
	if strings.HasPrefix(res, "(") && matchParen(res, 0) == len(res)-1 {
		items = splitTop(res[1 : len(res)-1])
		if goNamedGroup(items) {
			return "return", true // named results
		}
	}
	zeros := make([]string, len(items))
	for i, it := range items {
		zeros[i] = goZero(it)
	}
	return "return " + strings.Join(zeros, ", "), true
}

// goNamedGroup says whether a result list names its results ("a, b int").
func goNamedGroup(items []string) bool {
	for _, it := range items {
		if f := strings.Fields(it); len(f) >= 2 && isGoName(f[0]) && !goTypeWord(f[0]) {
			return true
		}
	}
	return false
}

func isGoName(w string) bool {
	if w == "" || !(w[0] == '_' || 'a' <= w[0] && w[0] <= 'z' || 'A' <= w[0] && w[0] <= 'Z') {
		return false
	}
	for i := 0; i < len(w); i++ {
		if !isIdent(w[i]) {
			return false
		}
	}
	return true
}

func goTypeWord(w string) bool {
	return w == "chan" || w == "func" || w == "map" || w == "struct" || w == "interface"
}

// splitTop splits a list at its top-level commas.
func splitTop(s string) []string {
	var out []string
	depth, last := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[last:i]))
				last = i + 1
			}
		}
	}
	return append(out, strings.TrimSpace(s[last:]))
}

func goZero(t string) string {
	t = strings.TrimSpace(t)
	switch t {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "uintptr",
		"float32", "float64", "complex64", "complex128", "byte", "rune":
		return "0"
	case "string":
		return `""`
	case "bool":
		return "false"
	case "error", "any":
		return "nil"
	}
	for _, p := range []string{"*", "[]", "map[", "chan ", "chan<-", "<-chan", "func(", "func (", "interface"} {
		if strings.HasPrefix(t, p) {
			return "nil"
		}
	}
	return "*new(" + t + ")"
}
