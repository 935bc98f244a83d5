package govern

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/pipeline/pipelinetest"
	"github.com/murphy-rl/murphy/tasks"
	"github.com/murphy-rl/murphy/topics"
)

// TestBrokerExecutionsToSamplesAndPrompts runs the stage on the real broker:
// executions in, samples and refinement prompts out, with the right parent,
// turn and child count; solved, masked and last-turn nodes produce none;
// every output stays on its tree's partition.
func TestBrokerExecutionsToSamplesAndPrompts(t *testing.T) {
	brokers := pipelinetest.Brokers(t)
	cat := pipelinetest.Catalog(t, brokers, 3)

	treeA := topics.TreeID("run-"+pipelinetest.Unique(t), "t1", 0)
	treeB := topics.TreeID("run-"+pipelinetest.Unique(t), "t1", 1)
	in := func(tree string, muts ...func(*topics.Execution)) *topics.Execution {
		return execution(append([]func(*topics.Execution){func(e *topics.Execution) {
			e.TreeID, e.GroupID = tree, topics.RootID(tree)
		}}, muts...)...)
	}
	index := func(i int) func(*topics.Execution) { return func(e *topics.Execution) { e.Index = i } }
	parentB := topics.NodeID(treeB, topics.RootID(treeB), 0)
	grandB := topics.NodeID(treeB, parentB, 1)
	execs := []*topics.Execution{
		in(treeA, index(0)),                                    // solved: leaf
		in(treeA, index(1), failing(2)),                        // expands: 2 children at turn 2
		in(treeA, index(2), status(topics.StatusCompileError)), // expands
		in(treeA, index(3), status(topics.StatusSandboxError)), // masked: leaf
		in(treeB, failing(1), func(e *topics.Execution) { // turn 2: expands to turn 3
			e.Turn, e.ParentID, e.GroupID, e.GroupSize, e.Index = 2, parentB, parentB, 2, 1
		}),
		in(treeB, failing(1), func(e *topics.Execution) { // last turn: leaf
			e.Turn, e.ParentID, e.GroupID, e.GroupSize, e.Index = 3, grandB, grandB, 2, 0
		}),
	}
	kcfg := pipelinetest.Kafka(brokers)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	task := testTask()
	taskBytes, err := topics.Encode(task)
	if err != nil {
		t.Fatal(err)
	}
	pipelinetest.Produce(t, brokers, pipeline.Out{Topic: cat.Topic(topics.Tasks), Key: task.TaskID, Value: taskBytes})
	table := pipeline.NewTable(kcfg, cat.Topic(topics.Tasks), 16)
	defer table.Close()

	reg := prometheus.NewRegistry()
	cfg := DefaultConfig()
	cfg.TaskWait = time.Second
	st, err := NewStage(cfg, tasks.FromTable(table, pipeline.ErrNotFound), nil, cat, reg)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := pipeline.NewRuntime(pipeline.RuntimeConfig{Kafka: kcfg, Catalog: cat, Name: "govern-test", Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.AddStage(st.Spec()); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- rt.Run(ctx) }()

	var outs []pipeline.Out
	for _, ex := range append(execs, execs[1]) { // execs[1] is replayed
		b, err := topics.Encode(ex)
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, pipeline.Out{Topic: cat.Topic(topics.Executions), Key: ex.TreeID, Value: b})
	}
	unknown := in(treeA, index(3), failing(0), func(e *topics.Execution) { e.TaskID = "no-such-task" })
	ub, err := topics.Encode(unknown)
	if err != nil {
		t.Fatal(err)
	}
	garbage := []byte("not an execution")
	outs = append(outs,
		pipeline.Out{Topic: cat.Topic(topics.Executions), Key: treeA, Value: garbage},
		pipeline.Out{Topic: cat.Topic(topics.Executions), Key: treeA, Value: ub})
	pipelinetest.Produce(t, brokers, outs...)

	samples := pipelinetest.ReadN(t, brokers, cat.Topic(topics.Samples), len(execs)+1, time.Minute)
	prompts := pipelinetest.ReadN(t, brokers, cat.Topic(topics.Refinements), 4, time.Minute)
	dlq := pipelinetest.ReadN(t, brokers, cat.Topic(topics.DLQ), 2, time.Minute)
	if len(samples) != len(execs)+1 || len(prompts) != 4 || len(dlq) != 2 {
		t.Fatalf("%d samples, %d prompts, %d dead letters; want %d, 4, 2", len(samples), len(prompts), len(dlq), len(execs)+1)
	}
	reasons := map[string]bool{}
	for _, r := range dlq {
		var dl topics.DeadLetter
		if err := topics.Decode(r.Value, &dl); err != nil {
			t.Fatal(err)
		}
		reasons[strings.SplitN(dl.Reason, ":", 2)[0]] = true
	}
	if !reasons["malformed"] || !reasons["task_not_found"] {
		t.Errorf("dead letter reasons %v, want malformed and task_not_found", reasons)
	}
	partition := map[string]int{}
	children := map[string]int{}
	for _, r := range samples {
		var s topics.Sample
		if err := topics.Decode(r.Value, &s); err != nil {
			t.Fatal(err)
		}
		if string(r.Key) != s.TreeID {
			t.Fatalf("sample keyed %q, tree %q", r.Key, s.TreeID)
		}
		if p, ok := partition[s.TreeID]; ok && p != r.Partition {
			t.Fatalf("tree %s spread over partitions %d and %d", s.TreeID, p, r.Partition)
		}
		partition[s.TreeID] = r.Partition
		children[s.NodeID] = s.ChildrenRequested
	}
	want := map[string]int{
		execs[0].NodeID: 0, execs[1].NodeID: 2, execs[2].NodeID: 2, execs[3].NodeID: 0,
		execs[4].NodeID: 2, execs[5].NodeID: 0,
	}
	for node, n := range want {
		if got, ok := children[node]; !ok || got != n {
			t.Errorf("node %s: children_requested %d (present %v), want %d", node, got, ok, n)
		}
	}
	texts := map[string][]string{}
	for _, r := range prompts {
		var p topics.Prompt
		if err := topics.Decode(r.Value, &p); err != nil {
			t.Fatal(err)
		}
		if string(r.Key) != p.TreeID || partition[p.TreeID] != r.Partition {
			t.Fatalf("prompt keyed %q on partition %d, tree %s on %d", r.Key, r.Partition, p.TreeID, partition[p.TreeID])
		}
		var parent *topics.Execution
		for _, ex := range execs {
			if ex.NodeID == p.ParentID {
				parent = ex
			}
		}
		if parent == nil || want[parent.NodeID] == 0 {
			t.Fatalf("prompt for node %s, which should be a leaf or does not exist", p.ParentID)
		}
		if p.GroupID != parent.NodeID || p.Turn != parent.Turn+1 || p.GroupSize != children[parent.NodeID] || p.TreeID != parent.TreeID {
			t.Fatalf("prompt %+v does not follow its parent (turn %d)", p, parent.Turn)
		}
		texts[p.ParentID] = append(texts[p.ParentID], p.Text)
	}
	if r := texts[execs[1].NodeID]; len(r) != 2 || r[0] != r[1] {
		t.Errorf("the replayed execution produced %d prompts, different: %v", len(r), len(r) == 2 && r[0] != r[1])
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
