package govern

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/murphy-rl/murphy/compilefix/patch"
	"github.com/murphy-rl/murphy/stages/govern/judge"
	"github.com/murphy-rl/murphy/tasks"
	"github.com/murphy-rl/murphy/topics"
)

// TaskLookup finds a task by id: the shared tasks.Lookup (over the
// compacted tasks topic in production, tasks.Memory in tests and demos). It
// returns an error wrapping ErrTaskNotFound for an unknown id.
type TaskLookup = tasks.Lookup

// ErrTaskNotFound is the lookups' error for an unknown task id.
var ErrTaskNotFound = tasks.ErrNotFound

// IsTaskNotFound reports whether err says the task does not exist: it wraps
// ErrTaskNotFound or an error with a NotFound() bool method returning true.
func IsTaskNotFound(err error) bool {
	if errors.Is(err, ErrTaskNotFound) {
		return true
	}
	var nf interface{ NotFound() bool }
	return errors.As(err, &nf) && nf.NotFound()
}

// TaskError is a failed task lookup.
type TaskError struct {
	TaskID string
	Err    error
}

func (e *TaskError) Error() string { return fmt.Sprintf("task %q: %v", e.TaskID, e.Err) }
func (e *TaskError) Unwrap() error { return e.Err }

// Governor is the stage's core: a function from one execution record (and
// its task) to a sample and an optional refinement prompt. It is safe for
// concurrent use.
type Governor struct {
	cfg      Config
	classify *classifier
	judges   *judgeChain
	scorer   StepScorer
	// episodes scores agent episodes (Config.EpisodeScorer).
	episodes    StepScorer
	equivalence judge.Comparer
	refine      *refiner
	now         func() time.Time
	events      llmEvents
}

// Result is what governing one execution yields.
type Result struct {
	Sample *topics.Sample
	// Refinement is the prompt for the node's children, nil for a leaf.
	Refinement *topics.Prompt
	// Judge names the judge that decided correctness ("" when not judged).
	Judge string
	// Verdict is the judge chain's decision and Compiles whether the
	// candidate compiled (normal samples only).
	Verdict  Verdict
	Compiles bool
}

// Tier names the sample's reward tier: correct, unsure, wrong or
// no_compile for a trained sample, else its route (masked,
// last_step_penalty).
func (r Result) Tier() string {
	switch {
	case r.Sample == nil:
		return ""
	case r.Sample.Route != topics.RouteTrain:
		return r.Sample.Route
	case !r.Compiles:
		return "no_compile"
	}
	switch r.Verdict {
	case Correct:
		return "correct"
	case Unsure:
		return "unsure"
	}
	return "wrong"
}

// Option customises a Governor.
type Option func(*Governor)

// WithClock sets the clock used for GovernedAt and CreatedAt.
func WithClock(now func() time.Time) Option { return func(g *Governor) { g.now = now } }

// WithJudges replaces the judges built from Config.Judges (in order).
func WithJudges(judges ...Judge) Option {
	return func(g *Governor) { g.judges.judges = judges }
}

// WithScorer replaces the scorers built from Config.Scorer and
// Config.EpisodeScorer.
func WithScorer(s StepScorer) Option { return func(g *Governor) { g.scorer, g.episodes = s, s } }

// WithEquivalence gives the artifact judge its comparer (a
// *compilefix.Equivalence); without one it abstains.
func WithEquivalence(c judge.Comparer) Option { return func(g *Governor) { g.equivalence = c } }

// withEvents reports LLM judge and scorer events (metrics).
func withEvents(ev llmEvents) Option { return func(g *Governor) { g.events = ev } }

// NewGovernor builds the core from cfg. model is the chat model of the LLM
// judge and scorer; it may be nil when neither is configured.
func NewGovernor(cfg Config, model ChatModel, opts ...Option) (*Governor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	det, err := NewRepetitionDetector(cfg.Repetition)
	if err != nil {
		return nil, err
	}
	ref, err := newRefiner(cfg.Expansion)
	if err != nil {
		return nil, err
	}
	g := &Governor{
		cfg:      cfg,
		classify: &classifier{cfg: cfg, detector: det},
		judges:   &judgeChain{gate: cfg.TestsGate},
		refine:   ref,
		now:      func() time.Time { return time.Now().UTC() },
		events:   func(string, string) {},
	}
	for _, o := range opts {
		o(g)
	}
	var llmJudge *LLMJudge
	if g.judges.judges == nil {
		for _, name := range cfg.Judges {
			switch name {
			case JudgeTests:
				g.judges.judges = append(g.judges.judges, judge.Tests{})
			case JudgeReferencePatch:
				g.judges.judges = append(g.judges.judges, judge.ReferencePatch{MismatchAbstains: cfg.ReferencePatch.MismatchAbstains})
			case JudgeLLM:
				if llmJudge, err = NewLLMJudge(cfg.LLMJudge, model); err != nil {
					return nil, fmt.Errorf("govern: %w", err)
				}
				llmJudge.events = g.events
				g.judges.judges = append(g.judges.judges, llmJudge)
			}
		}
	}
	for _, name := range cfg.CompileFixJudges {
		switch name {
		case JudgeReferencePatch:
			g.judges.compileFix = append(g.judges.compileFix, judge.ReferencePatch{MismatchAbstains: true})
		case JudgeArtifact:
			g.judges.compileFix = append(g.judges.compileFix, judge.Artifact{Comparer: g.equivalence})
		case JudgeLLM:
			if llmJudge == nil {
				if llmJudge, err = NewLLMJudge(cfg.LLMJudge, model); err != nil {
					return nil, fmt.Errorf("govern: %w", err)
				}
				llmJudge.events = g.events
			}
			g.judges.compileFix = append(g.judges.compileFix, llmJudge)
		}
	}
	if g.scorer == nil {
		if g.scorer, err = g.newScorer(cfg.Scorer, model); err != nil {
			return nil, err
		}
	}
	if g.episodes == nil {
		if g.episodes, err = g.newScorer(cfg.EpisodeScorer, model); err != nil {
			return nil, err
		}
	}
	return g, nil
}

func (g *Governor) newScorer(name string, model ChatModel) (StepScorer, error) {
	switch name {
	case ScorerHeuristic:
		return NewHeuristicScorer(g.cfg.Heuristic), nil
	case ScorerLLM:
		s, err := NewLLMScorer(g.cfg.LLMScorer, model)
		if err != nil {
			return nil, fmt.Errorf("govern: %w", err)
		}
		s.events = g.events
		return s, nil
	}
	return NoneScorer{}, nil
}

// Govern routes, rewards and weights one execution and decides its
// expansion. tasks is consulted only for normal executions (the reward
// policy, the judges and the refinement prompt need the task); masked and
// penalised ones are governed from the record alone.
//
// Errors: a failed lookup is a *TaskError (IsTaskNotFound tells a missing
// task from a transient failure); a cancelled ctx returns ctx's error; any
// other error means the record cannot be governed (poison). Judge and scorer failures are not
// errors: they route the sample masked (infra.judge, infra.scorer).
func (g *Governor) Govern(ctx context.Context, ex *topics.Execution, tasks TaskLookup) (Result, error) {
	cause := g.classify.Classify(ex)
	if classOf(cause) != ClassNormal {
		return Result{Sample: g.sample(ex, cause, g.cfg.MaskedReward, nil)}, nil
	}
	task, err := tasks.Task(ctx, ex.TaskID)
	if err == nil && task == nil {
		err = ErrTaskNotFound
	}
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		return Result{}, &TaskError{TaskID: ex.TaskID, Err: err}
	}
	policy := policyOf(ex.TreeSpec, task, g.cfg.RewardPolicy)
	d, err := g.judges.decide(ctx, task, ex)
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		return Result{Sample: g.sample(ex, CauseJudge, g.cfg.MaskedReward, nil)}, nil
	}
	reward, err := Reward(policy, g.cfg.Tiers, ex, d.compiles, d.verdict)
	if err != nil {
		return Result{}, err // Validate rejects unknown policies before this
	}
	var scores []float32
	steps, aligned := alignSteps(&ex.Candidate)
	scorer := g.scorer
	if len(ex.ToolSteps) > 0 {
		scorer = g.episodes
	}
	if g.scores(ex, task, steps) {
		scores, err = scorer.Score(ctx, task, ex, steps, aligned)
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return Result{}, ctx.Err()
	case errors.Is(err, ErrUnaligned):
		scores = nil
	case err != nil && g.cfg.ScorerFailure == ScorerFailureMask:
		return Result{Sample: g.sample(ex, CauseScorer, g.cfg.MaskedReward, nil), Judge: d.judge}, nil
	case err != nil:
		scores = nil
	case scores != nil && len(scores) != len(steps):
		return Result{}, fmt.Errorf("scorer %s returned %d scores for %d steps", scorer.Name(), len(scores), len(steps))
	}
	s := g.sample(ex, cause, reward, scores)
	if task.Kind == topics.KindCompileFix && task.ReferencePatch != "" && strings.TrimSpace(ex.Code) != "" {
		r := patch.Similarity(ex.Code, task.ReferencePatch)
		s.PatchSimilarity = &r
	}
	res := Result{Sample: s, Judge: d.judge, Verdict: d.verdict, Compiles: d.compiles}
	if g.cfg.Expansion.Enabled && !d.solved() && !slices.Contains(g.cfg.Expansion.SkipCauses, cause) {
		if size := childGroupSize(ex.TreeSpec, ex.Turn); size > 0 {
			p, err := g.refine.Prompt(ex, task, cause, size, g.now())
			if err != nil {
				return Result{}, err
			}
			res.Refinement = p
			s.ChildrenRequested = size
		}
	}
	return res, nil
}

// scores reports whether the step scorer is asked about a normal execution
// with these steps. Process scores are for trajectories that compiled or
// parsed: for a compile-fix repair, one whose patch applied and built
// (passed, wrong_answer); otherwise anything but a compile error. A
// response without step boundaries (one step) keeps weight 1 unless
// Config.ScorerWholeResponses asks for it to be rescaled too.
func (g *Governor) scores(ex *topics.Execution, task *topics.Task, steps []Step) bool {
	if task != nil && task.Kind == topics.KindCompileFix {
		if ex.Status != topics.StatusPassed && ex.Status != topics.StatusWrongAnswer {
			return false
		}
	} else if ex.Status == topics.StatusCompileError {
		return false
	}
	return len(steps) > 1 || g.cfg.ScorerWholeResponses
}

// sample builds the sample of ex for cause: route, group-stat membership
// and loss weights follow from the cause's class.
func (g *Governor) sample(ex *topics.Execution, cause string, reward float64, scores []float32) *topics.Sample {
	class := classOf(cause)
	s := &topics.Sample{
		Execution:    *ex,
		Route:        RouteOf(class),
		FailureCause: cause,
		Reward:       reward,
		InGroupStats: g.cfg.inGroupStats(cause),
		GovernedAt:   g.now(),
	}
	if class == ClassDegenerate {
		s.Reward = g.cfg.PenaltyReward
	}
	if class == ClassNormal && scores != nil {
		s.StepScores = scores
	}
	s.LossWeights = LossWeights(s.Route, StepSpans(&ex.Candidate), scores, len(ex.ResponseTokenIDs), float32(g.cfg.PenaltyWeight))
	MaskToolOutputs(s.LossWeights, ex.ToolSteps)
	return s
}

// MaskToolOutputs zeroes the loss weight of every tool-output token of an
// agent episode ([ActionEnd, End) of each step): those tokens are the
// environment's, in the response only as context for the next step.
func MaskToolOutputs(w []float32, steps []topics.ToolStep) {
	for _, st := range steps {
		for i := max(st.ActionEnd, 0); i < st.End && i < len(w); i++ {
			w[i] = 0
		}
	}
}

// LossWeights computes per-token loss weights (len n):
//
//   - masked: every token 0;
//   - last_step_penalty: every token 0 except those of the last step, which
//     get penalty (for a single-step response that is the whole response);
//   - train: the tokens of step i get scores[i], or 1 when scores is nil.
func LossWeights(route string, spans []Span, scores []float32, n int, penalty float32) []float32 {
	w := make([]float32, n)
	switch route {
	case topics.RouteMasked:
	case topics.RouteLastStepPenalty:
		if len(spans) > 0 {
			last := spans[len(spans)-1]
			for i := last.Start; i < last.End && i < n; i++ {
				w[i] = penalty
			}
		}
	default:
		for i := range w {
			w[i] = 1
		}
		if scores != nil {
			for k, sp := range spans {
				for i := sp.Start; i < sp.End && i < n; i++ {
					w[i] = scores[k]
				}
			}
		}
	}
	return w
}
