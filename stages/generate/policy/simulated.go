package policy

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/murphy-rl/murphy/openai"

	"github.com/murphy-rl/murphy/topics"
)

// SimulatedName is the policy name recorded on simulated candidates. It says
// what it is: these responses come from no model.
const SimulatedName = "simulated (not a model)"

// SimulatedConfig configures the simulated policy.
type SimulatedConfig struct {
	// Seed fixes every sample: a sample depends only on (Seed, node id,
	// prompt, task), never on process layout or order.
	Seed int64 `yaml:"seed"`
	// PolicyVersion is recorded on every candidate.
	PolicyVersion int64 `yaml:"policy_version"`
	// PReference is the chance that a first-turn sample is the reference
	// solution (for a compile-fix task, the reference patch).
	PReference float64 `yaml:"p_reference"`
	// PBroken is the chance that a sample that is not the reference is
	// broken code (a syntax error or a wrong name) rather than a plausible
	// mutant (off-by-one, wrong operator, missing edge case, wrong return).
	// For a compile-fix task: a patch that does not apply (hunks that match
	// nothing, a malformed header, a truncated hunk, a missing file) rather
	// than a wrong fix that applies (the target line deleted or commented
	// out, the function stubbed, the repair at a nearby line).
	PBroken float64 `yaml:"p_broken"`
	// PRepairFailingCase is the chance that a refinement repairs the
	// program when the feedback names a failing case (input, expected,
	// actual).
	PRepairFailingCase float64 `yaml:"p_repair_failing_case"`
	// PRepairError is the chance of a repair when the feedback names an
	// error or traceback but no case.
	PRepairError float64 `yaml:"p_repair_error"`
	// PRepairUninformative is the chance of a repair when the feedback
	// says nothing useful (a timeout, a bare status).
	PRepairUninformative float64 `yaml:"p_repair_uninformative"`
	// PRepairDiagnostic is the chance that a compile-fix refinement repairs
	// the build when the feedback names a target diagnostic (its file and
	// line, or its message). Diagnostics that name no target count as an
	// error (PRepairError); a patch that did not apply, without a
	// diagnostic, as uninformative.
	PRepairDiagnostic float64 `yaml:"p_repair_diagnostic"`
	// MaxTokens truncates responses longer than this many tokens, with
	// finish_reason "length" (0 = no limit).
	MaxTokens int `yaml:"max_tokens"`
}

// DefaultSimulatedConfig gives a turn-1 pass rate near a small code model's
// and a clear informative-feedback effect.
func DefaultSimulatedConfig() SimulatedConfig {
	return SimulatedConfig{
		Seed:                 1,
		PolicyVersion:        1,
		PReference:           0.3,
		PBroken:              0.2,
		PRepairFailingCase:   0.6,
		PRepairError:         0.4,
		PRepairUninformative: 0.1,
		PRepairDiagnostic:    0.6,
	}
}

// Validate checks that probabilities are in [0, 1].
func (c SimulatedConfig) Validate() error {
	var errs []error
	for _, p := range []struct {
		name string
		v    float64
	}{
		{"p_reference", c.PReference}, {"p_broken", c.PBroken},
		{"p_repair_failing_case", c.PRepairFailingCase}, {"p_repair_error", c.PRepairError},
		{"p_repair_uninformative", c.PRepairUninformative}, {"p_repair_diagnostic", c.PRepairDiagnostic},
	} {
		if !(p.v >= 0 && p.v <= 1) {
			errs = append(errs, fmt.Errorf("%s must be in [0,1], got %v", p.name, p.v))
		}
	}
	if c.MaxTokens < 0 {
		errs = append(errs, fmt.Errorf("max_tokens must be >= 0, got %d", c.MaxTokens))
	}
	if len(errs) > 0 {
		return fmt.Errorf("simulated policy config: %w", errors.Join(errs...))
	}
	return nil
}

// Simulated is the simulated policy. It is NOT a model: it samples a task's
// reference solution, plausible mutants of it, or broken code, and on a
// refinement prompt repairs the program with a probability that depends on
// how informative the feedback is (ClassifyFeedback). For a compile-fix task
// it samples diffs instead: the reference patch, wrong fixes or broken
// patches (simulated_compilefix*.go). Token ids come from the simple
// tokenizer (Tokenize); logprobs are synthetic.
type Simulated struct {
	cfg SimulatedConfig
	mut *mutator
}

// NewSimulated validates cfg and returns the simulated policy.
func NewSimulated(cfg SimulatedConfig) (*Simulated, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Simulated{cfg: cfg, mut: newMutator()}, nil
}

// Name implements Policy.
func (s *Simulated) Name() string { return SimulatedName }

// Version implements Policy.
func (s *Simulated) Version() int64 { return s.cfg.PolicyVersion }

// NeedsTask implements Policy: the reference solution comes from the task.
func (s *Simulated) NeedsTask() bool { return true }

// Generate implements Policy.
func (s *Simulated) Generate(ctx context.Context, req Request) ([]Sample, error) {
	if req.Task == nil {
		return nil, ErrNoTask
	}
	if req.Prompt == nil {
		return nil, errors.New("policy: no prompt")
	}
	promptIDs := req.Prompt.TokenIDs
	if len(promptIDs) == 0 {
		promptIDs = Tokenize(req.Prompt.Text)
	}
	fb := feedbackOf(req.Prompt) // once for the group
	out := make([]Sample, 0, len(req.NodeIDs))
	for _, id := range req.NodeIDs {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		out = append(out, s.sample(req.Prompt, req.Task, id, fb, promptIDs))
	}
	return out, nil
}

// feedbackOf classifies the feedback a prompt carries (its text when the
// feedback field is empty); root prompts carry none.
func feedbackOf(p *topics.Prompt) FeedbackKind {
	if p.ParentID == "" {
		return FeedbackNone
	}
	fb := p.Feedback
	if strings.TrimSpace(fb) == "" {
		fb = p.Text
	}
	return ClassifyFeedback(fb)
}

// Outcome says what the simulated policy chose for one sample.
type Outcome struct {
	// Reference is true when the sample is the reference solution.
	Reference bool
	// Mutation is the mutation applied ("" for the reference).
	Mutation Mutation
	// Feedback is how the refinement prompt's feedback was read.
	Feedback FeedbackKind
}

// Choose returns what the policy samples for node id of the prompt and the
// program text, without tokenizing. Generate uses it; tests and reports use
// it to explain outcomes.
func (s *Simulated) Choose(p *topics.Prompt, task *topics.Task, nodeID string) (Outcome, string) {
	return s.choose(p, task, nodeID, feedbackOf(p))
}

// choose is Choose for a prompt whose feedback reads as fb (feedbackOf).
func (s *Simulated) choose(p *topics.Prompt, task *topics.Task, nodeID string, fb FeedbackKind) (Outcome, string) {
	if task.Kind == topics.KindCompileFix {
		return s.chooseCompileFix(p, task, nodeID)
	}
	r := s.rng(nodeID)
	ref := reference(task)
	o := Outcome{Feedback: fb}
	pRight := s.cfg.PReference
	if p.ParentID != "" {
		switch o.Feedback {
		case FeedbackFailingCase:
			pRight = s.cfg.PRepairFailingCase
		case FeedbackError, FeedbackDiagnostic:
			pRight = s.cfg.PRepairError
		default:
			pRight = s.cfg.PRepairUninformative
		}
	}
	if ref == "" {
		// Nothing to sample from: a stub that fails every test.
		return Outcome{Mutation: WrongReturn, Feedback: o.Feedback}, stub(task)
	}
	if r.Float64() < pRight {
		o.Reference = true
		return o, ref
	}
	family := PlausibleMutations()
	if r.Float64() < s.cfg.PBroken {
		family = BrokenMutations()
	}
	for _, k := range r.Perm(len(family)) {
		if code, ok := s.mut.mutate(ref, family[k], task.EntryPoint, r); ok {
			o.Mutation = family[k]
			return o, code
		}
	}
	// No mutation applies to this reference: misspell the entry point or
	// fall back to a stub.
	if code, ok := s.mut.mutate(ref, WrongName, task.EntryPoint, r); ok {
		o.Mutation = WrongName
		return o, code
	}
	o.Mutation = WrongReturn
	return o, stub(task)
}

func (s *Simulated) sample(p *topics.Prompt, task *topics.Task, nodeID string, fb FeedbackKind, promptIDs []int32) Sample {
	r := s.rng(nodeID + "/text")
	o, code := s.choose(p, task, nodeID, fb)
	var text string
	if task.Kind == topics.KindCompileFix {
		text = renderPatch(code, o, r)
	} else {
		text = render(code, r)
	}
	ids, ends := TokenizeOffsets(text)
	finish := "stop"
	if s.cfg.MaxTokens > 0 && len(ids) > s.cfg.MaxTokens {
		text = text[:ends[s.cfg.MaxTokens-1]]
		ids = ids[:s.cfg.MaxTokens]
		finish = "length"
	}
	lps := make([]float32, len(ids))
	for i := range lps {
		// Synthetic: a confident model with occasional uncertain tokens.
		lps[i] = float32(-0.02 - 0.4*r.ExpFloat64())
	}
	return Sample{
		Text:           text,
		Code:           ExtractCode(text),
		PromptTokenIDs: promptIDs,
		TokenIDs:       ids,
		Logprobs:       lps,
		FinishReason:   finish,
		ServerTag:      openai.NoTag,
	}
}

// rng derives a sample's randomness from hash(seed, key).
func (s *Simulated) rng(key string) *rand.Rand {
	h := sha256.New()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(s.cfg.Seed))
	h.Write(b[:])
	h.Write([]byte(key))
	sum := h.Sum(nil)
	return rand.New(rand.NewPCG(binary.LittleEndian.Uint64(sum[:8]), binary.LittleEndian.Uint64(sum[8:16])))
}

var leads = []string{
	"Here is the solution.",
	"The function below implements the specification.",
	"Here is a corrected implementation.",
	"This should work:",
}

// render wraps code the way a chat model answers: a sentence and a fenced
// block, sometimes the bare program.
func render(code string, r *rand.Rand) string {
	if r.IntN(10) == 0 {
		return code
	}
	return leads[r.IntN(len(leads))] + "\n\n```python\n" + strings.TrimRight(code, "\n") + "\n```\n"
}

// reference is the task's whole reference program.
func reference(t *topics.Task) string {
	return t.Reference
}

func stub(t *topics.Task) string {
	name := t.EntryPoint
	if name == "" {
		return "raise NotImplementedError\n"
	}
	return "def " + name + "(*args, **kwargs):\n    return None\n"
}
