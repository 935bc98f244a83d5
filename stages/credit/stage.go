package credit

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/topics"
)

// Stage is the stateful credit stage: one processor per partition of the
// samples topic assembles trees and emits each one, credited, exactly once
// as a topics.CreditedTree on the credited topic, with a topics.Completion
// on the completions topic (see README.md).
type Stage struct {
	cfg         Config
	cc          topics.CreditConfig
	prod        pipeline.Producer
	samples     string
	credited    string
	completions string
	log         creditedLog
	m           *Metrics
	logger      *slog.Logger
	now         func() time.Time
}

// NewStage builds the credit stage. prod writes credited trees, each to the
// credited partition numbered like its samples partition (an explicit
// pipeline.Out partition): it must be the project's ordered producer
// (pipeline.NewOrderedProducer or Runtime.OrderedProducer), so that trees
// reach that partition in the order they were emitted; kcfg is used to read the credited topic back on partition
// assignment; metrics go to reg.
func NewStage(cfg Config, prod pipeline.Producer, cat topics.Catalog, kcfg pipeline.KafkaConfig, reg prometheus.Registerer, opts ...Option) (*Stage, error) {
	if err := kcfg.Validate(); err != nil {
		return nil, fmt.Errorf("credit: %w", err)
	}
	return newStage(cfg, prod, cat, newKafkaLog(kcfg), reg, opts...)
}

// Option customises a Stage.
type Option func(*Stage)

// WithLogger sets the stage's logger (default: none, records are dropped).
func WithLogger(l *slog.Logger) Option {
	return func(s *Stage) { s.logger = l.With("stage", "credit") }
}

func newStage(cfg Config, prod pipeline.Producer, cat topics.Catalog, log creditedLog, reg prometheus.Registerer, opts ...Option) (*Stage, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := cat.Validate(); err != nil {
		return nil, fmt.Errorf("credit: %w", err)
	}
	if prod == nil {
		return nil, errors.New("credit: no producer")
	}
	m, err := NewMetrics(reg)
	if err != nil {
		return nil, err
	}
	s := &Stage{
		cfg:         cfg,
		cc:          cfg.CreditConfig(),
		prod:        prod,
		samples:     cat.Topic(topics.Samples),
		credited:    cat.Topic(topics.Credited),
		completions: cat.Topic(topics.Completions),
		log:         log,
		m:           m,
		logger:      slog.New(slog.DiscardHandler),
		now:         time.Now,
	}
	for _, o := range opts {
		o(s)
	}
	return s, nil
}

// Metrics returns the stage's metrics.
func (s *Stage) Metrics() *Metrics { return s.m }

// Spec describes the stage for the pipeline runtime.
func (s *Stage) Spec() pipeline.PartitionStage {
	return pipeline.PartitionStage{
		Name:         "credit",
		Input:        s.samples,
		Assigned:     s.assign,
		Revoked:      func(pipeline.Assignment) {},
		TickInterval: s.cfg.TickInterval,
	}
}

// assign reads back the tail of the credited partition that matches a's
// samples partition to learn which trees were already emitted.
func (s *Stage) assign(ctx context.Context, a pipeline.Assignment) (pipeline.PartitionProcessor, error) {
	np, err := s.log.Partitions(ctx, s.samples)
	if err != nil {
		return nil, err
	}
	nc, err := s.log.Partitions(ctx, s.credited)
	if err != nil {
		return nil, err
	}
	if np != nc {
		return nil, topics.Fatal(fmt.Errorf("credit: %s has %d partitions but %s has %d: a tree would not come back to the partition it was assembled on",
			s.samples, np, s.credited, nc))
	}
	from := int64(math.MinInt64)
	if a.Committed >= 0 {
		from = a.Committed - s.cfg.LookbackMargin
	}
	tl, err := s.log.Tail(ctx, s.credited, a.Partition, from, s.cfg.LookbackMaxRecords)
	if err != nil {
		return nil, err
	}
	p := newProcessor(s, a.Partition)
	p.maxpos = max(tl.lastMaxPos, 0)
	for _, e := range tl.trees {
		mp := e.maxpos
		if mp < 0 {
			mp = p.maxpos
		}
		p.remember(e.tree, mp)
	}
	s.m.LookbackRecords.Add(float64(tl.records))
	lg := s.logger.With("partition", a.Partition, "committed", a.Committed, "lookback_records", tl.records, "remembered", len(p.done))
	if tl.truncated {
		lg.Warn("credit: lookback bound reached before the committed offset; trees emitted earlier may be emitted again")
	} else {
		lg.Info("credit: partition assigned")
	}
	return p, nil
}

type openTree struct {
	t *Tree
	// raw holds the bytes each node's sample was decoded from, by node id.
	raw       map[string][]byte
	first     int64     // offset of the tree's first record
	opened    time.Time // when this processor saw the first record
	firstTime time.Time // record timestamps, for time-to-complete
	lastTime  time.Time
	elem      *list.Element
	emitting  bool // produced, not yet acknowledged: holds the watermark
	pending   bool // its emission failed: retried on Tick
	stuck     bool // closed at its deadline (counted once)
}

// samples returns, for each credited sample, the bytes its sample was
// decoded from, or nil where credit changed the sample (a masked sample's
// loss weights are zeroed).
func (ot *openTree) samples(cs []topics.CreditedSample) [][]byte {
	raws := make([][]byte, len(cs))
	for i := range cs {
		if cs[i].Route != topics.RouteMasked {
			raws[i] = ot.raw[cs[i].NodeID]
		}
	}
	return raws
}

// emission is the outcome of producing one credited tree, handed from the
// producer's goroutine to the processor's.
type emission struct {
	ot         *openTree
	maxpos     int64
	incomplete bool
	stats      Stats
	err        error
}

type doneEntry struct {
	tree   string
	maxpos int64
}

// processor is the state machine of one samples partition.
type processor struct {
	s         *Stage
	partition int
	gauge     prometheus.Gauge
	open      map[string]*openTree
	order     list.List // open trees by first offset (also by opening time)
	next      int64     // offset after the last record processed, -1 before any
	maxpos    int64     // highest position the partition's processors consumed
	// done remembers trees emitted (or closed) and the maxpos at that time,
	// so that replays and stragglers of a finished tree are dropped.
	done      map[string]int64
	doneQueue []doneEntry
	doneHead  int
	// emitted holds emissions the producer finished, applied by settle on
	// the processor's goroutine; acked wakes a Process waiting at the cap.
	mu      sync.Mutex
	emitted []emission
	acked   chan struct{}
	unacked int // trees produced and not yet settled
}

// maxUnacked bounds a partition's trees produced and not yet acknowledged:
// Process waits for acknowledgements beyond it, so encoded trees cannot
// pile up in the producer while the partition races ahead.
const maxUnacked = 64

func newProcessor(s *Stage, partition int) *processor {
	return &processor{
		s:         s,
		partition: partition,
		gauge:     s.m.OpenTrees.WithLabelValues(strconv.Itoa(partition)),
		open:      make(map[string]*openTree),
		next:      -1,
		done:      make(map[string]int64),
		acked:     make(chan struct{}, 1),
	}
}

// watermark is the lowest offset the partition still needs: the first
// record of the oldest open tree, or the next record.
func (p *processor) watermark() int64 {
	if f := p.order.Front(); f != nil {
		return f.Value.(*openTree).first
	}
	return p.next
}

// CommitOffset implements pipeline.PartitionProcessor.
func (p *processor) CommitOffset() (int64, bool) {
	p.logFailed(p.settle())
	if p.next < 0 {
		return 0, false
	}
	return p.watermark(), true
}

// finished reports whether tree was emitted or closed within the
// remembered horizon (maxpos >= watermark − lookback margin). The horizon is
// computed from the log position, so a restarted processor decides alike.
func (p *processor) finished(tree string) bool {
	mp, ok := p.done[tree]
	if !ok {
		return false
	}
	return mp >= p.watermark()-p.s.cfg.LookbackMargin
}

func (p *processor) remember(tree string, maxpos int64) {
	p.done[tree] = maxpos
	p.doneQueue = append(p.doneQueue, doneEntry{tree, maxpos})
	horizon := int64(math.MinInt64)
	if p.next >= 0 {
		horizon = p.watermark() - p.s.cfg.LookbackMargin
	}
	for p.doneHead < len(p.doneQueue) {
		e := p.doneQueue[p.doneHead]
		if len(p.done) <= p.s.cfg.MaxRemembered && e.maxpos >= horizon {
			break
		}
		if p.done[e.tree] == e.maxpos {
			delete(p.done, e.tree)
		}
		p.doneHead++
	}
	if p.doneHead > 1024 && p.doneHead*2 > len(p.doneQueue) {
		p.doneQueue = append(p.doneQueue[:0], p.doneQueue[p.doneHead:]...)
		p.doneHead = 0
	}
}

// Process implements pipeline.PartitionProcessor.
func (p *processor) Process(ctx context.Context, rec pipeline.Record) error {
	p.logFailed(p.settle())
	if rec.Offset+1 > p.next {
		p.next = rec.Offset + 1
	}
	p.maxpos = max(p.maxpos, p.next)
	s := new(topics.Sample)
	if err := pipeline.Decode(rec.Value, s); err != nil {
		return err
	}
	if len(rec.Key) > 0 && string(rec.Key) != s.TreeID {
		return topics.Poison("key_mismatch", fmt.Errorf("credit: record key %q is not the tree id %q", rec.Key, s.TreeID))
	}
	if p.finished(s.TreeID) {
		p.s.m.LateSamples.Inc()
		return nil
	}
	ot := p.open[s.TreeID]
	if ot == nil {
		if err := p.admit(ctx); err != nil {
			return err
		}
		ot = &openTree{t: NewTree(s.TreeID), raw: make(map[string][]byte, 8), first: rec.Offset, opened: p.s.now(),
			firstTime: rec.Time, lastTime: rec.Time}
		ot.elem = p.order.PushBack(ot)
		p.open[s.TreeID] = ot
		p.gauge.Set(float64(len(p.open)))
	}
	if ot.emitting && !ot.t.Has(s.NodeID) {
		// Closed at its deadline and being emitted: too late to join it.
		p.s.m.LateSamples.Inc()
		return nil
	}
	if ot.t.Len() >= p.s.cfg.MaxTreeNodes && !ot.t.Has(s.NodeID) {
		return topics.Poison("tree_too_large", fmt.Errorf("credit: tree %s already has %d nodes (max_tree_nodes)", s.TreeID, ot.t.Len()))
	}
	added, err := ot.t.Add(s)
	if err != nil {
		if ot.t.Len() == 0 {
			p.drop(ot)
		}
		return topics.Poison("inconsistent_sample", err)
	}
	if !added {
		p.s.m.DuplicateSamples.Inc()
	} else {
		// The record's bytes become the sample's part of the tree (a
		// record's value is its own, never reused by the runtime).
		ot.raw[s.NodeID] = rec.Value
		if rec.Time.After(ot.lastTime) {
			ot.lastTime = rec.Time
		}
	}
	if ot.t.Complete() {
		p.emit(ot)
		for p.unacked >= maxUnacked {
			select {
			case <-p.acked:
				p.logFailed(p.settle())
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return nil
}

// admit waits, at the open-tree cap, until the oldest tree reaches its
// deadline and is closed.
func (p *processor) admit(ctx context.Context) error {
	var started time.Time
	defer func() {
		if !started.IsZero() {
			p.s.m.Backpressure.Add(time.Since(started).Seconds())
		}
	}()
	for {
		p.logFailed(p.settle())
		if len(p.open) < p.s.cfg.MaxOpenTrees {
			return nil
		}
		p.flushPending()
		front := p.order.Front().Value.(*openTree)
		wait := front.opened.Add(p.s.cfg.Deadline).Sub(p.s.now())
		if wait <= 0 && !front.emitting {
			p.closeStuck(front)
			continue
		}
		if started.IsZero() {
			started = time.Now()
		}
		t := time.NewTimer(max(min(wait, p.s.cfg.TickInterval), time.Millisecond))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-p.acked:
			t.Stop()
		case <-t.C:
		}
	}
}

// Tick implements pipeline.PartitionProcessor: it retries failed emissions
// and closes trees past their deadline.
func (p *processor) Tick(_ context.Context, now time.Time) error {
	failed := p.settle()
	p.flushPending()
	for e := p.order.Front(); e != nil; {
		ot := e.Value.(*openTree)
		e = e.Next()
		if now.Before(ot.opened.Add(p.s.cfg.Deadline)) {
			break
		}
		if !ot.emitting && !ot.pending {
			p.closeStuck(ot)
		}
	}
	p.gauge.Set(float64(len(p.open)))
	return errors.Join(failed, p.settle())
}

// flushPending emits again the trees whose emission failed.
func (p *processor) flushPending() {
	for e := p.order.Front(); e != nil; e = e.Next() {
		if ot := e.Value.(*openTree); ot.pending {
			p.emit(ot)
		}
	}
}

// closeStuck closes a tree that will not complete: flagged and emitted, or
// dropped, per Config.Incomplete.
func (p *processor) closeStuck(ot *openTree) {
	if !ot.stuck {
		ot.stuck = true
		p.s.m.StuckTrees.Inc()
		p.s.logger.Warn("credit: tree closed incomplete", "partition", p.partition, "tree_id", ot.t.ID(),
			"nodes", ot.t.Len(), "missing", ot.t.Missing(), "action", p.s.cfg.Incomplete)
	}
	if p.s.cfg.Incomplete == IncompleteFlag {
		p.emit(ot)
		return
	}
	p.drop(ot)
	p.remember(ot.t.ID(), p.maxpos)
	// No credited record follows: the completion says so, so that
	// admission frees the slot now and a run waiting for every tree knows
	// this one has ended.
	if done, err := topics.Encode(&topics.Completion{SchemaVersion: topics.SchemaVersion, TreeID: ot.t.ID(),
		TaskID: ot.t.TaskID(), Incomplete: true, Dropped: true, Samples: ot.t.Len(), CreditedAt: p.s.now().UTC()}); err == nil {
		p.complete(ot.t.ID(), done)
	}
}

func (p *processor) drop(ot *openTree) {
	delete(p.open, ot.t.ID())
	p.order.Remove(ot.elem)
	p.gauge.Set(float64(len(p.open)))
}

// emit credits ot and produces it without waiting: the tree stays open, and
// holds the watermark, until settle sees the brokers' acknowledgement; then
// it is forgotten. A failed write leaves it pending, emitted again on the
// next Tick (or when the open-tree cap is reached).
func (p *processor) emit(ot *openTree) {
	if ot.emitting {
		return
	}
	ct, st := Credit(ot.t, p.s.cc)
	ct.CreditedAt = p.s.now().UTC()
	val, err := topics.EncodeCreditedTree(&ct, ot.samples(ct.Samples))
	var done []byte
	if err == nil {
		done, err = topics.Encode(&topics.Completion{SchemaVersion: topics.SchemaVersion, TreeID: ct.TreeID,
			TaskID: ct.TaskID, Incomplete: ct.Incomplete, Samples: len(ct.Samples), CreditedAt: ct.CreditedAt})
	}
	if err != nil {
		p.s.m.Unwritable.Inc()
		p.s.logger.Error("credit: tree cannot be written", "partition", p.partition, "tree_id", ot.t.ID(), "nodes", ot.t.Len(), "err", err)
		p.drop(ot)
		p.remember(ot.t.ID(), p.maxpos)
		return
	}
	e := emission{ot: ot, maxpos: p.maxpos, incomplete: ct.Incomplete, stats: st}
	out := pipeline.Out{
		Topic:     p.s.credited,
		Key:       ot.t.ID(),
		Partition: pipeline.ToPartition(p.partition), // back to the partition it was assembled on
		Value:     val,
		Headers: map[string]string{
			HeaderSourcePartition: strconv.Itoa(p.partition),
			HeaderSourceFirst:     strconv.FormatInt(ot.first, 10),
			HeaderMaxPos:          strconv.FormatInt(e.maxpos, 10),
		},
	}
	ot.emitting, ot.pending = true, false
	p.unacked++
	p.s.prod.ProduceAsync([]pipeline.Out{out}, func(err error) {
		e.err = err
		p.mu.Lock()
		p.emitted = append(p.emitted, e)
		p.mu.Unlock()
		select {
		case p.acked <- struct{}{}:
		default:
		}
	})
	p.complete(ot.t.ID(), done)
}

// settle applies the emissions the producer finished: an acknowledged tree
// is counted and forgotten, a failed one becomes pending. It returns the
// failures.
func (p *processor) settle() error {
	p.mu.Lock()
	done := p.emitted
	p.emitted = nil
	p.mu.Unlock()
	var errs []error
	m := p.s.m
	for _, e := range done {
		ot := e.ot
		ot.emitting = false
		p.unacked--
		if e.err != nil {
			ot.pending = true
			errs = append(errs, fmt.Errorf("credit: emit tree %s: %w", ot.t.ID(), e.err))
			continue
		}
		if !e.incomplete {
			m.Completed.Inc()
			if !ot.firstTime.IsZero() && !ot.lastTime.IsZero() {
				m.TimeToComplete.Observe(ot.lastTime.Sub(ot.firstTime).Seconds())
			}
		}
		m.PrunedNodes.Add(float64(e.stats.PrunedNodes))
		m.ZeroSignalGroups.Add(float64(e.stats.ZeroSignalGroups))
		m.DroppedSamples.Add(float64(e.stats.DroppedSamples))
		p.drop(ot)
		p.remember(ot.t.ID(), e.maxpos)
	}
	return errors.Join(errs...)
}

// complete writes the completion of a tree right behind the tree (the
// ordered producer sends both in one write when it can), without waiting
// and without retrying. It is a hint for generate's admission, which frees
// a slot whose completion never comes after its tree_ttl; written beside
// the tree rather than after its acknowledgement, it frees the slot a
// round trip sooner. A completion that fails does not write its tree
// again; a tree whose write fails is emitted again with a new completion
// (generate ignores completions of trees it has already freed).
func (p *processor) complete(tree string, value []byte) {
	m := p.s.m
	p.s.prod.ProduceAsync([]pipeline.Out{{Topic: p.s.completions, Key: tree, Value: value}}, func(err error) {
		if err != nil {
			m.LostCompletions.Inc()
			p.s.logger.Warn("credit: completion not written; generate frees the tree's slot after its tree_ttl",
				"partition", p.partition, "tree_id", tree, "err", err)
		}
	})
}

// logFailed logs failed emissions found outside Tick (which returns them).
func (p *processor) logFailed(err error) {
	if err != nil {
		p.s.logger.Warn("credit: emission failed; retried on the next tick", "partition", p.partition, "err", err)
	}
}

// Close implements pipeline.PartitionProcessor. Open trees need no flush:
// the committed offset has not passed their first record, so the next
// owner of the partition rebuilds them from the log.
func (p *processor) Close(context.Context) error {
	p.s.m.OpenTrees.DeleteLabelValues(strconv.Itoa(p.partition))
	return nil
}
