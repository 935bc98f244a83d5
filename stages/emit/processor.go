package emit

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	json "github.com/goccy/go-json"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/topics"
)

// processor batches the credited trees of one partition. It is the
// pipeline.PartitionProcessor of the emit stage.
//
// Exactly once per sink: every sink knows the last source offset it holds.
// Records at or below the lowest of them (the floor) are skipped; ranges
// that some sink holds and another lacks are rebuilt with exactly the
// boundaries they had (known ranges), so their batch ids are the same and
// every sink holds each tree once. The committed offset never passes a tree
// that is not yet in every sink.
type processor struct {
	st        *Stage
	topic     string
	partition int
	vocabs    *vocabs
	tsink     *topicSink
	files     []*fileSink
	schemas   map[string]*arrow.Schema
	scratch   scratch

	floor     int64
	known     []Range
	lastSeen  int64
	firstSeen int64

	dedupe *dedupe

	pending    []sourcedTree
	hasPending bool
	pendFirst  int64
	pendLast   int64
	pendRows   int
	pendBytes  int
	pendSince  time.Time
	pendForced *Range
	pendConfig string
	flushDue   bool
}

// assign builds the processor of a newly assigned partition, reading back
// what earlier runs wrote so that it resumes after the last batch.
func (s *Stage) assign(ctx context.Context, a pipeline.Assignment) (pipeline.PartitionProcessor, error) {
	p := &processor{
		st: s, topic: a.Topic, partition: a.Partition, vocabs: newVocabs(),
		schemas: make(map[string]*arrow.Schema), lastSeen: -1, firstSeen: -1,
		dedupe: newDedupe(s.cfg.DedupeWindow),
	}
	for _, format := range s.cfg.Formats {
		if s.cfg.Dir == "" {
			break
		}
		fs := newFileSink(s.cfg, format, a.Topic, a.Partition, s.mem)
		if err := fs.recover(); err != nil {
			return nil, err
		}
		p.files = append(p.files, fs)
	}
	minFile := int64(math.MaxInt64)
	for _, f := range p.files {
		minFile = min(minFile, f.lastWritten())
	}
	var topicRanges []Range // newest first
	if s.cfg.Topic {
		tail := topicTail{brokers: s.kcfg.Brokers, clientID: s.kcfg.ClientID + "-emit-readback",
			topic: s.cat.Topic(topics.Batches), timeout: s.cfg.ReadBackTimeout}
		target, ranges, err := tail.scan(ctx, a.Topic, a.Partition, func(r Range) bool {
			return len(p.files) == 0 || r.Last <= minFile || r.Last < a.Committed
		})
		if err != nil {
			return nil, err
		}
		topicRanges = ranges
		p.tsink = &topicSink{prod: s.prod, topic: tail.topic, source: a.Topic, partition: a.Partition,
			target: target, codec: s.cfg.Compression, mem: s.mem, last: -1}
		if len(ranges) > 0 {
			p.tsink.last = ranges[0].Last
		}
	}
	p.floor, p.known = math.MaxInt64, nil
	lead, leadLast := "", int64(-1)
	for _, sk := range p.sinks() {
		p.floor = min(p.floor, sk.lastWritten())
		if sk.lastWritten() > leadLast {
			lead, leadLast = sk.name(), sk.lastWritten()
		}
	}
	if leadLast > p.floor {
		if lead == "topic" {
			for _, r := range topicRanges {
				if r.Last > p.floor {
					p.known = append(p.known, r)
				}
			}
		} else {
			for _, f := range p.files {
				if f.name() == lead {
					rs, err := f.rangesAfter(p.floor)
					if err != nil {
						return nil, err
					}
					p.known = rs
				}
			}
		}
	}
	slices.SortFunc(p.known, func(a, b Range) int { return int(a.First - b.First) })
	s.metrics.assigned(len(p.known))
	return p, nil
}

// sinkState is what the processor needs from every sink.
type sinkState interface {
	name() string
	lastWritten() int64
	pendingFirst() (int64, bool)
	tick(ctx context.Context, now time.Time) error
	close(ctx context.Context) error
}

func (p *processor) sinks() []sinkState {
	var out []sinkState
	if p.tsink != nil {
		out = append(out, p.tsink)
	}
	for _, f := range p.files {
		out = append(out, f)
	}
	return out
}

// knownFor returns the known range holding offset o, dropping the ones
// that end before it.
func (p *processor) knownFor(o int64) *Range {
	for len(p.known) > 0 && p.known[0].Last < o {
		p.known = p.known[1:]
	}
	if len(p.known) > 0 && p.known[0].First <= o {
		r := p.known[0]
		return &r
	}
	return nil
}

// Process implements pipeline.PartitionProcessor.
func (p *processor) Process(ctx context.Context, rec pipeline.Record) error {
	if p.flushDue {
		if err := p.flush(ctx); err != nil {
			return err
		}
	}
	o := rec.Offset
	if o <= p.lastSeen {
		return nil // redelivered after an error: already in the open batch
	}
	if p.firstSeen < 0 {
		if err := p.dedupe.seed(ctx, p.st, p.topic, p.partition, o); err != nil {
			return err
		}
		p.firstSeen = o
	}
	dup := p.dedupe.see(string(rec.Key), o)
	if o <= p.floor {
		p.lastSeen = o
		p.st.metrics.skipped.Inc()
		return nil
	}
	forced := p.knownFor(o)
	if p.hasPending && !sameRange(p.pendForced, forced) {
		if err := p.flush(ctx); err != nil {
			return err
		}
	}
	if dup {
		// A record that is not a credited tree is bad input, not a
		// duplicate, whatever its key: dead-lettered like any other.
		var probe topics.CreditedTree
		if err := pipeline.Decode(rec.Value, &probe); err != nil {
			p.note(o, forced)
			return err
		}
		// Its offset stays in the batch's range, as the first time.
		p.note(o, forced)
		p.st.metrics.duplicates.Inc()
		if forced != nil && o >= forced.Last {
			p.flushDue = true
			return p.flush(ctx)
		}
		return nil
	}
	var tree topics.CreditedTree
	if err := pipeline.Decode(rec.Value, &tree); err != nil {
		p.note(o, forced)
		return err
	}
	if err := checkTree(&tree); err != nil {
		p.note(o, forced)
		return topics.Poison(pipeline.PoisonReason(err), err)
	}
	cj, err := json.Marshal(tree.Config)
	if err != nil {
		p.note(o, forced)
		return topics.Poison("credit_config", err)
	}
	rows, size := len(tree.Samples), rowBytes(&tree)
	if forced == nil && p.pendRows > 0 && (string(cj) != p.pendConfig ||
		p.pendRows+rows > p.st.cfg.MaxRows || p.pendBytes+size > p.st.cfg.MaxBytes) {
		// A tree is never split: the open batch closes before it.
		if err := p.flush(ctx); err != nil {
			return err
		}
	}
	p.note(o, forced)
	if rows > 0 && p.pendRows == 0 {
		p.pendConfig = string(cj)
	}
	p.pending = append(p.pending, sourcedTree{Offset: o, Tree: &tree})
	p.pendRows += rows
	p.pendBytes += size
	if forced != nil && o >= forced.Last ||
		forced == nil && (p.pendRows >= p.st.cfg.MaxRows || p.pendBytes >= p.st.cfg.MaxBytes) {
		p.flushDue = true
		return p.flush(ctx)
	}
	return nil
}

func sameRange(a, b *Range) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// note adds offset o to the open batch's range.
func (p *processor) note(o int64, forced *Range) {
	if !p.hasPending {
		p.hasPending, p.pendFirst, p.pendSince, p.pendForced = true, o, p.st.now(), forced
	}
	p.pendLast, p.lastSeen = o, o
}

// flush writes the open batch to every sink that lacks it.
func (p *processor) flush(ctx context.Context) error {
	if !p.hasPending {
		p.flushDue = false
		return nil
	}
	r := Range{Topic: p.topic, Partition: p.partition, First: p.pendFirst, Last: p.pendLast}
	if p.pendForced != nil {
		r = *p.pendForced
		// The consumer may have started inside the range (records before
		// its committed offset are not read again): cover what was read.
		r.First = max(r.First, p.firstSeen)
	}
	if p.pendRows > 0 {
		start := p.st.now()
		if err := p.write(ctx, r); err != nil {
			return err
		}
		p.st.metrics.flushSeconds.Observe(p.st.now().Sub(start).Seconds())
		p.st.metrics.rows.Add(float64(p.pendRows))
		p.st.metrics.trees.Add(float64(len(p.pending)))
		p.st.observeStaleness(p.pending)
	}
	p.pending, p.hasPending, p.pendForced, p.flushDue = nil, false, nil, false
	p.pendRows, p.pendBytes, p.pendConfig = 0, 0, ""
	return nil
}

func (p *processor) schema() (*arrow.Schema, error) {
	if s, ok := p.schemas[p.pendConfig]; ok {
		return s, nil
	}
	var cfg topics.CreditConfig
	for _, t := range p.pending {
		if len(t.Tree.Samples) > 0 {
			cfg = t.Tree.Config
			break
		}
	}
	s, err := NewSchema(cfg)
	if err != nil {
		return nil, err
	}
	p.schemas[p.pendConfig] = s
	return s, nil
}

// write builds the batch covering r and hands it to each sink whose last
// offset is below r.Last. A sink that already holds part of r (possible only
// after a configuration change) gets the rest as a batch of its own range.
func (p *processor) write(ctx context.Context, r Range) error {
	s, err := p.schema()
	if err != nil {
		return err
	}
	now := p.st.now()
	type built struct {
		rec   arrow.RecordBatch
		info  batchInfo
		bytes int
	}
	cache := make(map[Range]built)
	get := func(sub Range) built {
		if b, ok := cache[sub]; ok {
			return b
		}
		trees := p.pending
		if sub.First > r.First {
			trees = nil
			for _, t := range p.pending {
				if t.Offset >= sub.First {
					trees = append(trees, t)
				}
			}
		}
		b := built{info: batchInfo{trees: len(trees), emittedAt: now, minPolicy: math.MaxInt64, maxPolicy: math.MinInt64}}
		for _, t := range trees {
			for i := range t.Tree.Samples {
				v := t.Tree.Samples[i].PolicyVersion
				b.info.minPolicy, b.info.maxPolicy = min(b.info.minPolicy, v), max(b.info.maxPolicy, v)
			}
			b.bytes += rowBytes(t.Tree)
		}
		var sc *scratch
		if len(cache) == 0 {
			sc = &p.scratch // later sub-ranges of this write get their own buffers
		}
		b.rec = buildBatch(p.st.mem, s, sub, trees, p.vocabs, now, sc)
		b.info.rows = int(b.rec.NumRows())
		cache[sub] = b
		return b
	}
	defer func() {
		for _, b := range cache {
			b.rec.Release()
		}
	}()
	sub := func(last int64) (Range, bool) {
		if last >= r.Last {
			return Range{}, false
		}
		x := r
		if last >= r.First {
			x.First = last + 1
		}
		return x, true
	}
	if p.tsink != nil {
		if x, ok := sub(p.tsink.lastWritten()); ok {
			b := get(x)
			if b.info.rows > 0 {
				n, err := p.tsink.write(ctx, b.rec, x, b.info, b.bytes+b.bytes/8+4096)
				if err != nil {
					p.st.metrics.errors.WithLabelValues("topic").Inc()
					return err
				}
				p.st.metrics.batches.WithLabelValues("topic").Inc()
				p.st.metrics.bytes.WithLabelValues("topic").Add(float64(n))
			}
			p.tsink.last = r.Last
		}
	}
	for _, f := range p.files {
		x, ok := sub(f.lastWritten())
		if !ok {
			continue
		}
		b := get(x)
		if b.info.rows == 0 {
			f.last = r.Last
			continue
		}
		if err := f.write(ctx, b.rec, x); err != nil {
			p.st.metrics.errors.WithLabelValues(f.name()).Inc()
			return topics.Fatal(err)
		}
		p.st.metrics.batches.WithLabelValues(f.name()).Inc()
	}
	return nil
}

// Tick closes a batch older than MaxAge and rotates files older than
// FileMaxAge.
func (p *processor) Tick(ctx context.Context, now time.Time) error {
	if p.flushDue || p.hasPending && p.pendForced == nil && now.Sub(p.pendSince) >= p.st.cfg.MaxAge {
		if err := p.flush(ctx); err != nil {
			return err
		}
	}
	for _, f := range p.files {
		if err := f.tick(ctx, now); err != nil {
			return topics.Fatal(err)
		}
	}
	return nil
}

// CommitOffset is the first offset not yet in every sink: the open batch,
// an open (not yet renamed) file, or the next record.
func (p *processor) CommitOffset() (int64, bool) {
	if p.lastSeen < 0 {
		return 0, false
	}
	c := p.lastSeen + 1
	if p.hasPending {
		c = min(c, p.pendFirst)
	}
	for _, f := range p.files {
		if first, ok := f.pendingFirst(); ok {
			c = min(c, first)
		}
	}
	return c, true
}

// Close flushes the open batch (unless it is a rebuilt range not yet
// complete) and completes open files.
func (p *processor) Close(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.st.cfg.CloseTimeout)
	defer cancel()
	var errs []error
	if p.hasPending && (p.pendForced == nil || p.pendLast >= p.pendForced.Last) {
		if err := p.flush(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	for _, sk := range p.sinks() {
		if err := sk.close(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("emit: close partition %d: %w", p.partition, errs[0])
	}
	return nil
}
