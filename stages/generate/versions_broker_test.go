package generate

import (
	"context"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/pipeline/pipelinetest"
	"github.com/murphy-rl/murphy/topics"
)

// TestVersionsAndBoundOnBroker: generate follows the policy-versions topic
// and the trainer-progress topic from the log and reads the credited
// topic's end offsets from the broker. A trainer with η=0 and one tree per
// version lets one tree in flight; the next root prompt waits until the
// first tree is credited and the trainer's progress says it consumed it,
// and it is generated at the version published meanwhile.
func TestVersionsAndBoundOnBroker(t *testing.T) {
	brokerCases(t, func(t *testing.T, brokers []string) {
		cat := pipelinetest.Catalog(t, brokers, 2)
		kcfg := pipelinetest.Kafka(brokers)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		s, calls := newVersionedStage(t, func(c *Config) {
			c.Staleness.Enabled = true
			c.Staleness.PollInterval = 100 * time.Millisecond
		})
		s.cat = cat
		s.Follow(ctx, kcfg)
		progress := func(consumed map[string]int64) pipeline.Out {
			b, err := topics.Encode(&topics.TrainerProgress{SchemaVersion: topics.SchemaVersion, TrainerID: "a",
				MaxStaleness: intp(0), TreesPerVersion: 1, Consumed: consumed, UpdatedAt: time.Now().UTC()})
			if err != nil {
				t.Fatal(err)
			}
			return pipeline.Out{Topic: cat.Topic(topics.TrainerProgressTopic), Key: topics.TrainerProgressKey("a", 0), Value: b}
		}
		pipelinetest.Produce(t, brokers, progress(map[string]int64{}), pipelinetest.VersionOut(t, cat, 1))
		waitFor(t, func() bool { v := s.vers.current(); return v != nil && v.Version == 1 })
		waitFor(t, func() bool { return len(s.bnd.standings()) == 1 })

		task := testTasks()[0]
		rec1, _ := rootRecord(t, cat, task, 2, 0)
		outs, err := s.HandlePrompt(ctx, rec1)
		if err != nil {
			t.Fatal(err)
		}
		if cs := candidatesOf(t, outs); cs[0].PolicyVersion != 1 || (*calls)[0] != "run-v1" {
			t.Fatalf("first tree: version %d model %v", cs[0].PolicyVersion, *calls)
		}
		rec2, _ := rootRecord(t, cat, task, 2, 1)
		type result struct {
			outs []pipeline.Out
			err  error
		}
		done := make(chan result, 1)
		go func() { o, err := s.HandlePrompt(ctx, rec2); done <- result{o, err} }()
		select {
		case r := <-done:
			t.Fatalf("second tree admitted beyond η=0: %v", r.err)
		case <-time.After(500 * time.Millisecond):
		}
		// Version 2 arrives; tree 1 completes and is credited (offset 0 of
		// partition 0); the trainer consumes it.
		pipelinetest.Produce(t, brokers, pipelinetest.VersionOut(t, cat, 2),
			pipeline.Out{Topic: cat.Topic(topics.Credited), Key: "tree", Partition: pipeline.ToPartition(0), Value: []byte("{}")})
		s.TreeDone(string(rec1.Key))
		waitFor(t, func() bool { v := s.vers.current(); return v != nil && v.Version == 2 })
		select {
		case <-done:
			t.Fatal("admitted before the trainer consumed")
		case <-time.After(500 * time.Millisecond):
		}
		pipelinetest.Produce(t, brokers, progress(map[string]int64{"0": 1}))
		select {
		case r := <-done:
			if r.err != nil {
				t.Fatal(r.err)
			}
			if cs := candidatesOf(t, r.outs); cs[0].PolicyVersion != 2 || (*calls)[1] != "run-v2" {
				t.Fatalf("second tree: version %d model %v", cs[0].PolicyVersion, *calls)
			}
		case <-ctx.Done():
			t.Fatal("second tree never admitted")
		}
	})
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 30s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestBoundRecoversInFlightOnBroker: a generate that starts (or restarts:
// its group resumes past them) counts the trees the admission log granted
// within the tree TTL and that did not complete, and none it voided,
// before any tree starts under the bound.
func TestBoundRecoversInFlightOnBroker(t *testing.T) {
	brokerCases(t, func(t *testing.T, brokers []string) {
		cat := pipelinetest.Catalog(t, brokers, 2)
		kcfg := pipelinetest.Kafka(brokers)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		now := time.Now().UTC()
		admit := func(tree string, at time.Time, readTo, headroom int64) pipeline.Out {
			b, err := topics.Encode(&topics.Admission{SchemaVersion: topics.SchemaVersion, TreeID: tree, PolicyVersion: 1,
				Instance: "earlier", Proposal: "earlier/" + tree, ReadTo: readTo, Headroom: &headroom, AdmittedAt: at})
			if err != nil {
				t.Fatal(err)
			}
			return pipeline.Out{Topic: cat.Topic(topics.Admissions), Key: tree, Value: b, Partition: pipeline.ToPartition(0)}
		}
		completion := func(tree string) pipeline.Out {
			b, err := topics.Encode(&topics.Completion{SchemaVersion: topics.SchemaVersion, TreeID: tree, TaskID: "task", Samples: 2, CreditedAt: time.Now().UTC()})
			if err != nil {
				t.Fatal(err)
			}
			return pipeline.Out{Topic: cat.Topic(topics.Completions), Key: tree, Value: b}
		}
		// On the log: t1, t2, t3 granted; "void" proposed from a read
		// position 1 with a headroom of 3 at offset 4: voided; "expired"
		// granted but older than the tree TTL (written first: the window
		// starts after it). t2 completed.
		pipelinetest.Produce(t, brokers, admit("expired", now.Add(-2*time.Hour), 0, 9))
		pipelinetest.Produce(t, brokers, admit("t1", now, 1, 9), admit("t2", now, 1, 9), admit("t3", now, 1, 9),
			admit("void", now, 1, 3), completion("t2"))
		s, _ := newVersionedStage(t, func(c *Config) {
			c.Staleness.Enabled = true
			c.Staleness.PollInterval = 100 * time.Millisecond
		})
		s.cat = cat
		s.Follow(ctx, kcfg)
		waitFor(t, func() bool {
			s.bnd.mu.Lock()
			defer s.bnd.mu.Unlock()
			return !s.bnd.recovering
		})
		s.bnd.standings() // expires what is older than the tree TTL
		s.bnd.mu.Lock()
		defer s.bnd.mu.Unlock()
		if len(s.bnd.flight) != 2 || s.bnd.flight["t1"].version != 1 || s.bnd.flight["t3"].version != 1 {
			t.Fatalf("in flight after recovery: %v, want t1 and t3 at version 1", s.bnd.flight)
		}
	})
}
