package generate

import (
	"container/list"
	"context"
	"sync"
	"time"
)

// slots bounds the prompts generated at once; a released slot goes to a
// waiting refinement before any waiting root prompt.
type slots struct {
	mu      sync.Mutex
	free    int
	waiters [2][]chan struct{} // [0] refinements (served first), [1] roots
}

const (
	prioRefinement = 0
	prioRoot       = 1
)

func newSlots(n int) *slots { return &slots{free: n} }

func (s *slots) acquire(ctx context.Context, prio int) error {
	s.mu.Lock()
	if s.free > 0 && (prio == prioRefinement || len(s.waiters[prioRefinement]) == 0) && len(s.waiters[prio]) == 0 {
		s.free--
		s.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	s.waiters[prio] = append(s.waiters[prio], ch)
	s.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, w := range s.waiters[prio] {
			if w == ch {
				s.waiters[prio] = append(s.waiters[prio][:i], s.waiters[prio][i+1:]...)
				return ctx.Err()
			}
		}
		// Granted while giving up: hand the slot on.
		s.releaseLocked()
		return ctx.Err()
	}
}

func (s *slots) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.releaseLocked()
}

func (s *slots) releaseLocked() {
	for p := range s.waiters {
		if len(s.waiters[p]) > 0 {
			ch := s.waiters[p][0]
			s.waiters[p] = s.waiters[p][1:]
			close(ch)
			return
		}
	}
	s.free++
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
}

type inFlight struct {
	tree string
	last time.Time // last prompt
}

func newAdmission(max int, ttl time.Duration, now func() time.Time, onSize func(int)) *admission {
	return &admission{max: max, ttl: ttl, now: now, trees: map[string]*list.Element{}, byLast: list.New(),
		changed: make(chan struct{}), onSize: onSize}
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

// admit blocks until tree may start. A tree already in flight is admitted
// at once (a replayed root prompt takes no second slot). onWait, when not
// nil, is called once if the tree has to wait.
func (a *admission) admit(ctx context.Context, tree string, onWait func()) error {
	for waited := false; ; waited = true {
		a.mu.Lock()
		now := a.now()
		a.expireLocked(now)
		if _, ok := a.trees[tree]; ok || a.max == 0 || len(a.trees) < a.max {
			a.markLocked(tree, now)
			a.mu.Unlock()
			return nil
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
			return ctx.Err()
		}
		t.Stop()
	}
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
