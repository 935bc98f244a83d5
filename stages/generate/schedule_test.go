package generate

import (
	"context"
	"math"
	"sort"
	"testing"
	"time"
)

// simSlots drives slots as a discrete-event simulation on a fake clock:
// queue[c] waiters of each root class are kept waiting (backlogged), each
// grant of class c is held hold[c] seconds, and the earliest grant to end
// is released next. It returns the grants and the slot-seconds per class
// over the first grants grants.
type simSlots struct {
	s     *slots
	now   time.Time
	held  []simHeld
	wait  [numClasses][]*slotWaiter
	count [numClasses]int
	secs  [numClasses]float64
	order []int
}

type simHeld struct {
	end time.Time
	g   *slotGrant
}

func newSimSlots(n int, share float64) *simSlots {
	sim := &simSlots{now: time.Unix(1000, 0)}
	sim.s = newSharedSlots(n, share, func() time.Time { return sim.now }, func(c int) { sim.order = append(sim.order, c) })
	return sim
}

// want keeps k waiters of class c queued.
func (sim *simSlots) want(c, k int) {
	for len(sim.wait[c]) < k {
		sim.wait[c] = append(sim.wait[c], sim.s.request(c))
	}
}

// collect moves granted waiters to held, to end after hold[c] seconds.
func (sim *simSlots) collect(hold [numClasses]float64) {
	for c := range sim.wait {
		var still []*slotWaiter
		for _, w := range sim.wait[c] {
			select {
			case <-w.ch:
				sim.count[c]++
				sim.secs[c] += hold[c]
				d := time.Duration(hold[c] * float64(time.Second))
				sim.held = append(sim.held, simHeld{end: sim.now.Add(d), g: w.g})
			default:
				still = append(still, w)
			}
		}
		sim.wait[c] = still
	}
	sort.SliceStable(sim.held, func(i, j int) bool { return sim.held[i].end.Before(sim.held[j].end) })
}

// step releases the earliest grant to end.
func (sim *simSlots) step() {
	h := sim.held[0]
	sim.held = sim.held[1:]
	sim.now = h.end
	sim.s.release(h.g)
}

// run keeps both root streams backlogged (k waiters each, as the two
// consumers' handler goroutines would be) for grants grants.
func (sim *simSlots) run(grants, k int, hold [numClasses]float64, classes ...int) {
	for len(sim.order) < grants {
		for _, c := range classes {
			sim.want(c, k)
		}
		sim.collect(hold)
		sim.step()
	}
	sim.collect(hold)
}

func backfillFraction(secs [numClasses]float64) float64 {
	return secs[prioBackfill] / (secs[prioBackfill] + secs[prioRoot])
}

// With both root streams backlogged and equal hold times, backfill gets
// its share of the slots: the split of prompts started is the share.
func TestSlotsShareEqualHoldTimes(t *testing.T) {
	for _, share := range []float64{0.1, 0.25, 0.5, 0.75} {
		sim := newSimSlots(4, share)
		sim.run(2000, 4, [numClasses]float64{0, 1, 1}, prioRoot, prioBackfill)
		got := float64(sim.count[prioBackfill]) / float64(sim.count[prioBackfill]+sim.count[prioRoot])
		t.Logf("share %.2f: %d live, %d backfill prompts started: backfill %.3f", share, sim.count[prioRoot], sim.count[prioBackfill], got)
		if math.Abs(got-share) > 0.01 {
			t.Errorf("share %.2f: backfill got %.3f of the prompts", share, got)
		}
	}
}

// The share is of slot time: backfill prompts that hold a slot three times
// as long are started a third as often per unit of share.
func TestSlotsShareIsSlotTime(t *testing.T) {
	sim := newSimSlots(8, 0.25)
	sim.run(3000, 8, [numClasses]float64{0, 1, 3}, prioRoot, prioBackfill)
	frac := backfillFraction(sim.secs)
	prompts := float64(sim.count[prioBackfill]) / float64(sim.count[prioBackfill]+sim.count[prioRoot])
	t.Logf("backfill: %.3f of slot time, %.3f of prompts", frac, prompts)
	if math.Abs(frac-0.25) > 0.02 {
		t.Errorf("backfill got %.3f of slot time, want 0.25", frac)
	}
	// 0.25 of slot time at 3x the hold time is 1/10 of the prompts.
	if math.Abs(prompts-0.1) > 0.02 {
		t.Errorf("backfill got %.3f of the prompts, want about 0.1", prompts)
	}
}

// Work-conserving: a stream waiting alone gets every slot; one that was
// idle banks no credit, so when it comes back the split is the share from
// the start, not a burst.
func TestSlotsWorkConservingNoBurst(t *testing.T) {
	sim := newSimSlots(4, 0.25)
	hold := [numClasses]float64{0, 1, 1}
	sim.run(200, 4, hold, prioBackfill)
	if sim.count[prioRoot] != 0 || sim.count[prioBackfill] < 200 || len(sim.held) != 4 {
		t.Fatalf("backfill alone: %v started, %d held", sim.count, len(sim.held))
	}
	before := sim.count
	sim.run(len(sim.order)+40, 4, hold, prioRoot, prioBackfill)
	live, bf := sim.count[prioRoot]-before[prioRoot], sim.count[prioBackfill]-before[prioBackfill]
	if f := float64(bf) / float64(live+bf); math.Abs(f-0.25) > 0.08 {
		t.Fatalf("after live prompts arrive: %d live, %d backfill of the next grants: backfill %.2f, want 0.25", live, bf, f)
	}
	// And the other way round: live alone, then backfill arrives.
	sim = newSimSlots(4, 0.25)
	sim.run(200, 4, hold, prioRoot)
	before = sim.count
	sim.run(len(sim.order)+40, 4, hold, prioRoot, prioBackfill)
	live, bf = sim.count[prioRoot]-before[prioRoot], sim.count[prioBackfill]-before[prioBackfill]
	if f := float64(bf) / float64(live+bf); math.Abs(f-0.25) > 0.08 {
		t.Fatalf("after backfill prompts arrive: %d live, %d backfill: backfill %.2f, want 0.25", live, bf, f)
	}
}

// Share 0 serves backfill only when no live root waits, share 1 the
// reverse; refinements go first whatever the share.
func TestSlotsShareExtremesAndRefinementsFirst(t *testing.T) {
	hold := [numClasses]float64{1, 1, 1}
	for _, tc := range []struct {
		share float64
		only  int
	}{{0, prioRoot}, {1, prioBackfill}} {
		sim := newSimSlots(2, tc.share)
		sim.run(100, 2, hold, prioRoot, prioBackfill)
		// The first grants may precede the other stream's first waiter.
		if sim.count[tc.only] < 98 {
			t.Errorf("share %v: started %v, want all but the first to class %d", tc.share, sim.count, tc.only)
		}
	}
	sim := newSimSlots(2, 0.5)
	sim.run(100, 2, hold, prioRefinement, prioRoot, prioBackfill)
	if sim.count[prioRefinement] < 98 {
		t.Errorf("refinements backlogged: started %v, want refinements only", sim.count)
	}
	// Live alone at share 1 still gets every slot (work-conserving).
	sim = newSimSlots(3, 1)
	sim.run(30, 3, hold, prioRoot)
	if sim.count[prioRoot] < 30 || len(sim.held) != 3 {
		t.Errorf("live alone at share 1: %v", sim.count)
	}
}

// A waiter that gives up after being granted hands its slot on.
func TestSlotsCancelledGrantHandsOn(t *testing.T) {
	s := newSharedSlots(1, 0.25, time.Now, nil)
	g, err := s.acquire(context.Background(), prioBackfill)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.acquire(ctx, prioRoot); err == nil {
		t.Fatal("acquired a taken slot")
	}
	s.release(g)
	if s.free != 1 || len(s.waiters[prioRoot]) != 0 || s.held != [numClasses]int{} {
		t.Fatalf("after release: free %d, waiters %v, held %v", s.free, s.waiters, s.held)
	}
}

// Under the cap on trees in flight, a freed tree slot goes to the stream
// fairShare picks while both wait: backfill gets its share of new trees.
func TestAdmissionSharesTreesBetweenStreams(t *testing.T) {
	a := newAdmission(1, time.Hour, time.Now, func(int) {}).withShare(0.25)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := a.admit(ctx, "first", streamLive, nil); err != nil {
		t.Fatal(err)
	}
	const perStream = 12
	admitted := make(chan [2]string, 2*perStream)
	for st, name := range []string{"live", "backfill"} {
		for i := range perStream {
			tree := name + "/" + string(rune('a'+i))
			go func() {
				if a.admit(ctx, tree, st, nil) == nil {
					admitted <- [2]string{name, tree}
				}
			}()
		}
	}
	for {
		a.mu.Lock()
		w := a.waiting
		a.mu.Unlock()
		if w == [2]int{perStream, perStream} {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	prev := "first"
	var got []string
	for range 12 {
		a.done(prev)
		r := <-admitted
		got = append(got, r[0])
		prev = r[1]
	}
	n := 0
	for _, s := range got {
		if s == "backfill" {
			n++
		}
	}
	t.Logf("12 trees admitted: %v", got)
	if n != 3 {
		t.Fatalf("%d of 12 trees went to backfill, want 3 (share 0.25)", n)
	}
	cancel()
}
