package execute

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/pipeline/pipelinetest"
	"github.com/murphy-rl/murphy/tasks"
	"github.com/murphy-rl/murphy/topics"
)

// TestStageOnBroker runs the execute stage on the pipeline runtime against
// the real Kafka broker (MURPHY_KAFKA_BROKERS; skipped when unset): tasks
// come from the compacted tasks topic, candidates become execution records
// keyed by tree id, and a malformed candidate goes to the DLQ while the
// others are still processed.
func TestStageOnBroker(t *testing.T) {
	brokers := pipelinetest.Brokers(t)
	pool := testPool(t, 2)
	cat := pipelinetest.Catalog(t, brokers, 3)
	kcfg := pipelinetest.Kafka(brokers)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	task := fnTask(8000)
	pipelinetest.Produce(t, brokers, pipeline.Out{Topic: cat.Topic(topics.Tasks), Key: task.TaskID, Value: encode(t, &task)})
	table := pipeline.NewTable(kcfg, cat.Topic(topics.Tasks), 16)
	defer table.Close()

	reg := prometheus.NewRegistry()
	st, err := NewStage(DefaultConfig(), pool, tasks.FromTable(table, pipeline.ErrNotFound), cat, reg)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := pipeline.NewRuntime(pipeline.RuntimeConfig{Kafka: kcfg, Catalog: cat, Name: "execute-test", Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.AddStage(st.Spec()); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- rt.Run(ctx) }()

	garbage := []byte(`{"schema_version": 1, "tree_id": "x"`)
	cands := []*topics.Candidate{
		candidate(t, task.TaskID, "run/a/0", 0, "def f(x):\n    return x + 1\n"),
		candidate(t, task.TaskID, "run/a/0", 1, "def f(x):\n    while True: pass\n"),
		candidate(t, task.TaskID, "run/b/0", 0, "def f(x)\n"),
	}
	outs := []pipeline.Out{{Topic: cat.Topic(topics.Candidates), Key: "run/bad/0", Value: garbage}}
	for _, c := range cands {
		outs = append(outs, pipeline.Out{Topic: cat.Topic(topics.Candidates), Key: c.TreeID, Value: encode(t, c)})
	}
	pipelinetest.Produce(t, brokers, outs...)

	recs := pipelinetest.ReadN(t, brokers, cat.Topic(topics.Executions), len(cands), 2*time.Minute)
	want := map[string]string{
		cands[0].NodeID: topics.StatusPassed, cands[1].NodeID: topics.StatusTimeout, cands[2].NodeID: topics.StatusCompileError,
	}
	for _, r := range recs {
		var ex topics.Execution
		if err := topics.Decode(r.Value, &ex); err != nil {
			t.Fatal(err)
		}
		if string(r.Key) != ex.TreeID {
			t.Errorf("execution keyed %q, tree %q", r.Key, ex.TreeID)
		}
		if want[ex.NodeID] != ex.Status {
			t.Errorf("node %s: status %s, want %s\n%s", ex.NodeID, ex.Status, want[ex.NodeID], ex.Feedback)
		}
		delete(want, ex.NodeID)
	}
	if len(want) != 0 {
		t.Errorf("no execution for %v", want)
	}
	dlq := pipelinetest.ReadN(t, brokers, cat.Topic(topics.DLQ), 1, time.Minute)
	var dl topics.DeadLetter
	if err := topics.Decode(dlq[0].Value, &dl); err != nil {
		t.Fatal(err)
	}
	if dl.Reason == "" || !bytes.Equal(dl.Value, garbage) || dl.SourceTopic != cat.Topic(topics.Candidates) {
		t.Errorf("dead letter %+v", dl)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil && ctx.Err() == nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the runtime did not stop")
	}
}
