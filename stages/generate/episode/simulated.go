package episode

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"regexp"
	"strings"

	"github.com/bluekeyes/go-gitdiff/gitdiff"

	"github.com/murphy-rl/murphy/stages/generate/policy"
	"github.com/murphy-rl/murphy/topics"
)

// SimulatedAgentName is the agent name recorded on simulated episodes. It
// says what it is: these episodes come from no model.
const SimulatedAgentName = "simulated agent (not a model)"

// SimulatedConfig configures the simulated agent. Every choice is drawn
// from hash(Seed, node id): an episode depends only on the seed, the node,
// the task, the prompt and what the tools answer.
type SimulatedConfig struct {
	// Seed fixes every episode.
	Seed int64 `yaml:"seed"`
	// PRepair is the chance that an episode of a root prompt applies the
	// reference fix (Task.ReferencePatch); otherwise it makes a wrong edit.
	PRepair float64 `yaml:"p_repair"`
	// PRepairDiagnostic is that chance for a refinement whose feedback
	// names a target diagnostic (its code, message or file:line).
	PRepairDiagnostic float64 `yaml:"p_repair_diagnostic"`
	// PRepairOther is that chance for a refinement whose feedback does not.
	PRepairOther float64 `yaml:"p_repair_other"`
	// PMismatch is the chance that a wrong edit quotes text that is not in
	// the file (the edit fails); otherwise it deletes the offending line.
	PMismatch float64 `yaml:"p_mismatch"`
	// PSearch is the chance of a search before reading the file.
	PSearch float64 `yaml:"p_search"`
	// PBuild is the chance of building before the end.
	PBuild float64 `yaml:"p_build"`
	// PFixAfterBuild is the chance that a wrong edit whose build failed is
	// followed by the reference fix and another build.
	PFixAfterBuild float64 `yaml:"p_fix_after_build"`
	// PRepeat is the chance that an episode repeats one tool call
	// verbatim right after making it.
	PRepeat float64 `yaml:"p_repeat"`
	// PNoSubmit is the chance that an episode never submits: it keeps
	// reading and building until the step budget.
	PNoSubmit float64 `yaml:"p_no_submit"`
	// PNoToolCall is the chance that an episode ends with a text answer
	// instead of submitting.
	PNoToolCall float64 `yaml:"p_no_tool_call"`
}

// DefaultSimulatedConfig repairs about half the root episodes and most
// refinements told the diagnostic, with a few degenerate episodes.
func DefaultSimulatedConfig() SimulatedConfig {
	return SimulatedConfig{
		Seed: 1, PRepair: 0.5, PRepairDiagnostic: 0.8, PRepairOther: 0.3,
		PMismatch: 0.4, PSearch: 0.5, PBuild: 0.8, PFixAfterBuild: 0.4,
		PRepeat: 0.1, PNoSubmit: 0.05, PNoToolCall: 0.05,
	}
}

// Validate checks that probabilities are in [0, 1].
func (c SimulatedConfig) Validate() error {
	var errs []error
	for _, p := range []struct {
		name string
		v    float64
	}{
		{"p_repair", c.PRepair}, {"p_repair_diagnostic", c.PRepairDiagnostic}, {"p_repair_other", c.PRepairOther},
		{"p_mismatch", c.PMismatch}, {"p_search", c.PSearch}, {"p_build", c.PBuild},
		{"p_fix_after_build", c.PFixAfterBuild}, {"p_repeat", c.PRepeat}, {"p_no_submit", c.PNoSubmit},
		{"p_no_tool_call", c.PNoToolCall},
	} {
		if !(p.v >= 0 && p.v <= 1) {
			errs = append(errs, fmt.Errorf("%s must be in [0,1], got %v", p.name, p.v))
		}
	}
	if c.PNoSubmit+c.PNoToolCall > 1 {
		errs = append(errs, fmt.Errorf("p_no_submit + p_no_tool_call must be <= 1, got %v", c.PNoSubmit+c.PNoToolCall))
	}
	if len(errs) > 0 {
		return fmt.Errorf("simulated agent config: %w", errors.Join(errs...))
	}
	return nil
}

// Feedback readings of the simulated agent.
const (
	FeedbackNone       = "none"       // a root prompt
	FeedbackDiagnostic = "diagnostic" // the feedback names a target diagnostic
	FeedbackOther      = "other"      // feedback that does not
)

// Wrong edits of the simulated agent.
const (
	WrongMismatch   = "mismatch"    // old quotes text that is not in the file
	WrongDeleteLine = "delete_line" // the offending line is deleted
)

// Endings of the simulated agent.
const (
	EndingSubmit     = "submit"
	EndingNoSubmit   = "no_submit"
	EndingNoToolCall = "no_tool_call"
)

// SimulatedPlan is what the simulated agent chose for an episode.
type SimulatedPlan struct {
	// Feedback is how the prompt's feedback was read.
	Feedback string
	// Repair: the first edit is the reference fix; otherwise WrongEdit.
	Repair    bool
	WrongEdit string
	Search    bool
	Build     bool
	// FixAfterBuild: after a wrong edit's failed build, the reference fix.
	FixAfterBuild bool
	// RepeatAt is the turn (0-based) that repeats the previous turn's call;
	// -1 when none does.
	RepeatAt int
	// Ending is submit, no_submit or no_tool_call.
	Ending string
}

// edit is one planned edit call.
type edit struct{ path, old, new string }

// SimulatedAgent is an agent that is NOT a model: a deterministic script
// over the tools. It reads the file the diagnostics name (sometimes after a
// search), edits it (the reference fix parsed from Task.ReferencePatch, or
// a plausible wrong edit), sometimes builds (and after a failed build
// sometimes applies the reference fix), and submits; some episodes repeat a
// call, never submit or end without a call. It repairs more often when the
// prompt's feedback names a target diagnostic. Tokens come from
// policy.Tokenize; logprobs are synthetic. Make one per episode.
type SimulatedAgent struct {
	cfg      SimulatedConfig
	plan     SimulatedPlan
	nodeID   string
	ref      []edit
	target   string // file the episode reads and edits
	diagLine int    // the first target diagnostic's line in target (0 = unknown)
	pattern  string // search pattern
	prompt   []int32
	// promptText is the user message, tokenized for the prompt tokens when
	// the agent was given no prompt.
	promptText string

	queue      []ToolCall
	texts      []string
	turn       int
	last       *ToolCall
	lastTxt    string
	built      bool // the post-build branch was taken
	looping    bool // the ending was planned
	deleteDone bool // the delete-line edit was planned
}

// NewSimulatedAgent plans the episode of node nodeID for the task's prompt
// (prompt may be nil: a root prompt).
func NewSimulatedAgent(cfg SimulatedConfig, task *topics.Task, prompt *topics.Prompt, nodeID string) (*SimulatedAgent, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if task == nil {
		return nil, policy.ErrNoTask
	}
	a := &SimulatedAgent{cfg: cfg, nodeID: nodeID}
	r := a.rngFor("plan")
	a.locate(task)
	repeat := a.choose(r, feedbackReading(task, prompt))
	a.openingScript(r, repeat)
	if prompt != nil {
		a.prompt = prompt.TokenIDs
		if len(a.prompt) == 0 {
			a.prompt = policy.Tokenize(prompt.Text)
		}
	}
	return a, nil
}

// locate finds what the episode works on: the reference patch's edits,
// the target file (the reference's first, else the first target
// diagnostic's), the diagnostic's line in it, and a search pattern (from
// the diagnostic's message, else the first line the reference deletes).
func (a *SimulatedAgent) locate(task *topics.Task) {
	a.ref = referenceEdits(task.ReferencePatch)
	if len(a.ref) > 0 {
		a.target = a.ref[0].path
	}
	if cf := task.CompileFix; cf != nil && len(cf.Targets) > 0 {
		d := cf.Targets[0]
		if a.target == "" {
			a.target = path.Clean(d.File)
		}
		if path.Clean(d.File) == a.target {
			a.diagLine = d.Line
		}
		a.pattern = searchPattern(d.Message)
	}
	if a.pattern == "" && len(a.ref) > 0 {
		if l := firstDeleted(task.ReferencePatch); l != "" {
			a.pattern = regexp.QuoteMeta(strings.TrimSpace(l))
		}
	}
}

// choose draws the plan's choices: repair or a wrong edit, search, build,
// fix after the build, the ending, and the turn of a repeated call, with
// the repair probability of how the feedback reads. It reports whether a
// call is repeated.
func (a *SimulatedAgent) choose(r *rand.Rand, feedback string) bool {
	cfg, p := a.cfg, &a.plan
	p.Feedback = feedback
	pRepair := cfg.PRepair
	switch p.Feedback {
	case FeedbackDiagnostic:
		pRepair = cfg.PRepairDiagnostic
	case FeedbackOther:
		pRepair = cfg.PRepairOther
	}
	// Every draw is made whatever the outcome, so that one probability's
	// value does not shift the others' draws.
	uRepair, uMismatch, uSearch, uBuild, uFix, uRepeat, uEnd := r.Float64(), r.Float64(), r.Float64(), r.Float64(), r.Float64(), r.Float64(), r.Float64()
	p.Repair = len(a.ref) > 0 && uRepair < pRepair
	if !p.Repair {
		p.WrongEdit = WrongDeleteLine
		if uMismatch < cfg.PMismatch {
			p.WrongEdit = WrongMismatch
		}
	}
	p.Search = a.pattern != "" && uSearch < cfg.PSearch
	p.Build = uBuild < cfg.PBuild
	p.FixAfterBuild = !p.Repair && p.Build && len(a.ref) > 0 && uFix < cfg.PFixAfterBuild
	switch {
	case uEnd < cfg.PNoSubmit:
		p.Ending = EndingNoSubmit
	case uEnd < cfg.PNoSubmit+cfg.PNoToolCall:
		p.Ending = EndingNoToolCall
	default:
		p.Ending = EndingSubmit
	}
	return uRepeat < cfg.PRepeat
}

// openingScript queues the opening calls (search, read, edits, build) and
// places the repeated call, when there is one, among the turns before the
// submit.
func (a *SimulatedAgent) openingScript(r *rand.Rand, repeat bool) {
	p := &a.plan
	if p.Search {
		a.push(a.searchCall(r), pick(r, searchTexts))
	}
	a.push(a.readCall(r), pick(r, readTexts))
	switch {
	case p.Repair:
		a.pushEdits(a.ref, r)
	case p.WrongEdit == WrongMismatch && len(a.ref) > 0:
		e := a.ref[0]
		a.pushEdits([]edit{{e.path, perturb(e.old, r), e.new}}, r)
	default:
		// The delete-line edit and its build are planned once the read
		// output is seen (refill).
	}
	deleteLater := !p.Repair && p.WrongEdit == WrongDeleteLine
	if p.Build && !deleteLater {
		a.push(call(ToolBuild), pick(r, buildTexts))
	}
	p.RepeatAt = -1
	if repeat {
		n := len(a.queue) // turns 0..n-1 make no submit
		if deleteLater {
			n++
			if p.Build {
				n++
			}
		}
		p.RepeatAt = 1 + r.IntN(max(n, 1))
	}
}

// Plan is what the agent chose.
func (a *SimulatedAgent) Plan() SimulatedPlan { return a.plan }

// Name implements Agent.
func (a *SimulatedAgent) Name() string { return SimulatedAgentName }

// Tokenize implements Agent with the simple tokenizer.
func (a *SimulatedAgent) Tokenize(_ context.Context, text string) ([]int32, error) {
	return policy.Tokenize(text), nil
}

func (a *SimulatedAgent) push(c ToolCall, text string) {
	a.queue = append(a.queue, c)
	a.texts = append(a.texts, text)
}

func (a *SimulatedAgent) pushEdits(es []edit, r *rand.Rand) {
	for _, e := range es {
		a.push(call(ToolEdit, "path", e.path, "old", e.old, "new", e.new), pick(r, editTexts))
	}
}

// Next implements Agent.
func (a *SimulatedAgent) Next(ctx context.Context, conv []Message, maxTokens int) (*Turn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	turnNo := a.turn
	a.turn++
	r := a.rngFor(fmt.Sprintf("turn/%d", turnNo))
	lastOut := lastToolOutput(conv)

	var c *ToolCall
	var text string
	switch {
	case turnNo == a.plan.RepeatAt && a.last != nil:
		c, text = a.last, a.lastTxt
	default:
		if len(a.queue) == 0 {
			a.refill(conv, lastOut, r)
		}
		if len(a.queue) > 0 {
			c, text = &a.queue[0], a.texts[0]
			a.queue, a.texts = a.queue[1:], a.texts[1:]
		}
	}
	if turnNo == 0 {
		for _, m := range conv {
			if m.Role == "user" {
				a.promptText = m.Content
			}
		}
	}
	if c == nil {
		// The no_tool_call ending.
		return a.turnOf(pick(r, finalTexts), nil, maxTokens, r, turnNo == 0), nil
	}
	cc := *c
	cc.ID = fmt.Sprintf("call_%d", turnNo)
	a.last, a.lastTxt = &cc, text
	return a.turnOf(text, &cc, maxTokens, r, turnNo == 0), nil
}

// refill plans what comes after the opening script, from what the tools
// answered.
func (a *SimulatedAgent) refill(conv []Message, lastOut string, r *rand.Rand) {
	p := a.plan
	if !p.Repair && p.WrongEdit == WrongDeleteLine && !a.deleteDone {
		a.deleteDone = true
		if l := a.offendingLine(conv); l != "" {
			a.push(call(ToolEdit, "path", a.target, "old", l, "new", ""), pick(r, editTexts))
		}
		if p.Build {
			a.push(call(ToolBuild), pick(r, buildTexts))
		}
		if len(a.queue) > 0 {
			return
		}
	}
	if p.FixAfterBuild && !a.built && strings.HasPrefix(lastOut, "build failed") {
		a.built = true
		a.pushEdits(a.ref, r)
		a.push(call(ToolBuild), pick(r, buildTexts))
		return
	}
	switch p.Ending {
	case EndingSubmit:
		if !a.looping {
			a.looping = true
			a.push(call(ToolSubmit), pick(r, submitTexts))
		}
	case EndingNoSubmit:
		// Keep reading and building: the step budget ends the episode.
		a.push(a.readCall(r), pick(r, readTexts))
		a.push(call(ToolBuild), pick(r, buildTexts))
	}
}

// offendingLine is the line to delete: the reference fix's first removed
// line, else the diagnostic's line as the episode's read_file showed it.
func (a *SimulatedAgent) offendingLine(conv []Message) string {
	for _, e := range a.ref {
		if e.path != a.target {
			continue
		}
		for _, l := range strings.SplitAfter(e.old, "\n") {
			if l != "" && !strings.Contains(e.new, l) {
				return l
			}
		}
	}
	if a.diagLine <= 0 {
		return ""
	}
	prefix := fmt.Sprintf("%6d\t", a.diagLine)
	for i := len(conv) - 1; i >= 0; i-- {
		if conv[i].Role != "tool" {
			continue
		}
		for _, l := range strings.SplitAfter(conv[i].Content, "\n") {
			if strings.HasPrefix(l, prefix) {
				return strings.TrimPrefix(l, prefix)
			}
		}
	}
	return ""
}

func (a *SimulatedAgent) searchCall(r *rand.Rand) ToolCall {
	if dir := path.Dir(a.target); dir != "." && r.IntN(2) == 0 {
		return call(ToolSearch, "pattern", a.pattern, "path", dir)
	}
	return call(ToolSearch, "pattern", a.pattern)
}

func (a *SimulatedAgent) readCall(r *rand.Rand) ToolCall {
	if a.target == "" {
		return call(ToolListFiles)
	}
	if a.diagLine > 0 && r.IntN(2) == 0 {
		return call(ToolReadFile, "path", a.target, "start_line", max(1, a.diagLine-8), "end_line", a.diagLine+8)
	}
	return call(ToolReadFile, "path", a.target)
}

// turnOf renders a turn and its tokens: the action (or the text of a final
// answer) tokenized by the simple tokenizer, cut at maxTokens.
func (a *SimulatedAgent) turnOf(text string, c *ToolCall, maxTokens int, r *rand.Rand, first bool) *Turn {
	t := &Turn{Text: text, FinishReason: "stop"}
	rendered := text
	if c != nil {
		t.Calls = []ToolCall{*c}
		t.FinishReason = "tool_calls"
		rendered = RenderAction(text, *c)
	}
	ids, ends := policy.TokenizeOffsets(rendered)
	if maxTokens > 0 && len(ids) > maxTokens {
		// Cut: the call is lost; the turn is its text so far.
		t.Text, t.Calls, t.FinishReason = rendered[:ends[maxTokens-1]], nil, "length"
		ids = ids[:maxTokens]
	}
	t.TokenIDs = ids
	t.Logprobs = make([]float32, len(ids))
	for i := range t.Logprobs {
		t.Logprobs[i] = float32(-0.02 - 0.4*r.ExpFloat64())
	}
	if first {
		t.PromptTokenIDs = a.prompt
		if t.PromptTokenIDs == nil {
			t.PromptTokenIDs = policy.Tokenize(a.promptText)
		}
	}
	return t
}

// rngFor derives randomness from hash(seed, node id, key).
func (a *SimulatedAgent) rngFor(key string) *rand.Rand {
	h := sha256.New()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(a.cfg.Seed))
	h.Write(b[:])
	h.Write([]byte(a.nodeID))
	h.Write([]byte{0})
	h.Write([]byte(key))
	sum := h.Sum(nil)
	return rand.New(rand.NewPCG(binary.LittleEndian.Uint64(sum[:8]), binary.LittleEndian.Uint64(sum[8:16])))
}

// call builds a tool call whose arguments are the key/value pairs kv, in
// that order, as compact JSON (HTML characters unescaped).
func call(name string, kv ...any) ToolCall {
	enc := func(v any) string {
		var buf bytes.Buffer
		e := json.NewEncoder(&buf)
		e.SetEscapeHTML(false)
		_ = e.Encode(v) // strings and ints only
		return strings.TrimRight(buf.String(), "\n")
	}
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(enc(kv[i]))
		b.WriteByte(':')
		b.WriteString(enc(kv[i+1]))
	}
	b.WriteByte('}')
	return ToolCall{Name: name, Arguments: b.String()}
}

// lastToolOutput is the content of the conversation's last tool message.
func lastToolOutput(conv []Message) string {
	for i := len(conv) - 1; i >= 0; i-- {
		if conv[i].Role == "tool" {
			return conv[i].Content
		}
		if conv[i].Role == "user" {
			break
		}
	}
	return ""
}

// feedbackReading says whether a refinement prompt's feedback names one of
// the task's target diagnostics.
func feedbackReading(task *topics.Task, p *topics.Prompt) string {
	if p == nil || p.ParentID == "" {
		return FeedbackNone
	}
	fb := p.Feedback
	if strings.TrimSpace(fb) == "" {
		fb = p.Text
	}
	if cf := task.CompileFix; cf != nil {
		for _, d := range cf.Targets {
			switch {
			case d.Code != "" && strings.Contains(fb, d.Code),
				d.Message != "" && strings.Contains(fb, d.Message),
				d.File != "" && d.Line > 0 && strings.Contains(fb, fmt.Sprintf("%s:%d", d.File, d.Line)):
				return FeedbackDiagnostic
			}
		}
	}
	return FeedbackOther
}

// referenceEdits turns a reference patch into edit calls: one per hunk,
// old the hunk's context and removed lines, new its context and added
// lines; a created file is an edit with an empty old. Deletions, renames
// and binary changes are left out. A patch that does not parse gives none.
func referenceEdits(patch string) []edit {
	if strings.TrimSpace(patch) == "" {
		return nil
	}
	files, _, err := gitdiff.Parse(strings.NewReader(patch))
	if err != nil {
		return nil
	}
	var out []edit
	for _, f := range files {
		if f.IsDelete || f.IsBinary || f.IsRename || f.IsCopy || f.NewName == "" {
			continue
		}
		for _, frag := range f.TextFragments {
			var old, nw strings.Builder
			for _, l := range frag.Lines {
				if l.Op != gitdiff.OpAdd {
					old.WriteString(l.Line)
				}
				if l.Op != gitdiff.OpDelete {
					nw.WriteString(l.Line)
				}
			}
			o := old.String()
			if f.IsNew {
				o = ""
			}
			out = append(out, edit{path: f.NewName, old: o, new: nw.String()})
		}
	}
	return out
}

// firstDeleted is the first removed line of a patch ("" when none).
func firstDeleted(patch string) string {
	for _, l := range strings.Split(patch, "\n") {
		if strings.HasPrefix(l, "-") && !strings.HasPrefix(l, "---") {
			return l[1:]
		}
	}
	return ""
}

var quoted = regexp.MustCompile("['‘\"“`]([A-Za-z_][A-Za-z0-9_]*)['’\"”`]")

// searchPattern is the identifier a diagnostic quotes, as a whole word.
func searchPattern(msg string) string {
	if m := quoted.FindStringSubmatch(msg); m != nil {
		return `\b` + m[1] + `\b`
	}
	return ""
}

// perturb changes text the way a careless quote does (a tab typed as
// spaces, a dropped character), so that it no longer matches.
func perturb(s string, r *rand.Rand) string {
	if i := strings.IndexByte(s, '\t'); i >= 0 && r.IntN(2) == 0 {
		return s[:i] + "    " + s[i+1:]
	}
	// Drop a character of a word, away from the edges.
	var idx []int
	for i := 1; i+1 < len(s); i++ {
		if isWordByte(s[i]) && isWordByte(s[i-1]) {
			idx = append(idx, i)
		}
	}
	if len(idx) > 0 {
		i := idx[r.IntN(len(idx))]
		return s[:i] + s[i+1:]
	}
	return s + " "
}

func isWordByte(c byte) bool {
	return c == '_' || ('0' <= c && c <= '9') || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

func pick(r *rand.Rand, xs []string) string { return xs[r.IntN(len(xs))] }

var (
	searchTexts = []string{"Let me find where this name is used.", "Searching for the identifier the compiler mentions.", ""}
	readTexts   = []string{"Let me read the file the error points at.", "I'll look at the source around the error.", ""}
	editTexts   = []string{"This line is the problem; fixing it.", "I'll correct the code.", ""}
	buildTexts  = []string{"Let me check that it builds now.", "Running the build.", ""}
	submitTexts = []string{"The fix is done.", "Submitting the change.", ""}
	finalTexts  = []string{"I believe the build error is fixed.", "The change should resolve the error."}
)
