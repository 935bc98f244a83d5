package generate

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/pipeline/pipelinetest"
	"github.com/murphy-rl/murphy/tasks"
	"github.com/murphy-rl/murphy/tasks/submit"
	"github.com/murphy-rl/murphy/topics"
	"github.com/prometheus/client_golang/prometheus"
)

// brokerCases runs a test on the embedded broker and, when
// MURPHY_KAFKA_BROKERS is set, on the real Kafka broker.
func brokerCases(t *testing.T, f func(t *testing.T, brokers []string)) {
	t.Run("embedded", func(t *testing.T) { f(t, pipelinetest.Embedded(t)) })
	t.Run("kafka", func(t *testing.T) { f(t, pipelinetest.Brokers(t)) })
}

// TestSubmitThenGenerateOnBroker publishes tasks and root prompts with
// Submit, runs every prompt through the stage's handler and produces the
// candidates: exactly G per prompt, keyed by tree id, with the node ids
// derived from (tree, group, index); handling the same prompts again
// yields the same ids.
func TestSubmitThenGenerateOnBroker(t *testing.T) {
	brokerCases(t, func(t *testing.T, brokers []string) {
		cat := pipelinetest.Catalog(t, brokers, 3)
		kcfg := pipelinetest.Kafka(brokers)
		prod := pipeline.NewProducer(kcfg)
		defer prod.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()

		ts := testTasks()
		bad := topics.Task{TaskID: "demo/bad", Kind: "cobol", Prompt: "x"}
		sc := submit.DefaultConfig()
		sc.RunID, sc.GroupSize, sc.TreesPerTask, sc.MaxTurns = "r1", 3, 2, 2
		rep, err := submit.Publish(ctx, prod, cat, sc, append(ts, bad), 0)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Tasks != 2 || rep.Trees != 4 || len(rep.Skipped) != 1 {
			t.Fatalf("report %+v", rep)
		}
		taskRecs := pipelinetest.ReadN(t, brokers, cat.Topic(topics.Tasks), 2, time.Minute)
		for _, r := range taskRecs {
			var tk topics.Task
			if err := topics.Decode(r.Value, &tk); err != nil || string(r.Key) != tk.TaskID {
				t.Fatalf("task record key %q: %v", r.Key, err)
			}
		}
		prompts := pipelinetest.ReadN(t, brokers, cat.Topic(topics.Prompts), 4, time.Minute)
		if len(prompts) != 4 {
			t.Fatalf("%d prompts", len(prompts))
		}

		s := newSimStage(t, nil, 3)
		s.cat = cat
		handle := func() map[string][]string {
			byGroup := map[string][]string{}
			for _, r := range prompts {
				outs, err := s.HandlePrompt(ctx, r)
				if err != nil {
					t.Fatal(err)
				}
				if err := prod.Produce(ctx, outs...); err != nil {
					t.Fatal(err)
				}
				var p topics.Prompt
				if err := topics.Decode(r.Value, &p); err != nil || string(r.Key) != p.TreeID || p.GroupID != topics.RootID(p.TreeID) {
					t.Fatalf("prompt key %q group %q: %v", r.Key, p.GroupID, err)
				}
				for i := 0; i < p.GroupSize; i++ {
					byGroup[p.GroupID] = append(byGroup[p.GroupID], topics.NodeID(p.TreeID, p.GroupID, i))
				}
			}
			return byGroup
		}
		want := handle()
		handle() // replay
		cands := pipelinetest.ReadN(t, brokers, cat.Topic(topics.Candidates), 24, time.Minute)
		got := map[string][]string{}
		parts := map[string]int{}
		for _, r := range cands {
			var c topics.Candidate
			if err := topics.Decode(r.Value, &c); err != nil {
				t.Fatal(err)
			}
			if string(r.Key) != c.TreeID {
				t.Fatalf("candidate keyed %q, tree %q", r.Key, c.TreeID)
			}
			if p, ok := parts[c.TreeID]; ok && p != r.Partition {
				t.Fatalf("tree %s on partitions %d and %d", c.TreeID, p, r.Partition)
			}
			parts[c.TreeID] = r.Partition
			got[c.GroupID] = append(got[c.GroupID], c.NodeID)
		}
		if len(got) != 4 {
			t.Fatalf("%d groups, want 4", len(got))
		}
		for g, ids := range got {
			sort.Strings(ids)
			w := append(append([]string{}, want[g]...), want[g]...) // emitted twice: original and replay
			sort.Strings(w)
			if fmt.Sprint(ids) != fmt.Sprint(w) {
				t.Fatalf("group %s: ids %v, want each of %v twice", g, ids, want[g])
			}
		}
	})
}

// humanEvalPath is the reference data set, used by path (DESIGN §6).
const humanEvalPath = "../../../shared/data/humaneval/HumanEval.jsonl.gz"

// startStage runs a generate stage with cfg on the runtime until the test ends.
func startStage(t *testing.T, ctx context.Context, brokers []string, cat topics.Catalog, cfg Config, lookup TaskLookup) *Stage {
	t.Helper()
	runCtx, cancel := context.WithCancel(ctx)
	s, wait := runStage(t, runCtx, brokers, cat, cfg, lookup)
	t.Cleanup(func() {
		cancel()
		if err := wait(); err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("runtime: %v", err)
		}
	})
	return s
}

// startStageB is startStage for benchmarks; the returned function waits for
// the runtime to stop after ctx is cancelled.
func startStageB(b *testing.B, ctx context.Context, brokers []string, cat topics.Catalog, cfg Config, lookup TaskLookup) func() {
	_, wait := runStage(b, ctx, brokers, cat, cfg, lookup)
	return func() { _ = wait() }
}

func runStage(t testing.TB, ctx context.Context, brokers []string, cat topics.Catalog, cfg Config, lookup TaskLookup) (*Stage, func() error) {
	t.Helper()
	reg := prometheus.NewRegistry()
	rt, err := pipeline.NewRuntime(pipeline.RuntimeConfig{Kafka: pipelinetest.Kafka(brokers), Catalog: cat,
		Name: "generate-test", Registry: reg, GroupPrefix: cat.Prefix})
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewStage(cfg, lookup, cat, reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range s.Specs() {
		if err := rt.AddStage(spec); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- rt.Run(ctx) }()
	return s, func() error { return <-done }
}

// TestTreeCapOnRuntime: with a cap of C trees and no credit stage, exactly
// C trees are generated and the other root prompts wait on the broker;
// credited records for those trees (read by key from the credited topic)
// let exactly C more through.
func TestTreeCapOnRuntime(t *testing.T) {
	brokerCases(t, func(t *testing.T, brokers []string) {
		const g, capTrees, trees = 2, 10, 35
		cat := pipelinetest.Catalog(t, brokers, 3)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		prod := pipeline.NewProducer(pipelinetest.Kafka(brokers))
		defer prod.Close()
		ts := make([]topics.Task, trees)
		for i := range ts {
			ts[i] = testTasks()[i%2]
			ts[i].TaskID = fmt.Sprintf("demo/%d", i)
		}
		sc := submit.DefaultConfig()
		sc.RunID, sc.GroupSize = "cap", g
		if _, err := submit.Publish(ctx, prod, cat, sc, ts, 0); err != nil {
			t.Fatal(err)
		}
		cfg := DefaultConfig()
		cfg.InstanceID = "test"
		cfg.MaxTreesInFlight = capTrees
		s := startStage(t, ctx, brokers, cat, cfg, tasks.NewMemory(ts))

		expectExactly := func(n int) []pipeline.Record {
			t.Helper()
			recs := pipelinetest.ReadN(t, brokers, cat.Topic(topics.Candidates), n, time.Minute)
			more, err := pipelinetest.ReadAll(ctx, brokers, cat.Topic(topics.Candidates), n+1, 1500*time.Millisecond)
			if err == nil || len(more) != n {
				t.Fatalf("%d candidates, want exactly %d while the cap holds", len(more), n)
			}
			return recs
		}
		first := expectExactly(capTrees * g)
		if s.TreesInFlight() != capTrees {
			t.Fatalf("%d trees in flight", s.TreesInFlight())
		}
		var completions []pipeline.Out
		seen := map[string]bool{}
		for _, r := range first {
			if !seen[string(r.Key)] {
				seen[string(r.Key)] = true
				v, err := topics.Encode(&topics.Completion{SchemaVersion: topics.SchemaVersion, TreeID: string(r.Key), TaskID: "x", Samples: g})
				if err != nil {
					t.Fatal(err)
				}
				completions = append(completions, pipeline.Out{Topic: cat.Topic(topics.Completions), Key: string(r.Key), Value: v})
			}
		}
		if err := prod.Produce(ctx, completions...); err != nil {
			t.Fatal(err)
		}
		expectExactly(2 * capTrees * g)
		if got := metricValue(t, s.Metrics().Completions); got != capTrees {
			t.Fatalf("%v completions counted, want %d", got, capTrees)
		}
	})
}
