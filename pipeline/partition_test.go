package pipeline_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/pipeline/pipelinetest"
	"github.com/murphy-rl/murphy/topics"
)

// holdProc holds records whose key starts with "hold" open (never finished)
// and commits its low watermark: the offset of the first held record.
type holdProc struct {
	mu      *sync.Mutex // shared by the processors of a run: seen is shared
	seen    *[]pipeline.Record
	next    int64
	held    int64
	hasHeld bool
}

func (p *holdProc) Process(_ context.Context, rec pipeline.Record) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	*p.seen = append(*p.seen, rec)
	p.next = rec.Offset + 1
	if !p.hasHeld && len(rec.Key) >= 4 && string(rec.Key[:4]) == "hold" {
		p.held, p.hasHeld = rec.Offset, true
	}
	return nil
}
func (p *holdProc) Tick(context.Context, time.Time) error { return nil }
func (p *holdProc) CommitOffset() (int64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hasHeld {
		return p.held, true
	}
	return p.next, p.next > 0
}
func (p *holdProc) Close(context.Context) error { return nil }

// TestPartitionStageCommitsChosenOffset checks assignment and revocation
// callbacks and that a restarted consumer resumes at the offset the stage
// chose (a low watermark), not after the last record.
func TestPartitionStageCommitsChosenOffset(t *testing.T) {
	pipelinetest.OnEachBroker(t, func(t *testing.T, brokers []string) {
		cat := pipelinetest.Catalog(t, brokers, 2)
		in := cat.Topic(topics.Samples)
		// Partition of each key under murmur2 is fixed; produce to both.
		var outs []pipeline.Out
		for _, k := range []string{"a", "b", "c", "d", "hold-1", "e", "f", "g", "h", "i"} {
			outs = append(outs, pipeline.Out{Topic: in, Key: k, Value: []byte(k)})
		}
		pipelinetest.Produce(t, brokers, outs...)

		run := func(want int) (seen []pipeline.Record, assigned, revoked []pipeline.Assignment) {
			var mu sync.Mutex
			stop := startRuntime(t, brokers, cat, "", func(rt *pipeline.Runtime) {
				err := rt.AddPartitionStage(pipeline.PartitionStage{
					Name: "hold", Input: in, TickInterval: 50 * time.Millisecond,
					Assigned: func(_ context.Context, a pipeline.Assignment) (pipeline.PartitionProcessor, error) {
						mu.Lock()
						defer mu.Unlock()
						assigned = append(assigned, a)
						return &holdProc{mu: &mu, seen: &seen}, nil
					},
					Revoked: func(a pipeline.Assignment) {
						mu.Lock()
						defer mu.Unlock()
						revoked = append(revoked, a)
					},
				})
				if err != nil {
					t.Fatal(err)
				}
			})
			deadline := time.Now().Add(60 * time.Second)
			for {
				mu.Lock()
				n := len(seen)
				mu.Unlock()
				if n >= want {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("saw %d records, want %d", n, want)
				}
				time.Sleep(50 * time.Millisecond)
			}
			time.Sleep(300 * time.Millisecond) // a few ticks: commits
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			return seen, assigned, revoked
		}
		first, assigned, revoked := run(len(outs))
		if len(first) != len(outs) {
			t.Fatalf("first run saw %d records, want %d", len(first), len(outs))
		}
		if len(assigned) != 2 || len(revoked) != 2 {
			t.Fatalf("assigned %v, revoked %v: want both partitions each", assigned, revoked)
		}
		for _, a := range assigned {
			if a.Committed != -1 {
				t.Errorf("fresh group: committed = %d, want -1", a.Committed)
			}
		}
		// The held record's partition restarts at the held record; the
		// other partition has nothing left.
		var heldPart int
		var afterHeld []string
		held := false
		for _, r := range first {
			if string(r.Key) == "hold-1" {
				heldPart, held = r.Partition, true
			}
		}
		for _, r := range first {
			if r.Partition == heldPart && held {
				if string(r.Key) == "hold-1" || len(afterHeld) > 0 {
					afterHeld = append(afterHeld, string(r.Key))
				}
			}
		}
		second, _, _ := run(len(afterHeld))
		var got []string
		for _, r := range second {
			got = append(got, string(r.Key))
		}
		if len(got) != len(afterHeld) {
			t.Fatalf("restart replayed %v, want exactly %v", got, afterHeld)
		}
		for i := range got {
			if got[i] != afterHeld[i] {
				t.Fatalf("restart replayed %v, want %v", got, afterHeld)
			}
		}
	})
}
