package generate

import (
	"math"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/murphy-rl/murphy/topics"
)

// bound is the staleness bound at admission (VERSIONS.md), one shared
// decision of every generate process. A new tree is proposed on the
// admission log (partition 0 of the admissions topic) with the proposer's
// headroom h = min over bounded trainers t of (η_t+1)·k_t − backlog_t
// counted over every record of the log before its read position r; the
// proposal at offset o is granted iff o − r < h: the records between r and
// o, which the proposer could not count, are counted as if all were
// granted. The decision depends on the record and its offset alone, so
// every process (and every restart) reaches the same one. A plain state
// machine fed with records; the stage's admission log (admitlog.go) does
// the I/O.
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
	// readPos is the next offset of the admission log to read: every
	// record before it is counted. logKnown: readPos is set.
	readPos  int64
	logKnown bool
	// flight: trees granted on the admission log, not yet completed.
	flight map[string]flightTree
	// done: trees completed before their grant was read (topics are
	// read independently), so a late grant does not count them.
	done map[string]time.Time
	// landed: trees completed lately, still counted until end offsets
	// asked landGrace after their completion was read: credit writes a
	// completion beside its tree, not after the tree's acknowledgement, so
	// the completion can be read before the tree is in the end offsets.
	landed    map[string]time.Time
	landGrace time.Duration
	// recovering: the trainers' progress, the completions and the
	// admission log written before this process started are not read yet;
	// no tree is proposed until they are.
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
	// Version is the version the trainer trains (its ranks' highest).
	Version int64
	Behind  int64   // credited trees not consumed
	Partial int64   // trees consumed into the current version (at most k-1)
	Backlog int64   // Behind + Partial + trees in flight
	Ahead   float64 // Backlog / TreesPerVersion, in versions
}

// Headroom is how many more trees the trainer's bound lets start.
func (t trainerBound) Headroom() int64 {
	return int64(t.MaxStaleness+1)*int64(max(t.TreesPerVersion, 1)) - t.Backlog
}

func newBound(progressTTL, treeTTL time.Duration, now func() time.Time) *bound {
	return &bound{ttl: progressTTL, treeTTL: treeTTL, now: now,
		progress: map[string]map[int]*topics.TrainerProgress{}, ends: map[int]int64{},
		flight: map[string]flightTree{}, done: map[string]time.Time{}, landed: map[string]time.Time{},
		landGrace: 2 * time.Second, changed: make(chan struct{})}
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
// sent at asked: trees whose completion was read landGrace before then
// are in them.
func (b *bound) setEnds(ends map[int]int64, asked time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ends = ends
	b.endsKnown = true
	for tree, at := range b.landed {
		if !at.Add(b.landGrace).After(asked) {
			delete(b.landed, tree)
		}
	}
	b.signalLocked()
}

// setRecovering says whether the completions written before this process
// started are still being read.
func (b *bound) setRecovering(on bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.recovering = on
	b.signalLocked()
}

// setLogStart is where this process starts reading the admission log:
// records before it are older than the tree TTL (they would have expired).
func (b *bound) setLogStart(offset int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.logKnown || offset > b.readPos {
		b.readPos = offset
	}
	b.logKnown = true
	b.signalLocked()
}

// granted is the decision on the admission record a at offset: an
// unbounded proposal (no headroom) and a record of an older schema
// (no proposal id) always are; a bounded one iff the records between its
// read position and itself fit its headroom.
func granted(offset int64, a *topics.Admission) bool {
	if a.Proposal == "" || a.Headroom == nil {
		return true
	}
	return offset-a.ReadTo < *a.Headroom
}

// observe reads the admission record a at offset (the log is read in
// order) and returns its decision; a granted tree counts in flight from
// when it was admitted.
func (b *bound) observe(offset int64, a *topics.Admission) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	ok := granted(offset, a)
	if ok {
		at := a.AdmittedAt
		if now := b.now(); at.IsZero() || at.After(now) {
			at = now
		}
		b.countLocked(a.TreeID, a.PolicyVersion, at)
	}
	if offset >= b.readPos {
		b.readPos = offset + 1
	}
	b.logKnown = true
	b.signalLocked()
	return ok
}

// skip reads a record of the admission log that is no proposal.
func (b *bound) skip(offset int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if offset >= b.readPos {
		b.readPos = offset + 1
	}
	b.signalLocked()
}

func (b *bound) countLocked(tree string, version int64, at time.Time) {
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

// completed removes tree from the trees in flight; a completion read
// before the tree's grant keeps the grant from counting it.
func (b *bound) completed(tree string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.flight, tree)
	// Counted until the end offsets include its credited record, also when
	// its grant was not read yet (the grant will not count it).
	b.landed[tree] = b.now()
	// The same completion read again (by the recovery and by the consumer
	// group), before or after its grant, must not count the tree again.
	b.done[tree] = b.now()
	b.signalLocked()
}

func (b *bound) expireLocked(now time.Time) {
	for tree, f := range b.flight {
		if now.Sub(f.at) >= b.treeTTL {
			delete(b.flight, tree)
		}
	}
	for _, m := range []map[string]time.Time{b.done, b.landed} {
		for tree, at := range m {
			if now.Sub(at) >= b.treeTTL {
				delete(m, tree)
			}
		}
	}
}

// mergedLocked merges trainer id's fresh bounded ranks: per credited
// partition the furthest consumed and version-start positions.
func (b *bound) mergedLocked(id string, ranks map[int]*topics.TrainerProgress, now time.Time) (tb *trainerBound, consumed, start map[int]int64) {
	consumed, start = map[int]int64{}, map[int]int64{}
	for _, p := range ranks {
		if p.MaxStaleness == nil || now.Sub(p.UpdatedAt) > b.ttl {
			continue
		}
		if tb == nil {
			tb = &trainerBound{Trainer: id, MaxStaleness: *p.MaxStaleness, TreesPerVersion: p.TreesPerVersion, Version: p.PolicyVersion}
		}
		tb.MaxStaleness = min(tb.MaxStaleness, *p.MaxStaleness)
		tb.TreesPerVersion = max(tb.TreesPerVersion, p.TreesPerVersion)
		tb.Version = max(tb.Version, p.PolicyVersion)
		for ps, off := range p.Consumed {
			if part, err := strconv.Atoi(ps); err == nil && off > consumed[part] {
				consumed[part] = off
			}
		}
		for ps, off := range p.VersionStart {
			if part, err := strconv.Atoi(ps); err == nil && off > start[part] {
				start[part] = off
			}
		}
	}
	return tb, consumed, start
}

// standingsLocked are the bounded trainers with fresh progress, by id.
func (b *bound) standingsLocked(now time.Time) []trainerBound {
	var out []trainerBound
	inFlight := int64(len(b.flight) + len(b.landed))
	for id, ranks := range b.progress {
		tb, consumed, start := b.mergedLocked(id, ranks, now)
		if tb == nil {
			continue
		}
		// Every partition counts: one the trainer has not consumed from
		// from its origin (offset 0), one absent from its version's start
		// as started at 0.
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
			if off > start[part] {
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

// Why a tree is not proposed now (proposal.Wait).
const (
	waitNone     = ""
	waitUnknown  = "unknown"  // ends, the log position or the completions are not read yet
	waitVersion  = "version"  // a bounded trainer trains a version newer than the one served
	waitHeadroom = "headroom" // no headroom left
)

// proposal is what the bound says about a new tree: start it at once
// (already granted, or already complete), wait, or propose Record.
type proposal struct {
	Start bool
	// Version is the version a tree already granted started at (Start).
	Version int64
	Wait    string
	Record  *topics.Admission
	// Trainer is the trainer that holds it back (Wait).
	Trainer string
}

// propose decides about tree, to be generated at version served, with
// pending of this process's own proposals not yet read back (they
// occupy headroom in its own view).
func (b *bound) propose(tree string, served int64, pending int) proposal {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	b.expireLocked(now)
	if f, ok := b.flight[tree]; ok {
		return proposal{Start: true, Version: f.version}
	}
	if _, ok := b.done[tree]; ok {
		return proposal{Start: true, Version: served} // a replay of a complete tree: nothing to count
	}
	st := b.standingsLocked(now)
	rec := &topics.Admission{SchemaVersion: topics.SchemaVersion, TreeID: tree, PolicyVersion: served,
		AdmittedAt: now.UTC(), ReadTo: b.readPos}
	if b.recovering || !b.logKnown {
		// The trainers' progress, the completions or the log are not read
		// yet: whether anyone bounds is not known.
		return proposal{Wait: waitUnknown}
	}
	if len(st) == 0 {
		return proposal{Record: rec}
	}
	if !b.endsKnown {
		return proposal{Wait: waitUnknown, Trainer: st[0].Trainer}
	}
	head := int64(math.MaxInt64)
	for _, t := range st {
		if t.Version > served {
			// Trees admitted under t's progress go to its version's model
			// or wait: at an older one they would reach it too stale.
			return proposal{Wait: waitVersion, Trainer: t.Trainer}
		}
		head = min(head, t.Headroom())
	}
	if head-int64(pending) <= 0 {
		for _, t := range st {
			if t.Headroom() == head {
				return proposal{Wait: waitHeadroom, Trainer: t.Trainer}
			}
		}
	}
	rec.Headroom = &head
	return proposal{Record: rec}
}

// position is the next offset of the admission log to read.
func (b *bound) position() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.readPos
}

// waitChan is closed at the bound's next change.
func (b *bound) waitChan() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.changed
}

// isGranted says whether tree is counted in flight.
func (b *bound) isGranted(tree string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.flight[tree]
	return ok
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

// versionsInFlight are the distinct versions of the trees in flight.
func (b *bound) versionsInFlight() map[int64]bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[int64]bool{}
	for _, f := range b.flight {
		out[f.version] = true
	}
	return out
}
