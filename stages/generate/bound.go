package generate

import (
	"context"
	"math"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/murphy-rl/murphy/topics"
)

// bound is the staleness bound at admission (VERSIONS.md): a new tree
// starts only while, for every bounded trainer t with fresh progress,
// backlog_t + 1 <= (η_t + 1)·k_t, where backlog_t is the credited trees t
// has not consumed, those it consumed since its current version began (at
// most k_t-1), and the trees in flight of every generate process. A
// plain state machine fed with records; wait is its only blocking call.
type bound struct {
	mu  sync.Mutex
	ttl time.Duration // progress older than this does not bound
	// treeTTL expires trees in flight whose completion was never seen.
	treeTTL time.Duration
	now     func() time.Time
	// progress: trainer → rank → latest record.
	progress map[string]map[int]*topics.TrainerProgress
	// ends: credited partition → high watermark; known once polled.
	ends      map[int]int64
	endsKnown bool
	// flight: trees admitted by any generate process, not yet completed.
	flight map[string]flightTree
	// done: trees completed before their admission was read (topics are
	// read independently), so a late admission does not count them.
	done map[string]time.Time
	// landed: trees completed since the last end offsets were read, still
	// counted (their credited record may not be in those offsets yet).
	landed map[string]time.Time
	// recovering: the trees in flight before this process started are not
	// counted yet (recoverInFlight); no tree starts under a bound until they are.
	recovering bool
	changed    chan struct{}
}

type flightTree struct {
	version int64
	at      time.Time
}

// trainerBound is one bounded trainer's standing.
type trainerBound struct {
	Trainer         string
	MaxStaleness    int
	TreesPerVersion int
	Behind          int64   // credited trees not consumed
	Partial         int64   // trees consumed into the current version (at most k-1)
	Backlog         int64   // Behind + Partial + trees in flight
	Ahead           float64 // Backlog / TreesPerVersion, in versions
}

func newBound(progressTTL, treeTTL time.Duration, now func() time.Time) *bound {
	return &bound{ttl: progressTTL, treeTTL: treeTTL, now: now,
		progress: map[string]map[int]*topics.TrainerProgress{}, ends: map[int]int64{},
		flight: map[string]flightTree{}, done: map[string]time.Time{}, landed: map[string]time.Time{},
		changed: make(chan struct{})}
}

func (b *bound) signalLocked() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// setProgress records a trainer rank's progress (a newer one replaces it).
func (b *bound) setProgress(p *topics.TrainerProgress) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ranks := b.progress[p.TrainerID]
	if ranks == nil {
		ranks = map[int]*topics.TrainerProgress{}
		b.progress[p.TrainerID] = ranks
	}
	if old := ranks[p.Rank]; old != nil && old.UpdatedAt.After(p.UpdatedAt) {
		return
	}
	ranks[p.Rank] = p
	b.signalLocked()
}

// setEnds records the credited topic's high watermarks, read by a request
// sent at asked: trees completed before then are in them (credit writes a
// tree's completion behind the tree).
func (b *bound) setEnds(ends map[int]int64, asked time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ends = ends
	b.endsKnown = true
	for tree, at := range b.landed {
		if !at.After(asked) {
			delete(b.landed, tree)
		}
	}
	b.signalLocked()
}

// admitted counts tree (admitted by some process at version) in flight.
func (b *bound) admitted(tree string, version int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.admittedLocked(tree, version)
}

func (b *bound) admittedLocked(tree string, version int64) {
	b.admittedAtLocked(tree, version, b.now())
}

// admittedAt counts tree in flight as admitted at at (a recovered
// admission: it expires a tree TTL after it was admitted).
func (b *bound) admittedAt(tree string, version int64, at time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if now := b.now(); at.IsZero() || at.After(now) {
		at = now
	}
	b.admittedAtLocked(tree, version, at)
}

// setRecovering says whether the trees in flight before this process
// started are still being counted.
func (b *bound) setRecovering(on bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.recovering = on
	b.signalLocked()
}

func (b *bound) admittedAtLocked(tree string, version int64, at time.Time) {
	if _, ok := b.done[tree]; ok {
		return
	}
	if f, ok := b.flight[tree]; ok {
		if version > f.version {
			f.version = version
			b.flight[tree] = f
		}
		return
	}
	b.flight[tree] = flightTree{version: version, at: at}
}

// completed removes tree from the trees in flight.
func (b *bound) completed(tree string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.flight[tree]; ok {
		delete(b.flight, tree)
		b.landed[tree] = b.now()
	} else {
		b.done[tree] = b.now()
	}
	b.signalLocked()
}

func (b *bound) expireLocked(now time.Time) {
	for tree, f := range b.flight {
		if now.Sub(f.at) >= b.treeTTL {
			delete(b.flight, tree)
		}
	}
	for tree, at := range b.done {
		if now.Sub(at) >= b.treeTTL {
			delete(b.done, tree)
		}
	}
	for tree, at := range b.landed {
		if now.Sub(at) >= b.treeTTL {
			delete(b.landed, tree)
		}
	}
}

// standingsLocked are the bounded trainers with fresh progress, by id.
func (b *bound) standingsLocked(now time.Time) []trainerBound {
	var out []trainerBound
	inFlight := int64(len(b.flight) + len(b.landed))
	for id, ranks := range b.progress {
		var tb *trainerBound
		consumed, start, hasStart := map[int]int64{}, map[int]int64{}, map[int]bool{}
		for _, p := range ranks {
			if p.MaxStaleness == nil || now.Sub(p.UpdatedAt) > b.ttl {
				continue
			}
			if tb == nil {
				tb = &trainerBound{Trainer: id, MaxStaleness: *p.MaxStaleness, TreesPerVersion: p.TreesPerVersion}
			}
			tb.MaxStaleness = min(tb.MaxStaleness, *p.MaxStaleness)
			tb.TreesPerVersion = max(tb.TreesPerVersion, p.TreesPerVersion)
			for ps, off := range p.Consumed {
				part, err := strconv.Atoi(ps)
				if err == nil && off > consumed[part] {
					consumed[part] = off
				}
			}
			for ps, off := range p.VersionStart {
				part, err := strconv.Atoi(ps)
				if err == nil && (!hasStart[part] || off > start[part]) {
					start[part], hasStart[part] = off, true
				}
			}
		}
		if tb == nil {
			continue
		}
		for part, end := range b.ends {
			if d := end - consumed[part]; d > 0 {
				tb.Behind += d
			}
		}
		// AReaL's rule counts from the start of the trainer's version: the
		// trees it consumed into its current version count too, up to k-1
		// (a step that consumed past k, whole batches, must not stop
		// generation before the trainer's next version).
		var partial int64
		for part, off := range consumed {
			if hasStart[part] && off > start[part] {
				partial += off - start[part]
			}
		}
		tb.Partial = min(partial, int64(max(tb.TreesPerVersion, 1)-1))
		tb.Backlog = tb.Behind + tb.Partial + inFlight
		tb.Ahead = float64(tb.Backlog) / float64(max(tb.TreesPerVersion, 1))
		out = append(out, *tb)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Trainer < out[j].Trainer })
	return out
}

// standings is standingsLocked under the lock.
func (b *bound) standings() []trainerBound {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	b.expireLocked(now)
	return b.standingsLocked(now)
}

// allowLocked says whether one more tree may start, and else which trainer
// holds it back.
func (b *bound) allowLocked(now time.Time) (bool, string) {
	st := b.standingsLocked(now)
	if len(st) > 0 && (!b.endsKnown || b.recovering) {
		return false, st[0].Trainer
	}
	for _, t := range st {
		if t.Backlog+1 > int64(t.MaxStaleness+1)*int64(max(t.TreesPerVersion, 1)) {
			return false, t.Trainer
		}
	}
	return true, ""
}

// wait blocks until tree may start under the bound, then counts it in
// flight at version(). A tree already in flight starts at once. onWait is
// called once if it has to wait.
func (b *bound) wait(ctx context.Context, tree string, version func() int64, onWait func()) error {
	for waited := false; ; waited = true {
		b.mu.Lock()
		now := b.now()
		b.expireLocked(now)
		_, known := b.flight[tree]
		if ok, _ := b.allowLocked(now); ok || known {
			b.admittedLocked(tree, version())
			b.mu.Unlock()
			return nil
		}
		ch := b.changed
		b.mu.Unlock()
		if !waited && onWait != nil {
			onWait()
		}
		t := time.NewTimer(time.Second)
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

// inFlight is the number of trees in flight and their distinct versions
// (and the oldest version among them, math.MaxInt64 when none).
func (b *bound) inFlight() (trees, versions int, oldest int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	seen := map[int64]struct{}{}
	oldest = math.MaxInt64
	for _, f := range b.flight {
		seen[f.version] = struct{}{}
		oldest = min(oldest, f.version)
	}
	return len(b.flight), len(seen), oldest
}
