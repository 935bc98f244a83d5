package generate

import (
	"context"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/stages/generate/policy"
	"github.com/murphy-rl/murphy/tasks"
	"github.com/prometheus/client_golang/prometheus"
)

// TestSlotsResize: growing the slots grants waiting prompts at once;
// shrinking them lets the held ones finish and hands none on above the new
// size.
func TestSlotsResize(t *testing.T) {
	s := newSlots(1)
	g1, err := s.acquire(context.Background(), prioRoot)
	if err != nil {
		t.Fatal(err)
	}
	w2, w3 := s.request(prioRoot), s.request(prioRefinement)
	s.resize(3)
	for i, w := range []*slotWaiter{w2, w3} {
		select {
		case <-w.ch:
		case <-time.After(time.Second):
			t.Fatalf("waiter %d not granted after growing", i)
		}
	}
	s.resize(1)
	w4 := s.request(prioRoot)
	s.release(g1)
	s.release(w2.g)
	select {
	case <-w4.ch:
		t.Fatal("granted above the new size")
	default:
	}
	s.release(w3.g)
	select {
	case <-w4.ch:
	case <-time.After(time.Second):
		t.Fatal("not granted once below the new size")
	}
}

// capacityPolicy is a policy whose server pool reports a capacity.
type capacityPolicy struct {
	policy.Policy
	watch func(int)
}

func (p *capacityPolicy) WatchCapacity(f func(int)) { p.watch = f }

// TestStageFollowsPolicyCapacity: the stage's slots follow the capacity
// the policy reports, within Concurrency.
func TestStageFollowsPolicyCapacity(t *testing.T) {
	cfg := DefaultConfig()
	cfg.InstanceID, cfg.Concurrency = "test", 100
	sim, err := policy.NewSimulated(policy.DefaultSimulatedConfig())
	if err != nil {
		t.Fatal(err)
	}
	pol := &capacityPolicy{Policy: sim}
	s, err := NewStageWithPolicy(cfg, pol, tasks.NewMemory(testTasks()), testCatalog(), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if pol.watch == nil {
		t.Fatal("the stage does not watch the policy's capacity")
	}
	for _, tc := range []struct{ report, want int }{{7, 7}, {500, 100}, {0, 1}} {
		pol.watch(tc.report)
		s.slots.mu.Lock()
		free := s.slots.free
		s.slots.mu.Unlock()
		if free != tc.want {
			t.Errorf("capacity %d: %d free slots, want %d", tc.report, free, tc.want)
		}
	}
}
