package execute

import (
	"context"
	"errors"
	"testing"
	"time"

	json "github.com/goccy/go-json"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/tasks"
	"github.com/murphy-rl/murphy/topics"
)

func candidate(t testing.TB, taskID, tree string, index int, code string) *topics.Candidate {
	t.Helper()
	c := &topics.Candidate{
		SchemaVersion: topics.SchemaVersion,
		TreeSpec:      topics.TreeSpec{MaxTurns: 2, GroupSizes: []int{4}, RewardPolicy: topics.RewardPassRate},
		TreeID:        tree, TaskID: taskID, GroupID: topics.RootID(tree), Turn: 1, Index: index, GroupSize: 4,
		Code: code, ResponseText: code, FinishReason: "stop", Policy: "test", GeneratedAt: time.Unix(1700000000, 0).UTC(),
	}
	c.NodeID = topics.NodeID(tree, c.GroupID, index)
	return c
}

func encode(t testing.TB, r topics.Record) []byte {
	t.Helper()
	b, err := topics.Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestStageHandle(t *testing.T) {
	pool := testPool(t, 1)
	task := fnTask(8000)
	reg := prometheus.NewRegistry()
	cat := topics.DefaultCatalog()
	cfg := DefaultConfig()
	cfg.TaskWait = 100 * time.Millisecond
	st, err := NewStage(cfg, pool, tasks.NewMemory([]topics.Task{task}), cat, reg)
	if err != nil {
		t.Fatal(err)
	}
	if spec := st.Spec(); spec.Name != "execute" || spec.Inputs[0] != "murphy.candidates" || spec.Concurrency != 1 {
		t.Fatalf("spec %+v", spec)
	}
	infra := candidate(t, task.TaskID, "run/t/0", 2, "")
	infra.InfraCause, infra.InfraError = topics.InfraInference, "server down"
	cases := []struct {
		name    string
		value   []byte
		status  string
		passed  int
		poison  bool
		missing bool // dead-lettered as task_not_found once TaskWait is over
	}{
		{"passing candidate", encode(t, candidate(t, task.TaskID, "run/t/0", 0, "def f(x):\n    return x + 1\n")), topics.StatusPassed, 3, false, false},
		{"failing candidate", encode(t, candidate(t, task.TaskID, "run/t/0", 1, "def f(x):\n    return x\n")), topics.StatusWrongAnswer, 0, false, false},
		{"infrastructure failure is not run", encode(t, infra), topics.StatusNotRun, 0, false, false},
		{"garbage is poison", []byte("\x00not json"), "", 0, true, false},
		{"forged node id is poison", forged(t, candidate(t, task.TaskID, "run/t/0", 3, "x")), "", 0, true, false},
		{"unknown task is dead-lettered after the wait", encode(t, candidate(t, "no/such", "run/u/0", 0, "x")), "", 0, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			outs, err := st.Handle(context.Background(), pipeline.Record{Topic: "murphy.candidates", Value: tc.value})
			switch {
			case tc.poison:
				if err == nil || !topics.IsPoison(err) || !topics.IsPoison(err) {
					t.Fatalf("want poison, got %v", err)
				}
				return
			case tc.missing:
				if !topics.IsPoison(err) || pipeline.Reason(err) != "task_not_found" || !errors.Is(err, tasks.ErrNotFound) {
					t.Fatalf("want a task_not_found dead letter, got %v", err)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if len(outs) != 1 || outs[0].Topic != "murphy.executions" || outs[0].Key != "run/t/0" {
				t.Fatalf("outs %+v", outs)
			}
			var ex topics.Execution
			if err := topics.Decode(outs[0].Value, &ex); err != nil {
				t.Fatal(err)
			}
			if ex.Status != tc.status || ex.TestsPassed != tc.passed || ex.ExecutedAt.IsZero() {
				t.Fatalf("execution %s %d/%d\n%s", ex.Status, ex.TestsPassed, ex.TestsTotal, ex.Feedback)
			}
			if ex.Status != topics.StatusNotRun && (ex.TestsTotal != 3 || len(ex.Results) != 3 || ex.Feedback == "") {
				t.Fatalf("execution lacks results: %+v", ex)
			}
		})
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			key := mf.GetName()
			for _, l := range m.GetLabel() {
				if l.GetName() == "status" {
					key += "/" + l.GetValue()
				}
			}
			switch {
			case m.GetCounter() != nil:
				got[key] = m.GetCounter().GetValue()
			case m.GetHistogram() != nil:
				got[key] = float64(m.GetHistogram().GetSampleCount())
			case m.GetGauge() != nil:
				got[key] = m.GetGauge().GetValue()
			}
		}
	}
	want := map[string]float64{
		"murphy_execute_executions_total/passed": 1, "murphy_execute_executions_total/wrong_answer": 1,
		"murphy_execute_executions_total/not_run": 1, "murphy_execute_duration_seconds": 2,
		"murphy_execute_pool_saturation": 0, "murphy_execute_sandbox_restarts_total": 0,
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("metric %s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	if _, err := NewStage(DefaultConfig(), pool, tasks.NewMemory(nil), cat, reg); err == nil {
		t.Error("registering the metrics twice must fail")
	}
}

func TestConfigValidate(t *testing.T) {
	bad := []func(*Config){
		func(c *Config) { c.Name = "" },
		func(c *Config) { c.FeedbackBytes = 10 },
		func(c *Config) { c.Concurrency = -1 },
		func(c *Config) { c.Sandbox.UIDBase = 0 },
		func(c *Config) { c.Sandbox.Limits.MemoryMB = 1 },
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	for i, mut := range bad {
		c := DefaultConfig()
		mut(&c)
		if c.Validate() == nil {
			t.Errorf("case %d: invalid config accepted", i)
		}
	}
}

// forged re-encodes c with a node id that is not derived from its position.
func forged(t testing.TB, c *topics.Candidate) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(encode(t, c), &m); err != nil {
		t.Fatal(err)
	}
	m["node_id"] = "n0"
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestEvaluateCanceled: a run cut short by cancellation is an error for the
// runtime to retry, never a verdict.
func TestEvaluateCanceled(t *testing.T) {
	pool := testPool(t, 1)
	ev := &Evaluator{Runner: pool}
	for _, task := range []topics.Task{fnTask(20000), stdioTask()} {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		code := "def f(x):\n    while True: pass\n"
		if task.Kind == topics.KindStdio {
			code = "while True: pass\n"
		}
		_, err := ev.Evaluate(ctx, &task, code)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: err = %v, want the context's error", task.Kind, err)
		}
	}
	if st := pool.Stats(); st.Restarts != 0 {
		t.Errorf("cancellation broke a sandbox: %+v", st)
	}
}
