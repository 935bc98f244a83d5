package govern

import (
	"context"
	"errors"
	"path"
	"slices"
	"strings"

	"github.com/murphy-rl/murphy/stages/govern/judge"
	"github.com/murphy-rl/murphy/topics"
)

// StepScorer gives each step of a response a process score s_i in [0,1].
// The scores become the loss weights of the step's tokens; they never enter
// the reward or its normalisation. A nil result means "not scored": every
// token keeps weight 1. An error is a scorer failure (Config.ScorerFailure).
type StepScorer interface {
	Name() string
	// Score scores steps (in response order). aligned reports whether each
	// step's Text is its own part of the response (see Step).
	Score(ctx context.Context, task *topics.Task, ex *topics.Execution, steps []Step, aligned bool) ([]float32, error)
}

// ErrUnaligned: the scorer needs step texts and the response text could
// not be cut into its steps. The sample stays unscored (uniform weights).
var ErrUnaligned = errors.New("step texts not aligned with step ends")

// ScorerError is a failed scoring.
type ScorerError struct {
	Scorer string
	Err    error
}

func (e *ScorerError) Error() string { return "scorer " + e.Scorer + ": " + e.Err.Error() }
func (e *ScorerError) Unwrap() error { return e.Err }

// NoneScorer scores nothing: uniform loss weights.
type NoneScorer struct{}

// Name implements StepScorer.
func (NoneScorer) Name() string { return ScorerNone }

// Score implements StepScorer.
func (NoneScorer) Score(context.Context, *topics.Task, *topics.Execution, []Step, bool) ([]float32, error) {
	return nil, nil
}

// HeuristicScorer scores the steps of multi-step repair trajectories by
// what their tool calls do. A step scores 1 unless it is
//
//   - a repeated inspection: it reads a file (same path and range) already
//     read with no edit to that file in between (RepeatedInspectionScore);
//   - a no-op edit: old text equal to new text, a patch whose removed lines
//     equal its added lines, or writing a file with the content it already
//     got from an earlier step (NoOpEditScore);
//   - a repeated action: the same tool call (tool and arguments) as an
//     earlier step with no effective edit in between (inspections are
//     judged by the rule above; running the build again after an edit is
//     not a repetition), or, for steps without
//     a recognised call, the same tokens (or text) as an earlier step
//     (RepeatedActionScore).
//
// An agent episode's steps are read by their tools' roles (topics.ToolStep.Role,
// from the episode's tool specs); plain-text responses by the tool names of
// HeuristicConfig. A single-step response scores 1: there is nothing to
// compare.
type HeuristicScorer struct {
	cfg HeuristicConfig
}

// NewHeuristicScorer returns a heuristic scorer.
func NewHeuristicScorer(cfg HeuristicConfig) *HeuristicScorer { return &HeuristicScorer{cfg: cfg} }

// Name implements StepScorer.
func (h *HeuristicScorer) Name() string { return ScorerHeuristic }

type actionKind int

const (
	actOther actionKind = iota
	actInspect
	actEdit
)

// Score implements StepScorer.
func (h *HeuristicScorer) Score(_ context.Context, _ *topics.Task, ex *topics.Execution, steps []Step, aligned bool) ([]float32, error) {
	scores := make([]float32, len(steps))
	read := map[string]bool{}      // inspection keys since the last edit of their file
	written := map[string]string{} // path -> content last written whole
	seen := map[string]bool{}      // canonical actions since the last effective edit
	for i, st := range steps {
		s := float32(1)
		lower := func(v float64) { s = min(s, float32(v)) }
		if a := st.Action; a != nil {
			kind, paths, keys, noop := h.classify(a, written)
			if kind != actInspect && seen[a.Canonical] { // inspections: by file, below
				lower(h.cfg.RepeatedActionScore)
			}
			seen[a.Canonical] = true
			switch kind {
			case actInspect:
				for _, k := range keys {
					if read[k] {
						lower(h.cfg.RepeatedInspectionScore)
					}
					read[k] = true
				}
			case actEdit:
				if noop {
					lower(h.cfg.NoOpEditScore)
					break
				}
				// The files changed: reading them again, or repeating an
				// action (running the tests), is new information now.
				clear(seen)
				seen[a.Canonical] = true
				if len(paths) == 0 {
					clear(read)
				}
				for _, p := range paths {
					for k := range read {
						if k == p || strings.HasPrefix(k, p+"#") {
							delete(read, k)
						}
					}
				}
			}
		} else {
			for j := range i {
				if steps[j].Action != nil {
					continue
				}
				same := sameTokens(&ex.Candidate, st.Span, steps[j].Span)
				if len(ex.ResponseTokenIDs) == 0 && aligned {
					same = st.Text != "" && normalizeSpace(st.Text) == normalizeSpace(steps[j].Text)
				}
				if same {
					lower(h.cfg.RepeatedActionScore)
					break
				}
			}
		}
		scores[i] = s
	}
	return scores, nil
}

var (
	pathKeys    = []string{"path", "file", "filename", "file_path", "filepath", "target_file", "absolute_path"}
	rangeKeys   = []string{"view_range", "line_range", "start_line", "end_line", "offset", "limit", "lines"}
	contentKeys = []string{"content", "file_text", "text", "contents"}
	oldKeys     = []string{"old_str", "old", "search", "old_string", "old_text", "find"}
	newKeys     = []string{"new_str", "new", "replace", "new_string", "new_text", "replacement"}
	patchKeys   = []string{"patch", "diff", "input"}
)

// classify tells what an action does: its kind, the files it touches, the
// inspection keys (path plus range) it reads, and whether it is a no-op
// edit. written is updated with whole-file writes.
func (h *HeuristicScorer) classify(a *Action, written map[string]string) (kind actionKind, paths, keys []string, noop bool) {
	tool := strings.ToLower(a.Tool)
	if a.Role != "" {
		return h.classifyRole(a, written)
	}
	if slices.Contains(h.cfg.ShellTools, tool) {
		cmd, _ := a.Args["command"].(string)
		if cmd == "" {
			cmd, _ = a.Args["cmd"].(string)
		}
		return shellAction(cmd)
	}
	p := cleanPath(firstString(a.Args, pathKeys...))
	if p != "" {
		paths = []string{p}
	}
	sub, _ := a.Args["command"].(string) // str_replace_editor style: one tool, a sub-command
	switch {
	case slices.Contains(h.cfg.InspectTools, tool) || sub == "view":
		return actInspect, paths, inspectKeys(paths, a.Args), false
	case slices.Contains(h.cfg.EditTools, tool) || slices.Contains([]string{"str_replace", "create", "insert", "undo_edit"}, sub):
		return actEdit, paths, nil, noOpEdit(a.Args, p, written)
	}
	return actOther, paths, nil, false
}

// classifyRole classifies an agent episode's action by its tool's role
// (topics.ToolRole*): reads are inspections, edits are edits (a refused one
// changes nothing and is no edit), everything else (search, list, verify,
// submit) is compared as an action, so a build after an effective edit is
// new information and a build repeated without one is not.
func (h *HeuristicScorer) classifyRole(a *Action, written map[string]string) (kind actionKind, paths, keys []string, noop bool) {
	p := cleanPath(firstString(a.Args, pathKeys...))
	if p != "" {
		paths = []string{p}
	}
	switch {
	case a.Role == topics.ToolRoleRead:
		return actInspect, paths, inspectKeys(paths, a.Args), false
	case a.Role == topics.ToolRoleEdit && !a.Failed:
		return actEdit, paths, nil, noOpEdit(a.Args, p, written)
	}
	return actOther, paths, nil, false
}

func inspectKeys(paths []string, args map[string]any) []string {
	rng := ""
	for _, k := range rangeKeys {
		if v, ok := args[k]; ok {
			rng += k + "=" + strings.Join(strings.Fields(strings.Trim(fmtAny(v), "[]")), "") + ";"
		}
	}
	keys := make([]string, len(paths))
	for i, p := range paths {
		keys[i] = p
		if rng != "" {
			keys[i] = p + "#" + rng
		}
	}
	return keys
}

func noOpEdit(args map[string]any, p string, written map[string]string) bool {
	old, hasOld := anyString(args, oldKeys)
	nw, hasNew := anyString(args, newKeys)
	if hasOld && hasNew {
		return normalizeSpace(old) == normalizeSpace(nw)
	}
	if content, ok := anyString(args, contentKeys); ok && p != "" {
		prev, had := written[p]
		written[p] = content
		return had && prev == content
	}
	if patch, ok := anyString(args, patchKeys); ok {
		return patchIsNoOp(patch)
	}
	if p != "" {
		delete(written, p) // an edit we cannot see into: forget the content
	}
	return false
}

// patchIsNoOp reports whether a patch changes nothing: it is empty, or a
// unified diff whose every change is white space or comments (the
// reference-patch judge's token comparison). Text that is not a diff is an
// edit we cannot see into, not a no-op.
func patchIsNoOp(patch string) bool {
	if strings.TrimSpace(patch) == "" {
		return true
	}
	noop, isDiff := judge.NoOpDiff(patch)
	return isDiff && noop
}

// shellAction recognises file inspections and edits in a shell command:
// cat, head, tail, less, more, nl and sed -n read their file operands;
// sed -i, output redirection, patch and git apply edit (files unknown: every
// earlier inspection may be stale).
func shellAction(cmd string) (actionKind, []string, []string, bool) {
	first := cmd
	if i := strings.IndexAny(first, "|;&"); i >= 0 {
		first = first[:i]
	}
	f := strings.Fields(first)
	switch {
	case strings.Contains(cmd, "sed -i"), strings.Contains(cmd, ">"), strings.Contains(cmd, "git apply"),
		len(f) > 0 && f[0] == "patch":
		return actEdit, nil, nil, false
	case len(f) == 0:
		return actOther, nil, nil, false
	}
	switch f[0] {
	case "cat", "head", "tail", "less", "more", "nl", "bat":
	case "sed":
		if !slices.Contains(f, "-n") {
			return actOther, nil, nil, false
		}
	default:
		return actOther, nil, nil, false
	}
	var paths []string
	opts := ""
	for i, w := range f[1:] {
		switch {
		case strings.HasPrefix(w, "-"), f[0] == "sed" && i < len(f)-2:
			opts += w + " "
		default:
			paths = append(paths, cleanPath(strings.Trim(w, `'"`)))
		}
	}
	keys := make([]string, len(paths))
	for i, p := range paths {
		keys[i] = p
		if opts != "" {
			keys[i] = p + "#" + f[0] + " " + strings.TrimSpace(opts)
		}
	}
	return actInspect, paths, keys, false
}

func cleanPath(p string) string {
	if p == "" {
		return ""
	}
	return strings.TrimPrefix(path.Clean(p), "./")
}

func anyString(m map[string]any, keys []string) (string, bool) {
	for _, k := range keys {
		if s, ok := m[k].(string); ok {
			return s, true
		}
	}
	return "", false
}

func fmtAny(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = fmtAny(e)
		}
		return strings.Join(parts, ",")
	default:
		if s, ok := v.(interface{ String() string }); ok {
			return s.String()
		}
		return ""
	}
}
