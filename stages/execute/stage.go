// Package execute is the execute stage: it consumes candidates, runs each
// against its task's tests in the sandbox pool and produces one execution
// record per candidate on the executions topic, keyed by tree id.
//
// The core is the Evaluator (programs + tasks -> verdict and feedback), a
// plain function over sandbox results that `murphy exec` also uses without
// Kafka. Feedback templates are documented in FEEDBACK.md.
package execute

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/murphy-rl/murphy/compilefix"
	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/sandbox"
	"github.com/murphy-rl/murphy/tasks"
	"github.com/murphy-rl/murphy/topics"
)

// Stage is the execute stage.
type Stage struct {
	cfg     Config
	eval    *Evaluator
	runner  sandbox.Runner
	lookup  tasks.Lookup
	cat     topics.Catalog
	metrics *Metrics
	now     func() time.Time
}

// NewStage builds the stage over a runner (a running *sandbox.Pool in
// production; a benchmark may pass another sandbox.Runner) and a task
// lookup. reg may be nil (no metrics). Without a pool, cfg.Concurrency must
// say how many candidates are evaluated at once.
func NewStage(cfg Config, runner sandbox.Runner, lookup tasks.Lookup, cat topics.Catalog, reg prometheus.Registerer, opts ...Option) (*Stage, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if runner == nil || lookup == nil {
		return nil, errors.New("execute: a runner and a task lookup are required")
	}
	pool, _ := runner.(*sandbox.Pool)
	if pool == nil && cfg.Concurrency == 0 {
		return nil, errors.New("execute: concurrency is required when the runner is not a pool")
	}
	if err := cat.Validate(); err != nil {
		return nil, err
	}
	m, err := NewMetrics(reg, cfg.Name, pool)
	if err != nil {
		return nil, err
	}
	s := &Stage{
		cfg: cfg, runner: runner, lookup: lookup, cat: cat, metrics: m, now: time.Now,
		eval: &Evaluator{Runner: runner, FeedbackBytes: cfg.FeedbackBytes, StdioMaxTimeouts: cfg.StdioMaxTimeouts},
	}
	for _, o := range opts {
		o(s)
	}
	return s, nil
}

// Option customises a Stage.
type Option func(*Stage)

// WithCompileFix evaluates compile-fix tasks with cf (compilefix.Open); the
// caller owns it.
func WithCompileFix(cf *compilefix.Evaluator) Option {
	return func(s *Stage) { s.eval.CompileFix = cf }
}

// Spec describes the stage for the pipeline runtime.
func (s *Stage) Spec() pipeline.Stage {
	n := s.cfg.Concurrency
	if n == 0 {
		n = s.runner.(*sandbox.Pool).Size() // New checked: no concurrency means a pool
	}
	return pipeline.Stage{
		Name:        s.cfg.Name,
		Inputs:      []string{s.cat.Topic(topics.Candidates)},
		Handler:     s.Handle,
		Concurrency: n,
	}
}

// Evaluator returns the stage's evaluator.
func (s *Stage) Evaluator() *Evaluator { return s.eval }

// Handle turns one candidate record into one execution record. A record
// that is not a valid candidate is poison (DLQ); an unknown task or a
// closed pool is an error the runtime retries.
func (s *Stage) Handle(ctx context.Context, rec pipeline.Record) ([]pipeline.Out, error) {
	var c topics.Candidate
	if err := pipeline.Decode(rec.Value, &c); err != nil {
		return nil, err
	}
	ex := topics.Execution{Candidate: c}
	if c.InfraCause != "" {
		ex.Status = topics.StatusNotRun
		ex.Feedback = "Status: not_run\nThe candidate was not run: " + c.InfraCause + "\n"
	} else {
		task, err := tasks.Await(ctx, s.lookup, c.TaskID, s.cfg.TaskWait)
		if err != nil {
			return nil, fmt.Errorf("execute: candidate %s: %w", c.NodeID, err)
		}
		o, err := s.eval.Evaluate(ctx, task, c.Code)
		if err != nil {
			return nil, fmt.Errorf("execute: candidate %s: %w", c.NodeID, err)
		}
		ex.Status, ex.TestsPassed, ex.TestsTotal, ex.PassRate = o.Status, o.TestsPassed, o.TestsTotal, o.PassRate
		ex.Feedback, ex.Results, ex.SandboxError, ex.SandboxErrorKind = o.Feedback, o.Results, o.SandboxError, o.SandboxErrorKind
		ex.Diagnostics, ex.TargetsFixed, ex.TargetsTotal = o.Diagnostics, o.TargetsFixed, o.TargetsTotal
		ex.DurationMS = o.Duration.Milliseconds()
		s.metrics.observe(o.Duration)
	}
	ex.ExecutedAt = s.now().UTC()
	s.metrics.count(ex.Status)
	b, err := topics.EncodeExecution(&ex, rec.Value)
	if err != nil {
		// Our own record failed validation: the input is the cause.
		return nil, topics.Poison("execution_invalid", err)
	}
	return []pipeline.Out{{Topic: s.cat.Topic(topics.Executions), Key: c.TreeID, Value: b}}, nil
}
