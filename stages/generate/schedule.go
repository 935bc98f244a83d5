package generate

import (
	"container/list"
	"context"
	"sync"
	"time"
)

// Prompt classes, in the order slots serves them: refinements strictly
// first, then live root prompts (topic prompts) and backfill root prompts
// (topic backfill-prompts) shared by weight (fairShare).
const (
	prioRefinement = 0
	prioRoot       = 1
	prioBackfill   = 2
	numClasses     = 3
)

// Root streams of fairShare.
const (
	streamLive     = 0
	streamBackfill = 1
)

// streamOf is the root stream of a class (-1 for refinements).
func streamOf(class int) int {
	switch class {
	case prioRoot:
		return streamLive
	case prioBackfill:
		return streamBackfill
	}
	return -1
}

// className labels a class in metrics.
func className(class int) string {
	switch class {
	case prioRefinement:
		return "refinement"
	case prioBackfill:
		return "backfill"
	}
	return "live"
}

// fairShare is weighted fair sharing between the two root streams: each
// stream's service (a cost: trees for admission) divided by its weight is
// its virtual time, and the stream behind in virtual time goes next when
// both wait. Backfill's weight is share, live's 1-share; share 0 serves
// backfill only when no live root waits, share 1 serves it first. A stream
// that wants nothing banks no credit: its virtual time follows the other's
// (lift), so coming back it gets its share, not a burst. A plain state
// machine: no locks, no clock.
type fairShare struct {
	share float64
	vt    [2]float64
}

func (f *fairShare) weight(s int) float64 {
	if s == streamBackfill {
		return f.share
	}
	return 1 - f.share
}

// pick is the stream to serve when both wait.
func (f *fairShare) pick() int { return f.pickBy(f.vt) }

// pickBy is pick over the given virtual times.
func (f *fairShare) pickBy(vt [2]float64) int {
	switch {
	case f.share <= 0:
		return streamLive
	case f.share >= 1:
		return streamBackfill
	case vt[streamBackfill] < vt[streamLive]:
		return streamBackfill
	}
	return streamLive
}

// charge adds cost to stream s's service.
func (f *fairShare) charge(s int, cost float64) {
	if w := f.weight(s); w > 0 {
		f.vt[s] += cost / w
	}
}

// lift brings idle stream s up to the other stream's virtual time.
func (f *fairShare) lift(s int) {
	if o := f.vt[1-s]; f.vt[s] < o {
		f.vt[s] = o
	}
}

// slots bounds the prompts generated at once. A released slot goes to a
// waiting refinement before any waiting root prompt; between waiting live
// and backfill root prompts it goes by weighted fair sharing of slot time
// (fairShare's rule), so that backfill gets share of the slot-seconds while
// both streams wait, and either stream alone may use every slot
// (work-conserving). A stream's service is the slot-seconds of its released
// grants plus those of its held ones so far, each held grant counted at
// least the stream's average hold time, so that grants made at the same
// instant alternate instead of all going to the stream behind.
type slots struct {
	mu      sync.Mutex
	free    int
	waiters [numClasses][]*slotWaiter
	held    [numClasses]int
	fair    fairShare
	// done is each root stream's released slot-seconds (moved by lift);
	// holding its held grants; avg its average hold time (exponential,
	// 0 = none released yet).
	done    [2]float64
	holding [2]map[*slotGrant]struct{}
	avg     [2]float64
	epoch   time.Time
	now     func() time.Time
	onGrant func(class int)
}

// slotGrant is one held slot; release returns it.
type slotGrant struct {
	class int
	start float64 // seconds since the epoch
}

type slotWaiter struct {
	class int
	ch    chan struct{} // closed when granted
	g     *slotGrant
}

func newSlots(n int) *slots { return newSharedSlots(n, 0, time.Now, nil) }

// newSharedSlots is n slots with backfill's share of them; onGrant, when
// not nil, is called (under the lock: it must not block) for every grant.
func newSharedSlots(n int, share float64, now func() time.Time, onGrant func(class int)) *slots {
	return &slots{free: n, fair: fairShare{share: share}, now: now, epoch: now(), onGrant: onGrant,
		holding: [2]map[*slotGrant]struct{}{{}, {}}}
}

func (s *slots) clock() float64 { return s.now().Sub(s.epoch).Seconds() }

// vtLocked is the streams' virtual times at now: service over weight.
func (s *slots) vtLocked(now float64) [2]float64 {
	var vt [2]float64
	for st := range vt {
		svc := s.done[st]
		for g := range s.holding[st] {
			svc += max(now-g.start, s.avg[st])
		}
		// The held count breaks ties (grants at one instant, nothing
		// released yet): the stream with fewer slots for its weight.
		svc += 1e-9 * float64(len(s.holding[st])+1)
		if w := s.fair.weight(st); w > 0 {
			vt[st] = svc / w
		}
	}
	return vt
}

// liftLocked gives stream st, which waits for nothing, the other's
// virtual time: it banks no credit while it does not want slots.
func (s *slots) liftLocked(st int, now float64) {
	w := s.fair.weight(st)
	if w <= 0 || s.fair.weight(1-st) <= 0 {
		return
	}
	if vt := s.vtLocked(now); vt[st] < vt[1-st] {
		s.done[st] += (vt[1-st] - vt[st]) * w
	}
}

// request queues a request of class and grants what the free slots allow;
// the waiter's channel is closed once it holds a slot.
func (s *slots) request(class int) *slotWaiter {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := &slotWaiter{class: class, ch: make(chan struct{})}
	if st := streamOf(class); st >= 0 && len(s.waiters[class]) == 0 {
		s.liftLocked(st, s.clock()) // it starts waiting: no credit from before
	}
	s.waiters[class] = append(s.waiters[class], w)
	s.dispatchLocked()
	return w
}

// acquire waits for a slot for a prompt of class.
func (s *slots) acquire(ctx context.Context, class int) (*slotGrant, error) {
	w := s.request(class)
	select {
	case <-w.ch:
		return w.g, nil
	case <-ctx.Done():
		s.mu.Lock()
		defer s.mu.Unlock()
		q := s.waiters[class]
		for i, x := range q {
			if x == w {
				s.waiters[class] = append(q[:i], q[i+1:]...)
				return nil, ctx.Err()
			}
		}
		// Granted while giving up: hand the slot on.
		s.releaseLocked(w.g)
		return nil, ctx.Err()
	}
}

// release returns a slot.
func (s *slots) release(g *slotGrant) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.releaseLocked(g)
}

func (s *slots) releaseLocked(g *slotGrant) {
	s.held[g.class]--
	if st := streamOf(g.class); st >= 0 {
		d := max(s.clock()-g.start, 0)
		delete(s.holding[st], g)
		s.done[st] += d
		if s.avg[st] == 0 {
			s.avg[st] = d
		} else {
			s.avg[st] += 0.2 * (d - s.avg[st])
		}
	}
	s.free++
	s.dispatchLocked()
}

func (s *slots) pickLocked(now float64) int {
	if len(s.waiters[prioRefinement]) > 0 {
		return prioRefinement
	}
	live, bf := len(s.waiters[prioRoot]) > 0, len(s.waiters[prioBackfill]) > 0
	switch {
	case live && bf:
		if s.fair.pickBy(s.vtLocked(now)) == streamBackfill {
			return prioBackfill
		}
		return prioRoot
	case live:
		return prioRoot
	case bf:
		return prioBackfill
	}
	return -1
}

func (s *slots) dispatchLocked() {
	for s.free > 0 {
		now := s.clock()
		c := s.pickLocked(now)
		if c < 0 {
			return
		}
		w := s.waiters[c][0]
		s.waiters[c] = s.waiters[c][1:]
		s.free--
		s.held[c]++
		w.g = &slotGrant{class: c, start: now}
		if st := streamOf(c); st >= 0 {
			s.holding[st][w.g] = struct{}{}
		}
		if s.onGrant != nil {
			s.onGrant(c)
		}
		close(w.ch)
	}
}

// admission tracks the trees in flight: started by this process (a root
// prompt or a refinement seen) and not yet completed (a completion seen)
// or expired (no prompt for TreeTTL). Root prompts of new trees wait while
// the cap is reached; refinements and replays of admitted trees never wait.
type admission struct {
	max   int
	ttl   time.Duration
	now   func() time.Time
	mu    sync.Mutex
	trees map[string]*list.Element // tree id → its entry in byLast
	// byLast holds the trees' inFlight entries, least recently prompted
	// first, so that expiry looks only at the trees it expires.
	byLast  *list.List
	changed chan struct{} // closed and replaced when a slot frees
	onSize  func(int)
	// waiting counts the root prompts of new trees waiting, by stream;
	// fair shares the freed tree slots between the streams (one tree
	// each) while both wait.
	waiting [2]int
	fair    fairShare
}

type inFlight struct {
	tree string
	last time.Time // last prompt
}

func newAdmission(max int, ttl time.Duration, now func() time.Time, onSize func(int)) *admission {
	return &admission{max: max, ttl: ttl, now: now, trees: map[string]*list.Element{}, byLast: list.New(),
		changed: make(chan struct{}), onSize: onSize}
}

// withShare sets backfill's share of the tree slots (fairShare).
func (a *admission) withShare(share float64) *admission {
	a.fair.share = share
	return a
}

// markLocked records a prompt of tree at now.
func (a *admission) markLocked(tree string, now time.Time) {
	if e, ok := a.trees[tree]; ok {
		e.Value.(*inFlight).last = now
		a.byLast.MoveToBack(e)
	} else {
		a.trees[tree] = a.byLast.PushBack(&inFlight{tree: tree, last: now})
	}
	a.onSize(len(a.trees))
}

// admit blocks until tree, a root prompt of stream (streamLive or
// streamBackfill), may start. A tree already in flight is admitted at once
// (a replayed root prompt takes no second slot). While the cap holds and
// both streams wait, a freed tree slot goes to the stream fairShare picks.
// onWait, when not nil, is called once if the tree has to wait.
func (a *admission) admit(ctx context.Context, tree string, stream int, onWait func()) error {
	for waited := false; ; waited = true {
		a.mu.Lock()
		now := a.now()
		a.expireLocked(now)
		if _, ok := a.trees[tree]; ok || a.max == 0 || (len(a.trees) < a.max && a.turnLocked(stream)) {
			if waited {
				a.waiting[stream]--
			}
			if !ok {
				a.fair.charge(stream, 1)
				if a.waiting[1-stream] == 0 {
					a.fair.lift(1 - stream)
				}
			}
			a.markLocked(tree, now)
			if a.max > 0 && len(a.trees) < a.max && a.waiting[0]+a.waiting[1] > 0 {
				a.signalLocked() // room left: the other waiters look again
			}
			a.mu.Unlock()
			return nil
		}
		if !waited {
			a.waiting[stream]++
		}
		ch := a.changed
		a.mu.Unlock()
		if !waited && onWait != nil {
			onWait()
		}
		// Wake on a completion, or when the oldest tree may have expired.
		t := time.NewTimer(min(a.ttl, time.Second))
		select {
		case <-ch:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			a.mu.Lock()
			a.waiting[stream]--
			a.mu.Unlock()
			return ctx.Err()
		}
		t.Stop()
	}
}

// turnLocked says whether a new tree of stream may take a free tree slot:
// yes when the other stream has no tree waiting, else as fairShare picks.
func (a *admission) turnLocked(stream int) bool {
	return a.waiting[1-stream] == 0 || a.fair.pick() == stream
}

// touch records activity of a tree (a refinement prompt); a tree unknown to
// this process (after a restart) starts counting without waiting.
func (a *admission) touch(tree string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.markLocked(tree, a.now())
}

// done releases a completed tree's slot; unknown trees are ignored.
func (a *admission) done(tree string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	e, ok := a.trees[tree]
	if !ok {
		return false
	}
	a.byLast.Remove(e)
	delete(a.trees, tree)
	a.onSize(len(a.trees))
	a.signalLocked()
	return true
}

func (a *admission) size() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.trees)
}

func (a *admission) expireLocked(now time.Time) {
	n := len(a.trees)
	// Prompts are marked at non-decreasing times, so the expired trees
	// are a prefix of byLast.
	for e := a.byLast.Front(); e != nil; e = a.byLast.Front() {
		f := e.Value.(*inFlight)
		if now.Sub(f.last) < a.ttl {
			break
		}
		a.byLast.Remove(e)
		delete(a.trees, f.tree)
	}
	if len(a.trees) != n {
		a.onSize(len(a.trees))
		a.signalLocked()
	}
}

func (a *admission) signalLocked() {
	close(a.changed)
	a.changed = make(chan struct{})
}
