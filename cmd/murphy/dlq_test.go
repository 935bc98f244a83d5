package main

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"
	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/pipeline/pipelinetest"
	"github.com/murphy-rl/murphy/tasks/builtin"
	"github.com/murphy-rl/murphy/tasks/submit"
	"github.com/murphy-rl/murphy/topics"
)

// TestBadInputOnEveryInputTopic runs all five stages on the real broker and
// sends garbage bytes, an unknown schema_version, a record missing required
// fields and an oversized record to every input topic. Each lands in the DLQ
// with its reason and coordinates, and a tree submitted alongside still goes
// all the way to an Arrow batch.
func TestBadInputOnEveryInputTopic(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: long")
	}
	brokers := pipelinetest.Brokers(t)
	cat := pipelinetest.Catalog(t, brokers, 2)
	cfg := defaultConfig()
	cfg.Kafka = pipelinetest.Kafka(brokers)
	cfg.Topics = cat
	cfg.LogLevel = "error"
	cfg.Execute.Sandbox.Workers = 1
	cfg.Emit.MaxAge = 200 * time.Millisecond
	if err := cfg.validate(stageNames); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rt, err := pipeline.NewRuntime(pipeline.RuntimeConfig{Kafka: cfg.Kafka, Catalog: cat, Name: "dlq-test",
		GroupPrefix: cat.Prefix, Logger: newLogger("error", &bytes.Buffer{})})
	if err != nil {
		t.Fatal(err)
	}
	set, err := addStages(ctx, rt, &cfg, stageNames)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- rt.Run(runCtx) }()

	inputs := []topics.Name{topics.Prompts, topics.Refinements, topics.Candidates, topics.Executions, topics.Samples, topics.Credited}
	var outs []pipeline.Out
	for _, in := range inputs {
		for kind, v := range badRecords(t) {
			outs = append(outs, pipeline.Out{Topic: cat.Topic(in), Key: string(in) + "/" + kind, Value: v})
		}
	}
	pipelinetest.Produce(t, brokers, outs...)

	ts, err := builtin.Tasks()
	if err != nil {
		t.Fatal(err)
	}
	sub := submit.DefaultConfig()
	sub.RunID, sub.GroupSizes, sub.GroupSize, sub.MaxTurns, sub.TreesPerTask = "dlq", []int{2}, 2, 1, 1
	if _, err := submit.Publish(ctx, rt.Producer(), cat, sub, ts[:1], 0); err != nil {
		t.Fatal(err)
	}

	want := len(inputs) * len(badRecords(t))
	dlq := pipelinetest.ReadN(t, brokers, cat.Topic(topics.DLQ), want, 3*time.Minute)
	batches := pipelinetest.ReadN(t, brokers, cat.Topic(topics.Batches), 1, 3*time.Minute)
	stop()
	if err := <-done; err != nil {
		t.Errorf("runtime: %v", err)
	}
	if len(batches) == 0 {
		t.Fatal("the good tree did not reach the batches topic")
	}
	got := map[string]string{}
	for _, r := range dlq {
		var dl topics.DeadLetter
		if err := topics.Decode(r.Value, &dl); err != nil {
			t.Fatalf("DLQ record: %v", err)
		}
		if dl.SourceTopic == "" || dl.Offset < 0 || dl.Stage == "" {
			t.Errorf("DLQ record lacks coordinates: %+v", dl)
		}
		got[string(dl.Key)] = strings.SplitN(dl.Reason, ":", 2)[0]
	}
	wantReason := map[string]string{"garbage": "malformed", "version": "unknown_schema_version",
		"missing": "missing_field", "oversized": "oversized"}
	var missing []string
	for _, in := range inputs {
		for kind, reason := range wantReason {
			key := string(in) + "/" + kind
			if got[key] != reason {
				missing = append(missing, fmt.Sprintf("%s: got %q, want %q", key, got[key], reason))
			}
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Error(m)
	}
}

func badRecords(t *testing.T) map[string][]byte {
	version, _ := json.Marshal(map[string]any{"schema_version": 99, "tree_id": "x"})
	missing, _ := json.Marshal(map[string]any{"schema_version": topics.SchemaVersion})
	return map[string][]byte{
		"garbage":   []byte("\xff\xfe not a record"),
		"version":   version,
		"missing":   missing,
		"oversized": bytes.Repeat([]byte{' '}, topics.MaxRecordBytes+1),
	}
}
