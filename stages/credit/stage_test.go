package credit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	json "github.com/goccy/go-json"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/topics"
)

// memLog is a one-partition credited topic in memory: the producer and the
// read-back side of the processor's unit tests (the broker tests use Kafka).
type memLog struct {
	mu       sync.Mutex
	topic    string
	recs     []pipeline.Out
	failNext int
	// completions are the writes to the completions topic, which
	// failCompletions makes fail.
	completions     []pipeline.Out
	failCompletions bool
	// hold keeps ProduceAsync's writes unacknowledged until release.
	hold bool
	held []func()
}

func (l *memLog) Produce(_ context.Context, outs ...pipeline.Out) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(outs) == 1 && outs[0].Topic == testCatalog.Topic(topics.Completions) {
		if l.failCompletions {
			return errors.New("broker unavailable")
		}
		l.completions = append(l.completions, outs[0])
		return nil
	}
	if l.failNext > 0 {
		l.failNext--
		return errors.New("broker unavailable")
	}
	for _, o := range outs {
		if o.Topic != l.topic {
			return fmt.Errorf("produce to %s, want %s", o.Topic, l.topic)
		}
		l.recs = append(l.recs, o)
	}
	return nil
}

func (l *memLog) ProduceAsync(outs []pipeline.Out, done func(error)) {
	l.mu.Lock()
	// hold holds the trees' writes; completions are written at once.
	if l.hold && outs[0].Topic == l.topic {
		l.held = append(l.held, func() { done(l.Produce(context.Background(), outs...)) })
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()
	done(l.Produce(context.Background(), outs...))
}

// release writes and acknowledges the held records, in order, from another
// goroutine (as the producer does), and stops holding.
func (l *memLog) release() {
	l.mu.Lock()
	held := l.held
	l.held, l.hold = nil, false
	l.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, f := range held {
			f()
		}
	}()
	<-done
}

func (l *memLog) Close() error { return nil }

func (l *memLog) Partitions(context.Context, string) (int, error) { return 1, nil }

func (l *memLog) Tail(_ context.Context, topic string, p int, from int64, maxRecords int) (tail, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := tail{lastMaxPos: -1}
	start := max(0, len(l.recs)-maxRecords)
	for i := len(l.recs) - 1; i >= start; i-- {
		mp, _ := strconv.ParseInt(l.recs[i].Headers[HeaderMaxPos], 10, 64)
		if mp < from {
			start = i + 1
			break
		}
	}
	for _, r := range l.recs[start:] {
		mp, _ := strconv.ParseInt(r.Headers[HeaderMaxPos], 10, 64)
		out.trees = append(out.trees, emitted{tree: r.Key, maxpos: mp})
		out.lastMaxPos = mp
		out.records++
	}
	return out, nil
}

func (l *memLog) trees(t *testing.T) []topics.CreditedTree {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []topics.CreditedTree
	for _, r := range l.recs {
		var ct topics.CreditedTree
		if err := topics.Decode(r.Value, &ct); err != nil {
			t.Fatal(err)
		}
		if r.Key != ct.TreeID {
			t.Fatalf("credited record keyed %q holds tree %q", r.Key, ct.TreeID)
		}
		out = append(out, ct)
	}
	return out
}

var testCatalog = topics.Catalog{Prefix: "test.", Partitions: 1}

func newTestStage(t *testing.T, mod func(*Config)) (*Stage, *memLog) {
	t.Helper()
	cfg := DefaultConfig()
	if mod != nil {
		mod(&cfg)
	}
	log := &memLog{topic: testCatalog.Topic(topics.Credited)}
	s, err := newStage(cfg, log, testCatalog, log, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s, log
}

// sampleRecords encodes trees' samples as one partition's records,
// interleaved, with some duplicates.
func sampleRecords(t testing.TB, rng *rand.Rand, trees [][]*topics.Sample, dupRate float64) []pipeline.Record {
	t.Helper()
	var all []*topics.Sample
	for _, tr := range trees {
		all = append(all, tr...)
	}
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	var recs []pipeline.Record
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, s := range all {
		n := 1
		if rng.Float64() < dupRate {
			n = 2
		}
		for range n {
			b, err := topics.Encode(s)
			if err != nil {
				t.Fatal(err)
			}
			recs = append(recs, pipeline.Record{Topic: "test.samples", Offset: int64(len(recs)), Key: []byte(s.TreeID), Value: b,
				Time: base.Add(time.Duration(len(recs)) * time.Millisecond)})
		}
	}
	return recs
}

// fullSamples makes generated samples valid for the online codec.
func fullSamples(samples []*topics.Sample) []*topics.Sample {
	for _, s := range samples {
		s.TaskID = "task"
		s.GroupSizes = []int{s.GroupSize}
	}
	return samples
}

func genTrees(rng *rand.Rand, n int, prefix string) [][]*topics.Sample {
	var trees [][]*topics.Sample
	for i := range n {
		sp := genSpec{maxTurns: 3, minG: 1, maxG: 4, expand: 0.5, masked: 0.05, discrete: true}
		trees = append(trees, fullSamples(genTree(rng, fmt.Sprintf("%s/%d", prefix, i), sp)))
	}
	return trees
}

func assigned(t *testing.T, s *Stage, committed int64) *processor {
	t.Helper()
	pp, err := s.assign(context.Background(), pipeline.Assignment{Topic: s.samples, Partition: 0, Committed: committed})
	if err != nil {
		t.Fatal(err)
	}
	return pp.(*processor)
}

// canonical encodes a credited tree without its emission time.
func canonical(t *testing.T, ct topics.CreditedTree) string {
	t.Helper()
	ct.CreditedAt = time.Time{}
	b, err := json.Marshal(ct)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestProcessorEmitsEachTreeOnceAndCommitsItsLowWatermark(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	trees := genTrees(rng, 30, "run/a")
	recs := sampleRecords(t, rng, trees, 0.2)
	s, log := newTestStage(t, nil)
	p := assigned(t, s, -1)
	if _, ok := p.CommitOffset(); ok {
		t.Fatal("commit offset before any record")
	}
	first := map[string]int64{}
	ctx := context.Background()
	for _, r := range recs {
		id := string(r.Key)
		if _, ok := first[id]; !ok {
			first[id] = r.Offset
		}
		if err := p.Process(ctx, r); err != nil {
			t.Fatal(err)
		}
		emitted := map[string]bool{}
		for _, o := range log.recs {
			emitted[o.Key] = true
		}
		off, ok := p.CommitOffset()
		want := r.Offset + 1
		for id, f := range first {
			if !emitted[id] {
				want = min(want, f)
			}
		}
		if !ok || off != want {
			t.Fatalf("after offset %d: commit %d (ok=%v), want %d", r.Offset, off, ok, want)
		}
	}
	got := log.trees(t)
	if len(got) != len(trees) {
		t.Fatalf("%d trees emitted, want %d", len(got), len(trees))
	}
	for _, ct := range got {
		if ct.Incomplete {
			t.Fatalf("tree %s emitted incomplete", ct.TreeID)
		}
	}
	if v := value(s.m.Completed); v != float64(len(trees)) {
		t.Fatalf("completed metric %v", v)
	}
	if v := value(s.m.DuplicateSamples); v == 0 {
		t.Fatal("duplicates not counted")
	}
}

// TestProcessorCrashReplayEmitsEveryTreeExactlyOnce kills the processor at
// random points, restarts it from a commit that may lag behind, and checks
// the credited log against an uninterrupted run.
func TestProcessorCrashReplayEmitsEveryTreeExactlyOnce(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 99))
		trees := genTrees(rng, 40, fmt.Sprintf("run/%d", seed))
		recs := sampleRecords(t, rng, trees, 0.1)
		mod := func(c *Config) { c.IntrapK = 2; c.Strategy = StrategyMERS }

		ref, refLog := newTestStage(t, mod)
		p := assigned(t, ref, -1)
		for _, r := range recs {
			if err := p.Process(context.Background(), r); err != nil {
				t.Fatal(err)
			}
		}
		want := map[string]string{}
		for _, ct := range refLog.trees(t) {
			want[ct.TreeID] = canonical(t, ct)
		}

		s, log := newTestStage(t, mod)
		committed := int64(-1)
		crashes := 0
		for pos := int64(0); pos < int64(len(recs)); {
			p := assigned(t, s, committed)
			start := max(committed, 0)
			stop := int64(len(recs))
			if crashes < 8 {
				stop = min(stop, start+1+rng.Int64N(int64(len(recs))/4))
			}
			for off := start; off < stop; off++ {
				if err := p.Process(context.Background(), recs[off]); err != nil {
					t.Fatal(err)
				}
				if rng.IntN(10) == 0 { // the runtime commits now and then
					c, ok := p.CommitOffset()
					if !ok || c < committed {
						t.Fatalf("commit went back from %d to %d", committed, c)
					}
					committed = c
				}
			}
			pos = stop
			if stop < int64(len(recs)) {
				crashes++
			}
		}
		got := map[string]int{}
		for _, ct := range log.trees(t) {
			got[ct.TreeID]++
			if got[ct.TreeID] > 1 {
				t.Fatalf("seed %d: tree %s emitted twice", seed, ct.TreeID)
			}
			if canonical(t, ct) != want[ct.TreeID] {
				t.Fatalf("seed %d: tree %s differs from the uninterrupted run", seed, ct.TreeID)
			}
		}
		if len(got) != len(want) || crashes < 5 {
			t.Fatalf("seed %d: %d trees of %d after %d crashes", seed, len(got), len(want), crashes)
		}
	}
}

// stuckTree is a stage (one-minute deadline, incomplete trees handled per
// mode, a clock standing still) whose processor has read three of the four
// samples of tree id (offsets 0-2); samples[3] is the missing one.
func stuckTree(t *testing.T, id, mode string) (*Stage, *memLog, *processor, []*topics.Sample, time.Time) {
	t.Helper()
	s, log := newTestStage(t, func(c *Config) { c.Deadline = time.Minute; c.Incomplete = mode })
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.now = func() time.Time { return clock }
	samples := fullSamples(build(id, 2, []nb{{r: 0, kids: []nb{{r: 1}, {r: 0}}}, {r: 1}}))
	recs := sampleRecords(t, rand.New(rand.NewPCG(1, 1)), [][]*topics.Sample{samples[:3]}, 0)
	p := assigned(t, s, -1)
	for _, r := range recs {
		if err := p.Process(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	return s, log, p, samples, clock
}

func TestStuckTreesCloseAtTheirDeadline(t *testing.T) {
	for _, mode := range []string{IncompleteDrop, IncompleteFlag} {
		t.Run(mode, func(t *testing.T) {
			s, log, p, samples, clock := stuckTree(t, "stuck", mode)
			ctx := context.Background()
			if err := p.Tick(ctx, clock.Add(59*time.Second)); err != nil {
				t.Fatal(err)
			}
			if off, _ := p.CommitOffset(); len(p.open) != 1 || off != 0 {
				t.Fatalf("closed before the deadline: open=%d commit=%d", len(p.open), off)
			}
			if mode == IncompleteFlag {
				log.failNext = 1 // the broker is away at the deadline: retried on the next Tick
				if err := p.Tick(ctx, clock.Add(time.Minute)); err == nil || len(p.open) != 1 {
					t.Fatalf("failed emission: err=%v open=%d", err, len(p.open))
				}
			}
			if err := p.Tick(ctx, clock.Add(time.Minute)); err != nil {
				t.Fatal(err)
			}
			if off, _ := p.CommitOffset(); len(p.open) != 0 || off != 3 {
				t.Fatalf("after the deadline: open=%d commit=%d", len(p.open), off)
			}
			if v := value(s.m.StuckTrees); v != 1 {
				t.Fatalf("stuck metric %v", v)
			}
			got := log.trees(t)
			switch mode {
			case IncompleteDrop:
				if len(got) != 0 {
					t.Fatalf("dropped tree emitted")
				}
			case IncompleteFlag:
				if len(got) != 1 || !got[0].Incomplete || len(got[0].Samples) != 3 {
					t.Fatalf("flagged tree: %+v", got)
				}
			}
			// Either way a completion ends the tree for admission and for
			// a run waiting on every tree; a dropped one says so.
			last := log.completions[len(log.completions)-1]
			var c topics.Completion
			if err := topics.Decode(last.Value, &c); err != nil {
				t.Fatal(err)
			}
			if last.Key != "stuck" || c.TreeID != "stuck" || !c.Incomplete || c.Dropped != (mode == IncompleteDrop) || c.Samples != 3 {
				t.Fatalf("completion %+v keyed %q", c, last.Key)
			}
			// The straggler arrives after the tree was closed.
			b, _ := topics.Encode(samples[3])
			if err := p.Process(ctx, pipeline.Record{Offset: 3, Key: []byte("stuck"), Value: b}); err != nil {
				t.Fatal(err)
			}
			if len(p.open) != 0 || value(s.m.LateSamples) != 1 {
				t.Fatalf("straggler reopened the tree")
			}
		})
	}
}

func TestStragglerDuringFlaggedEmissionIsLate(t *testing.T) {
	s, log, p, samples, clock := stuckTree(t, "late", IncompleteFlag)
	ctx := context.Background()
	log.hold = true
	if err := p.Tick(ctx, clock.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	b, _ := topics.Encode(samples[3])
	if err := p.Process(ctx, pipeline.Record{Offset: 3, Key: []byte("late"), Value: b}); err != nil {
		t.Fatal(err)
	}
	if v := value(s.m.LateSamples); v != 1 {
		t.Fatalf("late samples %v, want 1", v)
	}
	log.release()
	if off, _ := p.CommitOffset(); off != 4 || len(p.open) != 0 {
		t.Fatalf("commit %d, open %d", off, len(p.open))
	}
	if got := log.trees(t); len(got) != 1 || !got[0].Incomplete || len(got[0].Samples) != 3 {
		t.Fatalf("flagged tree: %+v", got)
	}
}

func TestOpenTreeCapAppliesBackpressure(t *testing.T) {
	s, log := newTestStage(t, func(c *Config) {
		c.MaxOpenTrees = 2
		c.Deadline = 150 * time.Millisecond
		c.TickInterval = 10 * time.Millisecond
		c.Incomplete = IncompleteFlag
	})
	p := assigned(t, s, -1)
	ctx := context.Background()
	var recs []pipeline.Record
	for i := range 3 {
		sm := fullSamples(build(fmt.Sprintf("cap/%d", i), 2, []nb{{r: 0, kids: []nb{{r: 1}}}, {r: 1}}))[0]
		b, _ := topics.Encode(sm)
		recs = append(recs, pipeline.Record{Offset: int64(i), Key: []byte(sm.TreeID), Value: b})
	}
	for _, r := range recs[:2] {
		if err := p.Process(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	// At the cap, a new tree waits for the oldest one's deadline...
	start := time.Now()
	if err := p.Process(ctx, recs[2]); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < 100*time.Millisecond {
		t.Fatalf("admitted after %s, before the oldest tree's deadline", waited)
	}
	if len(p.open) != 2 || log.trees(t)[0].TreeID != "cap/0" || !log.trees(t)[0].Incomplete {
		t.Fatalf("open=%d; the oldest tree was not closed incomplete", len(p.open))
	}
	// ...and gives up when the context ends.
	s.cfg.Deadline = time.Hour
	sm := fullSamples(build("cap/3", 2, []nb{{r: 0, kids: []nb{{r: 1}}}, {r: 1}}))[0]
	b, _ := topics.Encode(sm)
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := p.Process(cctx, pipeline.Record{Offset: 3, Key: []byte("cap/3"), Value: b}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the context's", err)
	}
	if len(p.open) != 2 {
		t.Fatalf("open=%d beyond the cap", len(p.open))
	}
}

func TestPoisonRecordsDoNotHoldTheWatermark(t *testing.T) {
	good := fullSamples(build("ok", 1, []nb{{r: 1}, {r: 0}}))
	gb, _ := topics.Encode(good[0])
	bad := *good[1]
	bad.ChildrenRequested = 2 // at the last turn: valid on the wire, impossible in a tree
	bb, _ := topics.Encode(&bad)
	tests := []struct {
		name   string
		key    string
		value  []byte
		reason string
	}{
		{"not json", "ok", []byte("{"), "malformed"},
		{"unknown version", "ok", []byte(`{"schema_version":9}`), "unknown_schema_version"},
		{"key is not the tree", "other", gb, "key_mismatch"},
		{"contradicts its tree", "ok", bb, "inconsistent_sample"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newTestStage(t, nil)
			p := assigned(t, s, -1)
			err := p.Process(context.Background(), pipeline.Record{Offset: 7, Key: []byte(tc.key), Value: tc.value})
			if !topics.IsPoison(err) || pipeline.Reason(err) != tc.reason {
				t.Fatalf("err = %v (reason %q), want poison %s", err, pipeline.Reason(err), tc.reason)
			}
			if off, ok := p.CommitOffset(); !ok || off != 8 || len(p.open) != 0 {
				t.Fatalf("commit %d ok=%v open=%d", off, ok, len(p.open))
			}
		})
	}
}

func TestFailedEmissionIsRetriedAndHoldsTheWatermark(t *testing.T) {
	s, log := newTestStage(t, nil)
	p := assigned(t, s, -1)
	samples := fullSamples(build("retry", 1, []nb{{r: 1}, {r: 0}}))
	recs := sampleRecords(t, rand.New(rand.NewPCG(2, 2)), [][]*topics.Sample{samples}, 0)
	ctx := context.Background()
	if err := p.Process(ctx, recs[0]); err != nil {
		t.Fatal(err)
	}
	log.failNext = 1
	if err := p.Process(ctx, recs[1]); err != nil {
		t.Fatal(err) // the write fails after Process returned
	}
	if off, _ := p.CommitOffset(); off != 0 || len(p.open) != 1 {
		t.Fatalf("commit %d passed an unemitted tree (open %d)", off, len(p.open))
	}
	if err := p.Tick(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	if off, _ := p.CommitOffset(); off != 2 || len(log.trees(t)) != 1 {
		t.Fatalf("after retry: commit %d, %d trees", off, len(log.trees(t)))
	}
}

// TestCompletionGoesWithTheTree checks the completions: one per emission
// of a tree, written right behind it and naming it; a completion that fails
// is counted and does not write its tree again.
func TestCompletionGoesWithTheTree(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprintf("fail=%v", fail), func(t *testing.T) {
			s, log := newTestStage(t, nil)
			p := assigned(t, s, -1)
			log.hold, log.failCompletions = true, fail
			trees := [][]*topics.Sample{
				fullSamples(build("done-a", 1, []nb{{r: 1}, {r: 0}})),
				fullSamples(build("done-b", 2, []nb{{r: 0}, {r: 0}})),
			}
			ctx := context.Background()
			for _, r := range sampleRecords(t, rand.New(rand.NewPCG(8, 8)), trees, 0) {
				if err := p.Process(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
			// Written with their trees, before the acknowledgement.
			if len(log.held) != 2 || len(log.completions)+int(value(s.m.LostCompletions)) != 2 {
				t.Fatalf("%d tree writes held, %d completions", len(log.held), len(log.completions))
			}
			log.release()
			if err := p.Tick(ctx, time.Now()); err != nil {
				t.Fatal(err)
			}
			got := log.trees(t)
			if len(got) != 2 {
				t.Fatalf("%d trees credited, want 2", len(got))
			}
			if off, _ := p.CommitOffset(); len(p.open) != 0 || off != 4 {
				t.Fatalf("open %d, commit %d", len(p.open), off)
			}
			if fail {
				if len(log.completions) != 0 || value(s.m.LostCompletions) != 2 {
					t.Fatalf("%d completions written, %v counted lost", len(log.completions), value(s.m.LostCompletions))
				}
				return
			}
			if len(log.completions) != 2 || value(s.m.LostCompletions) != 0 {
				t.Fatalf("%d completions, %v lost", len(log.completions), value(s.m.LostCompletions))
			}
			for i, o := range log.completions {
				var c topics.Completion
				if err := topics.Decode(o.Value, &c); err != nil {
					t.Fatal(err)
				}
				ct := got[i]
				if o.Key != ct.TreeID || c.TreeID != ct.TreeID || c.TaskID != ct.TaskID || c.Incomplete != ct.Incomplete ||
					c.Samples != len(ct.Samples) || !c.CreditedAt.Equal(ct.CreditedAt) {
					t.Fatalf("completion %d = %+v (key %s) for tree %s with %d samples", i, c, o.Key, ct.TreeID, len(ct.Samples))
				}
			}
		})
	}
}

func TestUnacknowledgedEmissionHoldsTheWatermark(t *testing.T) {
	s, log := newTestStage(t, func(c *Config) { c.MaxOpenTrees = 1 })
	p := assigned(t, s, -1)
	a := fullSamples(build("ack-a", 1, []nb{{r: 1}, {r: 0}}))
	b := fullSamples(build("ack-b", 1, []nb{{r: 0}, {r: 1}}))
	recs := sampleRecords(t, rand.New(rand.NewPCG(5, 5)), [][]*topics.Sample{a}, 0)
	ctx := context.Background()
	log.hold = true
	for _, r := range recs {
		if err := p.Process(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	// Complete and produced, not acknowledged: still open, watermark held,
	// a replayed sample is a duplicate and does not produce it again.
	dup := recs[0]
	dup.Offset = 2
	if err := p.Process(ctx, dup); err != nil {
		t.Fatal(err)
	}
	if off, _ := p.CommitOffset(); off != 0 || len(p.open) != 1 || len(log.held) != 1 {
		t.Fatalf("unacknowledged: commit %d, open %d, writes %d", off, len(p.open), len(log.held))
	}
	// At the cap, a new tree waits for the acknowledgement, not for the
	// deadline.
	recsB := sampleRecords(t, rand.New(rand.NewPCG(6, 6)), [][]*topics.Sample{b}, 0)
	for i := range recsB {
		recsB[i].Offset += 3
	}
	go func() {
		time.Sleep(50 * time.Millisecond)
		log.release()
	}()
	start := time.Now()
	for _, r := range recsB {
		if err := p.Process(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if waited := time.Since(start); waited > 10*time.Second {
		t.Fatalf("waited %s at the cap", waited)
	}
	if off, _ := p.CommitOffset(); off != 5 || len(p.open) != 0 {
		t.Fatalf("acknowledged: commit %d, open %d", off, len(p.open))
	}
	got := log.trees(t)
	if len(got) != 2 || got[0].TreeID != "ack-a" || got[1].TreeID != "ack-b" {
		t.Fatalf("credited %d trees", len(got))
	}
	if v := value(s.m.DuplicateSamples); v != 1 {
		t.Fatalf("duplicates %v", v)
	}
}

func TestUnacknowledgedEmissionsAreBounded(t *testing.T) {
	s, log := newTestStage(t, nil)
	p := assigned(t, s, -1)
	var trees [][]*topics.Sample
	for i := 0; i < maxUnacked+6; i++ {
		trees = append(trees, fullSamples(build("bound-"+strconv.Itoa(i), 1, []nb{{r: 1}, {r: 0}})))
	}
	var recs []pipeline.Record
	for i, tr := range trees { // one tree after the other
		for _, r := range sampleRecords(t, rand.New(rand.NewPCG(uint64(i), 7)), [][]*topics.Sample{tr}, 0) {
			r.Offset = int64(len(recs))
			recs = append(recs, r)
		}
	}
	log.mu.Lock()
	log.hold = true
	log.mu.Unlock()
	done := make(chan error, 1)
	go func() {
		for _, r := range recs {
			if err := p.Process(context.Background(), r); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		log.mu.Lock()
		n := len(log.held)
		log.mu.Unlock()
		if n == maxUnacked {
			break
		}
		if n > maxUnacked || time.Now().After(deadline) {
			t.Fatalf("%d trees produced unacknowledged, want the bound %d", n, maxUnacked)
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("Process went past the bound: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	log.release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if off, _ := p.CommitOffset(); off != int64(len(recs)) || len(log.trees(t)) != len(trees) {
		t.Fatalf("commit %d of %d, %d trees of %d", off, len(recs), len(log.trees(t)), len(trees))
	}
}

func TestStageRegistersMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	log := &memLog{topic: testCatalog.Topic(topics.Credited)}
	s, err := newStage(DefaultConfig(), log, testCatalog, log, reg)
	if err != nil {
		t.Fatal(err)
	}
	p := assigned(t, s, -1)
	recs := sampleRecords(t, rand.New(rand.NewPCG(3, 3)), genTrees(rand.New(rand.NewPCG(4, 4)), 3, "m"), 0)
	for _, r := range recs[:len(recs)-1] {
		if err := p.Process(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range fams {
		names[f.GetName()] = true
	}
	for _, n := range []string{"murphy_credit_open_trees", "murphy_credit_trees_completed_total", "murphy_credit_time_to_complete_seconds",
		"murphy_credit_stuck_trees_total", "murphy_credit_pruned_nodes_total", "murphy_credit_zero_signal_groups_total"} {
		if !names[n] {
			t.Errorf("metric %s not registered (have %v)", n, names)
		}
	}
	if v := value(s.m.Completed); v != 2 {
		t.Errorf("completed %v, want 2", v)
	}
	if _, err := newStage(DefaultConfig(), log, testCatalog, log, reg); err == nil {
		t.Fatal("registering twice on one registry succeeded")
	}
	if spec := s.Spec(); spec.Input != "test.samples" || spec.Name != "credit" || spec.Assigned == nil {
		t.Fatalf("spec %+v", spec)
	}
}

// value reads a counter.
func value(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}

// A credited tree is written from its samples' own bytes (fields unknown
// to this build pass on), and is exactly what Encode writes for the tree it
// decodes to: masked samples' zeroed loss weights included.
func TestCreditedTreesReuseSampleBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	var trees [][]*topics.Sample
	for i := range 40 {
		sp := genSpec{maxTurns: 3, minG: 1, maxG: 4, expand: 0.5, masked: 0.3, discrete: true}
		trees = append(trees, fullSamples(genTree(rng, fmt.Sprintf("run/reuse/%d", i), sp)))
	}
	masked := 0
	for _, tr := range trees {
		for _, s := range tr {
			n := 3 + rng.IntN(5)
			s.ResponseTokenIDs = make(topics.Int32s, n)
			s.LossWeights = make(topics.Float32s, n)
			for j := range n {
				s.ResponseTokenIDs[j], s.LossWeights[j] = int32(j+7), 1
			}
			if s.Route == topics.RouteMasked {
				masked++
			}
		}
	}
	if masked == 0 {
		t.Fatal("no masked sample generated")
	}
	recs := sampleRecords(t, rng, trees, 0.2)
	for i := range recs {
		if i%3 == 0 {
			recs[i].Value = append(bytes.TrimSuffix(recs[i].Value, []byte("}")), []byte(`,"x_trace":"t`+strconv.Itoa(i)+`"}`)...)
		}
	}
	s, log := newTestStage(t, nil)
	p := assigned(t, s, -1)
	for _, r := range recs {
		if err := p.Process(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	if len(log.recs) != len(trees) {
		t.Fatalf("%d trees credited, want %d", len(log.recs), len(trees))
	}
	traces, zeroed := 0, 0
	for _, o := range log.recs {
		var ct topics.CreditedTree
		if err := topics.Decode(o.Value, &ct); err != nil {
			t.Fatal(err)
		}
		for _, cs := range ct.Samples {
			if cs.Route == topics.RouteMasked {
				if len(cs.LossWeights) != len(cs.ResponseTokenIDs) || slices.ContainsFunc(cs.LossWeights, func(w float32) bool { return w != 0 }) {
					t.Fatalf("masked sample %s has loss weights %v", cs.NodeID, cs.LossWeights)
				}
				zeroed++
			}
		}
		var generic struct {
			Samples []map[string]any `json:"samples"`
		}
		if err := json.Unmarshal(o.Value, &generic); err != nil {
			t.Fatal(err)
		}
		for i, g := range generic.Samples {
			if _, ok := g["x_trace"]; ok {
				traces++
				if ct.Samples[i].Route == topics.RouteMasked {
					t.Fatalf("masked sample %s was not encoded whole", ct.Samples[i].NodeID)
				}
			}
		}
		want, err := topics.Encode(&ct)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(stripTraces(o.Value), want) {
			t.Fatalf("tree %s written as\n%.600s\nEncode writes\n%.600s", ct.TreeID, o.Value, want)
		}
	}
	if traces == 0 || zeroed == 0 {
		t.Fatalf("%d samples passed an unknown field on, %d masked samples seen", traces, zeroed)
	}
}

// stripTraces removes the x_trace fields TestCreditedTreesReuseSampleBytes
// adds to samples.
func stripTraces(b []byte) []byte {
	return regexp.MustCompile(`,"x_trace":"t\d+"`).ReplaceAll(b, nil)
}
