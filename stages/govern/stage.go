package govern

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/murphy-rl/murphy/compilefix"
	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/tasks"
	"github.com/murphy-rl/murphy/topics"
)

// Name is the stage name (metrics label, consumer group murphy-govern).
const Name = "govern"

// Stage is the govern stage on the runtime: executions in, samples and
// refinement prompts out.
type Stage struct {
	gov     *Governor
	tasks   TaskLookup
	cat     topics.Catalog
	metrics *Metrics
	cfg     Config
	// release closes what the stage opened (the artifact judge's sandbox).
	release func()
}

// Close releases the artifact judge's build sandbox and snapshot cache.
func (s *Stage) Close() {
	if s.release != nil {
		s.release()
	}
}

// OpenEquivalence opens the artifact judge's comparer from cfg.Artifact,
// when the chain has the artifact judge and a store is set (nil, nil
// otherwise).
func OpenEquivalence(ctx context.Context, cfg Config) (*compilefix.Equivalence, func(), error) {
	if cfg.Artifact.Store == "" || !slices.Contains(cfg.CompileFixJudges, JudgeArtifact) {
		return nil, func() {}, nil
	}
	eq, closeEq, err := compilefix.OpenEquivalence(ctx, cfg.Artifact)
	if err != nil {
		return nil, nil, fmt.Errorf("govern: artifact judge: %w", err)
	}
	return eq, closeEq, nil
}

// NewStage builds the stage. tasks looks tasks up (the compacted tasks
// topic); model is the chat model of the LLM judge and scorer (nil: built
// from cfg.LLM when either is configured); reg receives the stage's metrics
// (nil: none). With the artifact judge and a store in cfg.Artifact it opens
// its build sandbox (Close releases it) unless an option gives a comparer.
func NewStage(cfg Config, lookup TaskLookup, model ChatModel, cat topics.Catalog, reg prometheus.Registerer, opts ...Option) (*Stage, error) {
	if lookup == nil {
		return nil, errors.New("govern: no task lookup")
	}
	if err := cat.Validate(); err != nil {
		return nil, fmt.Errorf("govern: %w", err)
	}
	if model == nil && cfg.usesLLM() {
		chat, err := NewOpenAIChat(cfg.LLM)
		if err != nil {
			return nil, fmt.Errorf("govern: %w", err)
		}
		model = chat
	}
	// Build the core first and register the metrics last, so that a bad
	// configuration leaves nothing registered on reg; the core reports its
	// LLM calls to the metrics once they exist.
	var m *Metrics
	events := func(component, result string) {
		if m != nil {
			m.llmEvent(component, result)
		}
	}
	eq, release, err := OpenEquivalence(context.Background(), cfg)
	if err != nil {
		return nil, err
	}
	base := []Option{withEvents(events)}
	if eq != nil {
		base = append(base, WithEquivalence(eq))
	}
	gov, err := NewGovernor(cfg, model, append(base, opts...)...)
	if err != nil {
		release()
		return nil, err
	}
	if m, err = NewMetrics(reg, Name); err != nil {
		release()
		return nil, err
	}
	// A missing task is waited for up to TaskWait, then the execution is
	// dead-lettered: the policy of every stage (tasks.Await).
	return &Stage{gov: gov, tasks: tasks.Awaiting(lookup, cfg.TaskWait), cat: cat, metrics: m, cfg: cfg, release: release}, nil
}

// Spec describes the stage for pipeline.Runtime.AddStage.
func (s *Stage) Spec() pipeline.Stage {
	return pipeline.Stage{
		Name:        Name,
		Inputs:      []string{s.cat.Topic(topics.Executions)},
		Handler:     s.Handle,
		Concurrency: s.cfg.Concurrency,
	}
}

// Governor returns the stage's core.
func (s *Stage) Governor() *Governor { return s.gov }

// Handle governs one execution record: one sample on the samples topic and,
// when the node is expanded, one refinement prompt on the refinements topic,
// both keyed by tree id. A record that is not a valid execution, or whose
// task does not exist, is poison (DLQ); a transient task lookup failure is
// returned for retry.
func (s *Stage) Handle(ctx context.Context, rec pipeline.Record) ([]pipeline.Out, error) {
	var ex topics.Execution
	if err := pipeline.Decode(rec.Value, &ex); err != nil {
		return nil, err
	}
	res, err := s.gov.Govern(ctx, &ex, s.tasks)
	if err != nil {
		var te *TaskError
		switch {
		case ctx.Err() != nil:
			return nil, err
		case IsTaskNotFound(err):
			return nil, topics.Poison("task_not_found", err)
		case errors.As(err, &te) && topics.IsPoison(te.Err):
			return nil, topics.Poison("bad_task", err)
		case errors.As(err, &te):
			return nil, fmt.Errorf("govern: %w", err) // transient: retried by the runtime
		}
		return nil, topics.Poison("ungovernable", err)
	}
	outs, err := s.encode(res, rec.Value)
	if err != nil {
		return nil, topics.Poison("encode", err)
	}
	s.metrics.observe(res)
	return outs, nil
}

// encode writes the sample (reusing the bytes of execution, the record it
// was governed from) and the refinement prompt.
func (s *Stage) encode(res Result, execution []byte) ([]pipeline.Out, error) {
	b, err := topics.EncodeSample(res.Sample, execution)
	if err != nil {
		return nil, fmt.Errorf("sample %s: %w", res.Sample.NodeID, err)
	}
	outs := []pipeline.Out{{Topic: s.cat.Topic(topics.Samples), Key: res.Sample.TreeID, Value: b}}
	if res.Refinement != nil {
		b, err := topics.Encode(res.Refinement)
		if err != nil {
			return nil, fmt.Errorf("refinement of %s: %w", res.Sample.NodeID, err)
		}
		outs = append(outs, pipeline.Out{Topic: s.cat.Topic(topics.Refinements), Key: res.Refinement.TreeID, Value: b})
	}
	return outs, nil
}
