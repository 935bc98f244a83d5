package govern

import (
	"fmt"
	"strings"
	"text/template"
	"time"
	"unicode/utf8"

	"github.com/murphy-rl/murphy/topics"
)

// DefaultRefinementTemplate is the refinement prompt of MURPHY: the original
// task, the failed program and what the executor said about it. For a
// compile-fix task the failed attempt is a diff that was never applied to
// the files the task shows, so the prompt asks for a new diff against those
// original files, not for one on top of the previous attempt.
const DefaultRefinementTemplate = `{{.Task}}

Your previous attempt (turn {{.Turn}} of {{.MaxTurns}}) did not solve the task.

Previous attempt{{if eq .Kind "compile-fix"}} (a patch; it has not been applied, the files above are unchanged){{end}}:
` + "```{{.Language}}" + `
{{.Code}}
` + "```" + `

Result: {{.Status}}{{if .TestsTotal}}, {{.TestsPassed}} of {{.TestsTotal}} tests passed{{end}}.
Feedback from running it:
{{.Feedback}}

{{if eq .Kind "compile-fix"}}Write a new unified diff against the original files shown above (not against your previous attempt) that fixes the build, in one ` + "```diff" + ` code block.{{else}}Write a corrected, complete solution.{{end}}`

// RefinementData are the fields of the refinement template.
type RefinementData struct {
	// Task is the task's problem statement (topics.Task.Prompt).
	Task string
	// TaskID and Kind identify the task.
	TaskID, Kind string
	// Language names the code fence: python, or diff for compile-fix tasks.
	Language string
	// Code is the failed program (possibly shortened, see the length cap).
	Code string
	// Feedback is the executor feedback (possibly shortened).
	Feedback string
	// Status is the execution status and Cause the failure cause.
	Status, Cause string
	// TestsPassed and TestsTotal count the tests.
	TestsPassed, TestsTotal int
	// Turn is the failed node's turn, NextTurn the children's, MaxTurns the
	// tree's last turn.
	Turn, NextTurn, MaxTurns int
}

// EffectiveGroupSizes returns the group size used at each turn 1..MaxTurns
// under the tree's node cap. Without a cap it is TreeSpec.GroupSizeAt.
//
// The cap is enforced without state: the sizes are a function of the
// TreeSpec alone and assume the worst case, that every node below the last
// turn fails and is expanded. With n_t = g_1·…·g_t nodes at turn t, each
// g_t (t >= 2) is the largest size <= GroupSizeAt(t) such that
// n_1 + … + n_t <= MaxNodes; a size of 0 ends the tree at turn t-1. The root
// group (turn 1) is sized by whoever seeded the tree and is taken as given.
// Since every node of a turn asks for the same size, the tree can never
// exceed MaxNodes, whatever arrives in which order.
func EffectiveGroupSizes(s topics.TreeSpec) []int {
	sizes := make([]int, s.MaxTurns)
	total, level := 0, 1
	for t := 1; t <= s.MaxTurns; t++ {
		g := s.GroupSizeAt(t)
		if s.MaxNodes > 0 && t > 1 {
			room := (s.MaxNodes - total) / level
			if room < 0 {
				room = 0
			}
			g = min(g, room)
		}
		if g <= 0 {
			break // sizes[t-1:] stay 0
		}
		sizes[t-1] = g
		level *= g
		total += level
	}
	return sizes
}

// childGroupSize is the number of children a node at turn asks for (0 when
// the tree may not grow past turn).
func childGroupSize(s topics.TreeSpec, turn int) int {
	if turn >= s.MaxTurns || turn < 1 {
		return 0
	}
	return EffectiveGroupSizes(s)[turn]
}

// refiner builds refinement prompts.
type refiner struct {
	tmpl     *template.Template
	maxBytes int
}

func newRefiner(cfg ExpansionConfig) (*refiner, error) {
	t, err := parseTemplate(cfg.Template)
	if err != nil {
		return nil, err
	}
	return &refiner{tmpl: t, maxBytes: cfg.MaxPromptBytes}, nil
}

// trimEnd drops trailing white space: the template places the blocks.
func trimEnd(s string) string { return strings.TrimRight(s, " \t\r\n") }

func languageOf(kind string) string {
	if kind == topics.KindCompileFix {
		return "diff"
	}
	return "python"
}

// Prompt builds the refinement prompt asking for size children of the node
// of ex. It is a pure function of its inputs apart from CreatedAt, so a
// replayed execution yields the same prompt (and the same child node ids).
func (r *refiner) Prompt(ex *topics.Execution, task *topics.Task, cause string, size int, now time.Time) (*topics.Prompt, error) {
	data := RefinementData{
		Task: trimEnd(task.Prompt), TaskID: task.TaskID, Kind: task.Kind, Language: languageOf(task.Kind),
		Code: trimEnd(ex.Code), Feedback: trimEnd(ex.Feedback), Status: ex.Status, Cause: cause,
		TestsPassed: ex.TestsPassed, TestsTotal: ex.TestsTotal,
		Turn: ex.Turn, NextTurn: ex.Turn + 1, MaxTurns: ex.MaxTurns,
	}
	text, err := r.render(data)
	if err != nil {
		return nil, err
	}
	spec := ex.TreeSpec
	spec.GroupSizes = append([]int(nil), ex.GroupSizes...)
	return &topics.Prompt{
		SchemaVersion: topics.SchemaVersion,
		TreeSpec:      spec,
		TreeID:        ex.TreeID,
		TaskID:        ex.TaskID,
		ParentID:      ex.NodeID,
		GroupID:       ex.NodeID,
		Turn:          ex.Turn + 1,
		GroupSize:     size,
		Text:          text,
		Feedback:      ex.Feedback,
		ParentCode:    ex.Code,
		PolicyVersion: ex.PolicyVersion,
		CreatedAt:     now,
	}, nil
}

// render executes the template within the length cap. The task is always
// kept whole. When the full prompt is too long, the budget left after the
// task and the template's own text is shared between feedback and program:
// each may use half, and what one leaves unused goes to the other. The
// feedback keeps its head (status, the failing case) and its tail (the
// traceback's last lines); the program keeps its head and tail too.
func (r *refiner) render(d RefinementData) (string, error) {
	full, err := r.exec(d)
	if err != nil || len(full) <= r.maxBytes {
		return full, err
	}
	bare := d
	bare.Code, bare.Feedback = "", ""
	fixed, err := r.exec(bare)
	if err != nil {
		return "", err
	}
	budget := r.maxBytes - len(fixed)
	if budget <= 0 {
		// The task alone fills the cap: keep it, drop the rest. The policy
		// server decides whether it still fits its window.
		return fixed, nil
	}
	fb, code := len(d.Feedback), len(d.Code)
	half := budget / 2
	switch {
	case fb <= half:
		code = budget - fb
	case code <= budget-half:
		fb = budget - code
	default:
		fb, code = half, budget-half
	}
	origCode := d.Code
	d.Feedback = headTail(d.Feedback, fb)
	d.Code = headTail(origCode, code)
	out, err := r.exec(d)
	// The elision markers may push a tight budget over by a few bytes;
	// shorten the program until it fits.
	for err == nil && len(out) > r.maxBytes && d.Code != "" {
		code -= len(out) - r.maxBytes
		d.Code = headTail(origCode, max(0, code))
		out, err = r.exec(d)
	}
	if err != nil {
		return "", err
	}
	return out, nil
}

func (r *refiner) exec(d RefinementData) (string, error) {
	var sb strings.Builder
	if err := r.tmpl.Execute(&sb, d); err != nil {
		return "", fmt.Errorf("refinement template: %w", err)
	}
	return sb.String(), nil
}

func elisionMarker(n int) string { return fmt.Sprintf("\n[... %d bytes omitted ...]\n", n) }

// headTail shortens s to at most n bytes (when n allows the marker) by
// keeping its head and tail, two thirds head, at UTF-8 boundaries.
func headTail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	marker := elisionMarker(len(s))
	if n <= len(marker) {
		return ""
	}
	keep := n - len(marker)
	head := keep * 2 / 3
	tail := keep - head
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	start := len(s) - tail
	for start < len(s) && !utf8.RuneStart(s[start]) {
		start++
	}
	return s[:head] + elisionMarker(start-head) + s[start:]
}
