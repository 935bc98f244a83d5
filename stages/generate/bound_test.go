package generate

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/topics"
)

// testLog is an admission log shared by bounds in one test: append
// writes a record at the next offset; each bound reads it on its own.
type testLog struct{ recs []*topics.Admission }

func (l *testLog) append(a *topics.Admission) int64 {
	l.recs = append(l.recs, a)
	return int64(len(l.recs) - 1)
}

// readAll feeds b every record from its read position on.
func (l *testLog) readAll(b *bound) {
	for off := b.position(); off < int64(len(l.recs)); off++ {
		b.observe(off, l.recs[off])
	}
}

// admitNow proposes tree on b and, when it may, writes the proposal and
// reads the log back: whether the tree was granted (or already was).
func (l *testLog) admitNow(b *bound, tree string, served int64) bool {
	l.readAll(b)
	pr := b.propose(tree, served, 0)
	if pr.Start {
		return true
	}
	if pr.Record == nil {
		return false
	}
	pr.Record.Proposal = tree
	off := l.append(pr.Record)
	l.readAll(b)
	return granted(off, pr.Record)
}

func bounded(eta, k int, consumed map[string]int64, now time.Time) *topics.TrainerProgress {
	return &topics.TrainerProgress{TrainerID: "a", MaxStaleness: intp(eta), TreesPerVersion: k, Consumed: consumed, UpdatedAt: now}
}

// TestBoundStateMachine checks the admission rule backlog+1 <= (η+1)·k on
// positions of the credited topic, merged ranks, stale progress and trees
// in flight of other processes.
func TestBoundStateMachine(t *testing.T) {
	now := time.Unix(1000, 0)
	b := newBound(time.Minute, time.Hour, func() time.Time { return now })
	b.landGrace = 0 // end offsets here are read after the credited records (TestBoundLandedGrace)
	log := &testLog{}
	b.setLogStart(0)
	if !log.admitNow(b, "free", 0) {
		t.Fatal("no trainer: held back")
	}
	b.completed("free")
	// Trainer a: η=1, 2 trees per version → at most 4 trees of backlog.
	b.setProgress(bounded(1, 2, map[string]int64{"0": 0}, now))
	if log.admitNow(b, "t-early", 0) {
		t.Fatal("bounded trainer, ends unknown: admitted")
	}
	b.setEnds(map[int]int64{0: 0, 1: 0}, now)
	for i := range 4 {
		if !log.admitNow(b, fmt.Sprint("t", i), 1) {
			t.Fatalf("tree %d held back", i)
		}
	}
	if log.admitNow(b, "t4", 1) {
		t.Fatal("5th tree admitted with η=1, k=2")
	}
	// Two trees complete (credited on partitions 0 and 1): backlog still 4.
	b.completed("t0")
	b.completed("t1")
	b.setEnds(map[int]int64{0: 1, 1: 1}, now)
	if log.admitNow(b, "t4", 1) {
		t.Fatal("credited but unconsumed trees are backlog")
	}
	// Rank 1 of trainer a consumed partition 1; rank 0 partition 0.
	p1 := bounded(1, 2, map[string]int64{"1": 1}, now)
	p1.Rank = 1
	p1.VersionStart = map[string]int64{"1": 1}
	b.setProgress(p1)
	if st := b.standings(); len(st) != 1 || st[0].Backlog != 3 || st[0].Behind != 1 || st[0].Ahead != 1.5 {
		t.Fatalf("standings %+v", st)
	}
	p0 := bounded(1, 2, map[string]int64{"0": 0}, now)
	if !log.admitNow(b, "t4", 1) {
		t.Fatalf("after consumption: held back: %+v", b.standings())
	}
	// Trainer b: η=0, k=1, consumed everything: the stricter bound wins.
	b.setProgress(&topics.TrainerProgress{TrainerID: "b", MaxStaleness: intp(0), TreesPerVersion: 1,
		Consumed: map[string]int64{"0": 1, "1": 1}, UpdatedAt: now})
	if log.admitNow(b, "t5", 1) {
		t.Fatal("trainer b (η=0) has 3 trees in flight: admitted")
	}
	// Trainer b goes silent: after the TTL only a bounds.
	now = now.Add(2 * time.Minute)
	p0.UpdatedAt, p1.UpdatedAt = now, now
	b.setProgress(p0)
	b.setProgress(p1)
	if len(b.standings()) != 1 {
		t.Fatalf("stale trainer b still bounds: %+v", b.standings())
	}
	// Trainer b reports again: it binds again at once.
	b.setProgress(&topics.TrainerProgress{TrainerID: "b", MaxStaleness: intp(0), TreesPerVersion: 1,
		Consumed: map[string]int64{"0": 1, "1": 1}, UpdatedAt: now})
	if len(b.standings()) != 2 || log.admitNow(b, "t5", 1) {
		t.Fatalf("trainer b back: %+v", b.standings())
	}
	now = now.Add(2 * time.Minute)
	p0.UpdatedAt, p1.UpdatedAt = now, now
	b.setProgress(p0)
	b.setProgress(p1)
	// An unbounded trainer never holds back.
	b.setProgress(&topics.TrainerProgress{TrainerID: "c", UpdatedAt: now})
	if len(b.standings()) != 1 {
		t.Fatal("unbounded trainer counted")
	}
}

// TestBoundSharedDecision: two processes that propose from the same read
// position for the last tree of headroom make one decision between them:
// the second record on the log is voided, in both processes' reading.
func TestBoundSharedDecision(t *testing.T) {
	now := time.Unix(1000, 0)
	log := &testLog{}
	var bs [2]*bound
	for i := range bs {
		bs[i] = newBound(time.Minute, time.Hour, func() time.Time { return now })
		bs[i].setLogStart(0)
		bs[i].setProgress(bounded(0, 1, map[string]int64{}, now)) // η=0, k=1: one tree
		bs[i].setEnds(map[int]int64{0: 0}, now)
	}
	p0 := bs[0].propose("x", 0, 0)
	p1 := bs[1].propose("y", 0, 0)
	if p0.Record == nil || p1.Record == nil {
		t.Fatalf("proposals %+v %+v", p0, p1)
	}
	p0.Record.Proposal, p1.Record.Proposal = "x", "y"
	o0, o1 := log.append(p0.Record), log.append(p1.Record)
	if !granted(o0, p0.Record) || granted(o1, p1.Record) {
		t.Fatal("the first record on the log must be granted, the second voided")
	}
	for _, b := range bs {
		log.readAll(b)
		if !b.isGranted("x") || b.isGranted("y") {
			t.Fatal("the processes read different decisions")
		}
		if pr := b.propose("y", 0, 0); pr.Record != nil {
			t.Fatalf("no headroom left, proposed %+v", pr)
		}
	}
	// A process restarted later reads the same decisions from the log.
	late := newBound(time.Minute, time.Hour, func() time.Time { return now })
	late.setLogStart(0)
	log.readAll(late)
	if !late.isGranted("x") || late.isGranted("y") {
		t.Fatal("a restarted process reads other decisions")
	}
}

// TestBoundVersionGate: a tree is proposed only at a version at least the
// one every bounded trainer trains (version 0 included), so that trees the
// trainer's progress frees reach it at most η versions stale.
func TestBoundVersionGate(t *testing.T) {
	now := time.Unix(1000, 0)
	b := newBound(time.Minute, time.Hour, func() time.Time { return now })
	b.setLogStart(0)
	b.setEnds(map[int]int64{0: 0}, now)
	p := bounded(1, 4, map[string]int64{}, now)
	p.PolicyVersion = 2
	b.setProgress(p)
	if pr := b.propose("t", 1, 0); pr.Wait != waitVersion {
		t.Fatalf("served 1, trainer at 2: %+v", pr)
	}
	if pr := b.propose("t", 2, 0); pr.Record == nil || pr.Record.PolicyVersion != 2 {
		t.Fatalf("served 2: %+v", pr)
	}
	p.PolicyVersion = 0
	if pr := b.propose("t", 0, 0); pr.Record == nil {
		t.Fatalf("version 0 served, trainer at 0: %+v", pr)
	}
}

// TestBoundCountsFromVersionStart: a trainer partway through its version
// (k=4, η=1, 2 trees consumed since the version began) leaves room for 6
// more trees, not 8: the 8th would reach it η+1 versions later.
func TestBoundCountsFromVersionStart(t *testing.T) {
	now := time.Unix(1000, 0)
	admit := func(p *topics.TrainerProgress) int {
		b := newBound(time.Minute, time.Hour, func() time.Time { return now })
		b.setLogStart(0)
		b.setProgress(p)
		b.setEnds(map[int]int64{0: 2, 1: 0}, now)
		log := &testLog{}
		n := 0
		for ; n < 100 && log.admitNow(b, fmt.Sprint("t", n), 0); n++ {
		}
		return n
	}
	p := bounded(1, 4, map[string]int64{"0": 2}, now)
	p.VersionStart = map[string]int64{"0": 0}
	if n := admit(p); n != 6 {
		t.Errorf("from the version's start: %d trees admitted, want 6", n)
	}
	// Absent from version_start (or no version_start at all): the
	// partition counts from 0, as when its version began.
	p.VersionStart = map[string]int64{"1": 0}
	if n := admit(p); n != 6 {
		t.Errorf("partition absent from version_start: %d trees admitted, want 6", n)
	}
	// A step that consumed whole batches past k (6 trees into a version of
	// 4) counts k-1 of them: generation goes on until the next version.
	p.Consumed, p.VersionStart = map[string]int64{"0": 6}, map[string]int64{"0": 0}
	if n := admit(p); n != 5 {
		t.Errorf("past k into the version: %d trees admitted, want 5", n)
	}
}

// TestBoundCompletionReadTwice: a completion read by the recovery and
// again by the consumer group, before or after its tree's grant, leaves
// the tree out of the count (it once stalled a slot until the tree TTL).
func TestBoundCompletionReadTwice(t *testing.T) {
	now := time.Unix(1000, 0)
	for _, order := range []string{"grant,done,done", "done,grant,done", "done,done,grant"} {
		b := newBound(time.Minute, time.Hour, func() time.Time { return now })
		b.setLogStart(0)
		a := &topics.Admission{TreeID: "t", Proposal: "p", Headroom: new(int64)}
		*a.Headroom = 10
		off := int64(0)
		for step := range splitComma(order) {
			if step == "grant" {
				b.observe(off, a)
				off++
			} else {
				b.completed("t")
			}
		}
		if n, _, _ := b.inFlight(); n != 0 {
			t.Errorf("%s: %d trees in flight, want 0", order, n)
		}
	}
}

func splitComma(s string) func(func(string) bool) {
	return func(yield func(string) bool) {
		start := 0
		for i := 0; i <= len(s); i++ {
			if i == len(s) || s[i] == ',' {
				if !yield(s[start:i]) {
					return
				}
				start = i + 1
			}
		}
	}
}

// TestBoundRecoversFromTheLog: a restarted process counts what the log
// granted within the tree TTL and not completed, and nothing it voided.
func TestBoundRecoversFromTheLog(t *testing.T) {
	now := time.Unix(10000, 0)
	b := newBound(time.Minute, time.Hour, func() time.Time { return now })
	b.setProgress(bounded(1, 2, map[string]int64{"0": 0}, now))
	b.setEnds(map[int]int64{0: 0}, now)
	b.setRecovering(true)
	b.setLogStart(5)
	if pr := b.propose("n", 0, 0); pr.Wait != waitUnknown {
		t.Fatalf("proposed while recovering: %+v", pr)
	}
	b.completed("done")
	h := func(n int64) *int64 { return &n }
	recs := []*topics.Admission{
		{TreeID: "done", Proposal: "1", Headroom: h(3), ReadTo: 5, AdmittedAt: now.Add(-time.Minute)},
		{TreeID: "old", Proposal: "2", Headroom: h(3), ReadTo: 6, AdmittedAt: now.Add(-2 * time.Hour)},
		{TreeID: "a", Proposal: "3", Headroom: h(3), ReadTo: 7, AdmittedAt: now.Add(-time.Minute)},
		{TreeID: "void", Proposal: "4", Headroom: h(1), ReadTo: 6},
		{TreeID: "b", Proposal: "5", Headroom: h(2), ReadTo: 8},
	}
	for i, a := range recs {
		b.observe(int64(5+i), a)
	}
	b.setRecovering(false)
	b.setEnds(map[int]int64{0: 1}, now.Add(3*time.Second)) // "done" is credited
	p := bounded(1, 2, map[string]int64{"0": 1}, now)
	p.VersionStart = map[string]int64{"0": 1}
	b.setProgress(p)
	if trees, _, _ := b.inFlight(); trees != 3 {
		t.Fatalf("%d trees in flight, want 3 (old, a, b) before expiry", trees)
	}
	if st := b.standings(); len(st) != 1 || st[0].Backlog != 2 { // expires "old"
		t.Fatalf("standings %+v, want a backlog of 2 (a, b)", st)
	}
	now = now.Add(59*time.Minute + 30*time.Second)
	b.standings()
	if trees, _, _ := b.inFlight(); trees != 1 {
		t.Fatalf("%d trees in flight a tree TTL after a's admission, want 1 (b)", trees)
	}
}

// TestBoundProperty runs the admission core through random interleavings
// of N generate processes (proposals, reading the log late, restarts that
// recover from the log), trees completing out of order, end offsets
// polled late, trainers consuming, publishing progress and versions late,
// a trainer restarting from its last progress record, and one going away
// past its TTL and coming back. At every step the trees admitted and not
// consumed by a bounded trainer stay within (η+1)·k; once the trainer
// stopped bounding, every admission made while it bounds again keeps its
// count within the bound; and in the end every tree is admitted (no
// stall).
func TestBoundProperty(t *testing.T) {
	runs := 300
	if testing.Short() {
		runs = 40
	}
	for seed := range runs {
		w := newBoundWorld(t, uint64(seed))
		w.run(400)
		w.drain()
	}
}

// boundWorld is the model TestBoundProperty checks the bound against.
type boundWorld struct {
	t    *testing.T
	seed uint64
	rng  *rand.Rand
	now  time.Time
	log  testLog
	// reps are the generate processes; queue their trees not admitted.
	reps []*boundReplica
	// truth: granted trees, their stamps; credited trees by partition in
	// credit order; trees in flight (granted, not credited).
	granted  map[string]bool
	inFlight []string
	credited [][]string
	trainers []*boundTrainer
	gone     bool // trainer 0 stopped reporting past its TTL
	everGone bool
	trees    int
}

type boundReplica struct {
	b       *bound
	queue   []string
	pending []int64 // offsets of own proposals not read back
	// proposing: the head of queue has a proposal not read back.
	proposing bool
	// inbox: completions and progress records not delivered yet.
	completions []string
	progress    []*topics.TrainerProgress
	recoverTo   int64
}

type boundTrainer struct {
	id       string
	eta, k   int
	consumed []int64 // per partition: true position
	start    []int64 // positions when its version began
	version  int64
	last     *topics.TrainerProgress // its last published record
}

const worldPartitions = 3

func newBoundWorld(t *testing.T, seed uint64) *boundWorld {
	rng := rand.New(rand.NewPCG(seed, 31))
	w := &boundWorld{t: t, seed: seed, rng: rng, now: time.Unix(100000, 0), granted: map[string]bool{},
		credited: make([][]string, worldPartitions)}
	for i := range 1 + rng.IntN(2) {
		tr := &boundTrainer{id: "tr" + strconv.Itoa(i), eta: rng.IntN(3), k: 1 + rng.IntN(4),
			consumed: make([]int64, worldPartitions), start: make([]int64, worldPartitions)}
		w.trainers = append(w.trainers, tr)
	}
	w.trees = 30 + rng.IntN(40)
	n := 1 + rng.IntN(4)
	for i := range n {
		w.reps = append(w.reps, w.newReplica())
		_ = i
	}
	for i := range w.trees {
		r := w.reps[rng.IntN(n)]
		r.queue = append(r.queue, "tree"+strconv.Itoa(i))
	}
	for _, tr := range w.trainers {
		w.publish(tr)
	}
	return w
}

// recovered ends r's recovery once it read the trainers' progress, the
// completions and the log as they were when it started.
func (w *boundWorld) recovered(r *boundReplica) {
	if r.b.position() >= r.recoverTo && len(r.completions) == 0 && len(r.progress) == 0 {
		r.b.setRecovering(false)
	}
}

func (w *boundWorld) newReplica() *boundReplica {
	b := newBound(time.Minute, time.Hour, func() time.Time { return w.now })
	r := &boundReplica{b: b, recoverTo: int64(len(w.log.recs))}
	// Recovery: the completions so far, then the log from the start of
	// the tree-TTL window (the whole log here).
	b.setRecovering(true)
	b.setLogStart(0)
	for _, part := range w.credited {
		r.completions = append(r.completions, part...)
	}
	for _, tr := range w.trainers {
		if tr.last != nil {
			r.progress = append(r.progress, tr.last)
		}
	}
	return r
}

// publish writes trainer tr's progress as it is now (delivered later).
func (w *boundWorld) publish(tr *boundTrainer) {
	p := &topics.TrainerProgress{TrainerID: tr.id, MaxStaleness: intp(tr.eta), TreesPerVersion: tr.k,
		PolicyVersion: tr.version, Consumed: map[string]int64{}, VersionStart: map[string]int64{}, UpdatedAt: w.now}
	for i := range worldPartitions {
		if tr.consumed[i] > 0 {
			p.Consumed[strconv.Itoa(i)] = tr.consumed[i]
		}
		if tr.start[i] > 0 {
			p.VersionStart[strconv.Itoa(i)] = tr.start[i]
		}
	}
	tr.last = p
	for _, r := range w.reps {
		r.progress = append(r.progress, p)
	}
}

func (w *boundWorld) served() int64 {
	v := int64(0)
	for _, tr := range w.trainers {
		v = max(v, tr.version)
	}
	return v
}

// step does one random thing.
func (w *boundWorld) step() {
	r := w.reps[w.rng.IntN(len(w.reps))]
	switch x := w.rng.IntN(100); {
	case x < 20:
		w.propose(r)
	case x < 35:
		w.readSome(r)
	case x < 45:
		w.credit()
	case x < 55:
		w.deliver(r)
	case x < 62:
		r.b.setEnds(w.ends(), w.now)
	case x < 75:
		w.consume()
	case x < 85:
		if tr := w.trainers[w.rng.IntN(len(w.trainers))]; !(w.gone && tr == w.trainers[0]) {
			w.publish(tr)
		}
	case x < 87:
		w.restartReplica(r)
	case x < 88:
		// A trainer restarts: it resumes from its last published record
		// (and its group's committed offsets: here, what it consumed).
		tr := w.trainers[w.rng.IntN(len(w.trainers))]
		if !(w.gone && tr == w.trainers[0]) {
			w.publish(tr)
		}
	case x < 89 && !w.gone && w.rng.IntN(4) == 0:
		// Trainer 0 stops reporting, long enough for its bound to lapse
		// (every trainer's view lapses meanwhile, until it reports again).
		w.gone = true
		w.now = w.now.Add(2 * time.Minute)
	case x < 90 && w.gone:
		w.gone = false
		w.publish(w.trainers[0])
	}
	w.now = w.now.Add(time.Duration(w.rng.IntN(300)) * time.Millisecond)
	w.check()
}

func (w *boundWorld) run(steps int) {
	for range steps {
		w.step()
	}
}

func (w *boundWorld) ends() map[int]int64 {
	e := map[int]int64{}
	for i, p := range w.credited {
		e[i] = int64(len(p))
	}
	return e
}

// propose: replica r proposes its next waiting tree if its bound lets it.
func (w *boundWorld) propose(r *boundReplica) {
	if len(r.queue) == 0 {
		return
	}
	if r.proposing {
		return
	}
	tree := r.queue[0]
	st := r.b.standings()
	pr := r.b.propose(tree, w.served(), len(r.pending))
	switch {
	case pr.Start:
		r.queue = r.queue[1:]
	case pr.Record != nil:
		pr.Record.Proposal = fmt.Sprintf("%s@%d", tree, len(w.log.recs))
		off := w.log.append(pr.Record)
		r.pending = append(r.pending, off)
		r.proposing = true
		if granted(off, pr.Record) && !w.granted[tree] {
			w.granted[tree] = true
			w.inFlight = append(w.inFlight, tree)
			w.checkGrant(tree, st)
		}
	}
}

// readSome: r reads a few records of the log; its own decisions come back.
func (w *boundWorld) readSome(r *boundReplica) {
	for n := 1 + w.rng.IntN(4); n > 0 && r.b.position() < int64(len(w.log.recs)); n-- {
		off := r.b.position()
		ok := r.b.observe(off, w.log.recs[off])
		for i, p := range r.pending {
			if p == off {
				r.pending = append(r.pending[:i], r.pending[i+1:]...)
				r.proposing = false
				if ok && len(r.queue) > 0 && r.queue[0] == w.log.recs[off].TreeID {
					r.queue = r.queue[1:]
				}
				break
			}
		}
	}
	w.recovered(r)
}

// credit: a random tree in flight completes (out of order): credited on a
// partition, then its completion goes to every process.
func (w *boundWorld) credit() {
	if len(w.inFlight) == 0 {
		return
	}
	i := w.rng.IntN(len(w.inFlight))
	tree := w.inFlight[i]
	w.inFlight = append(w.inFlight[:i], w.inFlight[i+1:]...)
	p := w.rng.IntN(worldPartitions)
	w.credited[p] = append(w.credited[p], tree)
	w.now = w.now.Add(time.Millisecond)
	for _, r := range w.reps {
		r.completions = append(r.completions, tree)
		if w.rng.IntN(5) == 0 {
			r.completions = append(r.completions, tree) // read twice
		}
	}
}

// deliver: r gets some of its completions and progress records.
func (w *boundWorld) deliver(r *boundReplica) {
	for n := w.rng.IntN(4); n > 0 && len(r.completions) > 0; n-- {
		r.b.completed(r.completions[0])
		r.completions = r.completions[1:]
	}
	if len(r.progress) > 0 {
		n := 1 + w.rng.IntN(len(r.progress))
		for _, p := range r.progress[:n] {
			r.b.setProgress(p)
		}
		r.progress = r.progress[n:]
	}
	w.recovered(r)
}

// consume: a trainer consumes the next credited tree of a partition;
// after k trees since its version began it moves to its next version.
func (w *boundWorld) consume() {
	tr := w.trainers[w.rng.IntN(len(w.trainers))]
	p := w.rng.IntN(worldPartitions)
	if tr.consumed[p] >= int64(len(w.credited[p])) {
		return
	}
	if tr.consumeOne(p) && !(w.gone && tr == w.trainers[0]) {
		w.publish(tr) // a trainer reports as soon as it publishes a version
	}
}

// consumeOne consumes the next tree of partition p and reports whether the
// trainer moved to its next version (k trees since its version began).
func (tr *boundTrainer) consumeOne(p int) bool {
	tr.consumed[p]++
	var since int64
	for i := range worldPartitions {
		since += tr.consumed[i] - tr.start[i]
	}
	if since < int64(tr.k) {
		return false
	}
	tr.version++
	copy(tr.start, tr.consumed)
	return true
}

func (w *boundWorld) restartReplica(r *boundReplica) {
	for i, x := range w.reps {
		if x == r {
			n := w.newReplica()
			n.queue = r.queue // its prompts are redelivered
			w.reps[i] = n
		}
	}
}

// backlog is what trainer tr has not consumed of the admitted trees.
func (w *boundWorld) backlog(tr *boundTrainer) int64 {
	var consumed int64
	for _, c := range tr.consumed {
		consumed += c
	}
	return int64(len(w.granted)) - consumed
}

func (w *boundWorld) fail(format string, args ...any) {
	w.t.Helper()
	w.t.Fatalf("seed %d: "+format, append([]any{w.seed}, args...)...)
}

// checkGrant: a grant made while a trainer bounds in the proposer's view
// (st) keeps its count within the bound (the grant counted; consumption
// only runs ahead of reports).
func (w *boundWorld) checkGrant(tree string, st []trainerBound) {
	for _, tr := range w.trainers {
		bounding := false
		for _, s := range st {
			bounding = bounding || s.Trainer == tr.id
		}
		if !bounding {
			continue
		}
		if bl := w.backlog(tr); bl > int64((tr.eta+1)*tr.k) {
			w.fail("granting %s: %s has %d trees admitted and not consumed, bound (%d+1)*%d", tree, tr.id, bl, tr.eta, tr.k)
		}
	}
}

// check: while no trainer ever stopped bounding, every step is within
// every bound.
func (w *boundWorld) check() {
	if w.gone {
		w.everGone = true
	}
	if w.everGone {
		return
	}
	for _, tr := range w.trainers {
		if bl := w.backlog(tr); bl > int64((tr.eta+1)*tr.k) {
			w.fail("%s has %d trees admitted and not consumed, bound (%d+1)*%d", tr.id, bl, tr.eta, tr.k)
		}
	}
}

// drain delivers everything, round after round, until every tree is
// admitted: a round without any new admission fails (a stall).
func (w *boundWorld) drain() {
	if w.gone {
		w.gone = false
	}
	for idle := 0; ; {
		before := len(w.granted)
		for _, tr := range w.trainers {
			w.publish(tr)
		}
		for _, r := range w.reps {
			for r.b.position() < int64(len(w.log.recs)) || len(r.completions) > 0 || len(r.progress) > 0 {
				w.readSome(r)
				w.deliver(r)
			}
			r.b.setEnds(w.ends(), w.now)
			for range 3 {
				w.propose(r)
				w.readSome(r)
			}
		}
		for len(w.inFlight) > 0 {
			w.credit()
		}
		for _, tr := range w.trainers {
			for p := range worldPartitions {
				for tr.consumed[p] < int64(len(w.credited[p])) {
					tr.consumeOne(p)
				}
			}
		}
		w.now = w.now.Add(time.Second)
		done := true
		for _, r := range w.reps {
			done = done && len(r.queue) == 0
		}
		if done {
			if len(w.granted) != w.trees {
				w.fail("%d of %d trees admitted", len(w.granted), w.trees)
			}
			return
		}
		if idle++; len(w.granted) > before {
			idle = 0
		}
		if idle > 20 {
			w.fail("stalled: %d of %d trees admitted, none in 20 rounds", len(w.granted), w.trees)
		}
	}
}

// TestBoundLandedGrace: a tree whose completion was read is still counted
// by end offsets asked within the grace after it (credit writes the
// completion beside the tree: it can be read first), not after.
func TestBoundLandedGrace(t *testing.T) {
	now := time.Unix(1000, 0)
	b := newBound(time.Minute, time.Hour, func() time.Time { return now })
	b.setLogStart(0)
	b.setProgress(bounded(0, 1, map[string]int64{}, now))
	b.setEnds(map[int]int64{0: 0}, now)
	log := &testLog{}
	if !log.admitNow(b, "a", 0) {
		t.Fatal("first tree held back")
	}
	b.completed("a")
	b.setEnds(map[int]int64{0: 0}, now.Add(time.Second)) // the tree not in them yet
	if log.admitNow(b, "b", 0) {
		t.Fatal("a completed tree not yet in the end offsets was not counted")
	}
	b.setEnds(map[int]int64{0: 1}, now.Add(3*time.Second))
	if st := b.standings(); len(st) != 1 || st[0].Backlog != 1 {
		t.Fatalf("after the grace: %+v, want the tree counted once, as credited", st)
	}
}
