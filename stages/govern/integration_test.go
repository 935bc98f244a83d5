package govern

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/pipeline/pipelinetest"
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
	var outs []pipeline.Out
	for _, ex := range execs {
		b, err := topics.Encode(ex)
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, pipeline.Out{Topic: cat.Topic(topics.Executions), Key: ex.TreeID, Value: b})
	}
	outs = append(outs, pipeline.Out{Topic: cat.Topic(topics.Executions), Key: treeA, Value: []byte("not an execution")})
	pipelinetest.Produce(t, brokers, outs...)

	st, err := NewStage(DefaultConfig(), tasksWith(testTask()), nil, cat, prometheus.NewRegistry(), WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	runStage(t, brokers, st, len(execs)+1)

	samples := pipelinetest.ReadN(t, brokers, cat.Topic(topics.Samples), len(execs), 30*time.Second)
	prompts := pipelinetest.ReadN(t, brokers, cat.Topic(topics.Refinements), 3, 30*time.Second)
	if len(samples) != len(execs) || len(prompts) != 3 {
		t.Fatalf("%d samples, %d prompts; want %d, 3", len(samples), len(prompts), len(execs))
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
	}
}

// runStage consumes n records of the executions topic with the stage's
// handler and produces what it returns; the poison record must be refused
// as poison and produce nothing.
func runStage(t *testing.T, brokers []string, st *Stage, n int) {
	t.Helper()
	spec := st.Spec()
	recs := pipelinetest.ReadN(t, brokers, spec.Inputs[0], n, 30*time.Second)
	poisoned := 0
	for _, rec := range recs {
		outs, err := spec.Handler(context.Background(), rec)
		if err != nil {
			if poisonReason(err) == "" {
				t.Fatalf("record at offset %d: %v", rec.Offset, err)
			}
			poisoned++
			continue
		}
		pipelinetest.Produce(t, brokers, outs...)
	}
	if poisoned != 1 {
		t.Fatalf("%d poison records, want 1", poisoned)
	}
}
