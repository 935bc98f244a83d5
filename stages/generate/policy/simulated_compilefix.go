package policy

import (
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"

	"github.com/murphy-rl/murphy/compilefix/patch"
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
		d := patch.Diff(t.file, old, strings.Join(nl, ""))
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
			return patch.Diff(t.file, c.files[t.file], fixed)
		}
	}
	if c.ref != "" {
		return c.ref
	}
	if t != nil {
		old := c.files[t.file]
		if nl, ok := commentOut(splitKeep(old), t.line, c.langOf(t.file)); ok {
			return patch.Diff(t.file, old, strings.Join(nl, ""))
		}
	}
	return ""
}
