package govern

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/topics"
)

// poisonReason returns the reason of a poison error ("" when err is not
// poison: the runtime retries it).
func poisonReason(err error) string {
	if !topics.IsPoison(err) {
		return ""
	}
	return pipeline.Reason(err)
}

func newTestStage(t *testing.T, cfg Config, tasks TaskLookup) (*Stage, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	s, err := NewStage(cfg, tasks, nil, topics.Catalog{Prefix: "test.", Partitions: 2}, reg, WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	return s, reg
}

func record(t *testing.T, r topics.Record) pipeline.Record {
	t.Helper()
	b, err := topics.Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	return pipeline.Record{Topic: "test.executions", Value: b}
}

func metricValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, lp := range m.GetLabel() {
				got[lp.GetName()] = lp.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue next
				}
			}
			return value(m)
		}
	}
	return 0
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return 0
}

func TestStageHandle(t *testing.T) {
	s, reg := newTestStage(t, DefaultConfig(), tasksWith(testTask()))
	spec := s.Spec()
	if spec.Name != "govern" || len(spec.Inputs) != 1 || spec.Inputs[0] != "test.executions" || spec.Handler == nil || spec.Concurrency != DefaultConfig().Concurrency {
		t.Fatalf("spec %+v", spec)
	}

	// A failed node: one sample and one refinement prompt, keyed by tree.
	ex := execution(failing(1))
	outs, err := spec.Handler(context.Background(), record(t, ex))
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 2 || outs[0].Topic != "test.samples" || outs[1].Topic != "test.refinements" ||
		outs[0].Key != ex.TreeID || outs[1].Key != ex.TreeID {
		t.Fatalf("outs %+v", outs)
	}
	var sample topics.Sample
	var prompt topics.Prompt
	if err := topics.Decode(outs[0].Value, &sample); err != nil {
		t.Fatal(err)
	}
	if err := topics.Decode(outs[1].Value, &prompt); err != nil {
		t.Fatal(err)
	}
	if sample.NodeID != ex.NodeID || sample.ChildrenRequested != 2 || prompt.ParentID != ex.NodeID || prompt.Turn != 2 || prompt.GroupSize != 2 {
		t.Fatalf("sample %s children %d; prompt parent %s turn %d size %d", sample.NodeID, sample.ChildrenRequested, prompt.ParentID, prompt.Turn, prompt.GroupSize)
	}

	// A solved node: the sample alone.
	outs, err = spec.Handler(context.Background(), record(t, execution()))
	if err != nil || len(outs) != 1 {
		t.Fatalf("solved node: %v, %d outs", err, len(outs))
	}
	// An infrastructure failure: a masked sample.
	if _, err := spec.Handler(context.Background(), record(t, execution(status(topics.StatusSandboxError)))); err != nil {
		t.Fatal(err)
	}

	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"murphy_govern_samples_total", map[string]string{"route": "train", "cause": "wrong_answer", "stage": "govern"}, 1},
		{"murphy_govern_samples_total", map[string]string{"route": "train", "cause": "passed"}, 1},
		{"murphy_govern_samples_total", map[string]string{"route": "masked", "cause": "infra.sandbox"}, 1},
		{"murphy_govern_reward", map[string]string{"turn": "1"}, 2},
		{"murphy_govern_expansions_total", nil, 1},
		{"murphy_govern_children_requested_total", nil, 2},
	}
	for _, c := range checks {
		if got := metricValue(t, reg, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %g, want %g", c.name, c.labels, got, c.want)
		}
	}
}

func TestStageBadInput(t *testing.T) {
	good := execution(failing(1))
	enc := func(mut func(*topics.Execution)) []byte {
		ex := *good
		mut(&ex)
		b, err := jsonMarshal(&ex)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	lookupDown := &memTasks{err: errors.New("tasks table: broker unavailable")}
	brokenTask := &memTasks{err: &topics.Error{Kind: topics.ErrMalformed, Record: "task"}}
	cases := []struct {
		name   string
		value  []byte
		tasks  TaskLookup
		poison string // "" = retriable error
	}{
		{"garbage", []byte("\x00\xffnot json"), tasksWith(testTask()), "malformed"},
		{"empty", nil, tasksWith(testTask()), "malformed"},
		{"missing status", enc(func(e *topics.Execution) { e.Status = "" }), tasksWith(testTask()), "missing_field"},
		{"unknown version", enc(func(e *topics.Execution) { e.SchemaVersion = 7 }), tasksWith(testTask()), "unknown_schema_version"},
		{"forged node id", enc(func(e *topics.Execution) { e.NodeID = "n0" }), tasksWith(testTask()), "invalid_field"},
		{"unknown status", enc(func(e *topics.Execution) { e.Status = "exploded" }), tasksWith(testTask()), "invalid_field"},
		{"unknown task", enc(func(*topics.Execution) {}), tasksWith(), "task_not_found"},
		{"broken task record", enc(func(*topics.Execution) {}), brokenTask, "bad_task"},
		{"task lookup down", enc(func(*topics.Execution) {}), lookupDown, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.TaskWait = 50 * time.Millisecond // a missing task is waited for, then dead-lettered
			s, _ := newTestStage(t, cfg, tc.tasks)
			outs, err := s.Handle(context.Background(), pipeline.Record{Topic: "test.executions", Value: tc.value})
			if err == nil || outs != nil {
				t.Fatalf("accepted: %v", outs)
			}
			if got := poisonReason(err); got != tc.poison {
				t.Fatalf("poison reason %q, want %q (%v)", got, tc.poison, err)
			}
		})
	}
	// Shutdown mid-record: the context's error, not poison.
	s, _ := newTestStage(t, DefaultConfig(), tasksWith(testTask()))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Handle(ctx, record(t, good))
	if poisonReason(err) != "" {
		t.Fatalf("cancelled record poisoned: %v", err)
	}
}

func TestNewStageErrors(t *testing.T) {
	reg := prometheus.NewRegistry()
	cat := topics.DefaultCatalog()
	bad := DefaultConfig()
	bad.RewardPolicy = "nope"
	if _, err := NewStage(bad, tasksWith(), nil, cat, reg); err == nil {
		t.Fatal("invalid config accepted")
	}
	if _, err := NewStage(DefaultConfig(), nil, nil, cat, reg); err == nil {
		t.Fatal("nil task lookup accepted")
	}
	// The failures above registered nothing: a valid stage registers fine,
	// and a second one on the same registry is refused.
	if _, err := NewStage(DefaultConfig(), tasksWith(), nil, cat, reg); err != nil {
		t.Fatal(err)
	}
	if _, err := NewStage(DefaultConfig(), tasksWith(), nil, cat, reg); err == nil {
		t.Fatal("duplicate metrics registration accepted")
	}
	llm := DefaultConfig()
	llm.Judges = []string{JudgeLLM}
	if _, err := NewStage(llm, tasksWith(), nil, cat, nil); err != nil {
		t.Fatalf("stage with an LLM judge from config: %v", err)
	}
}
