package emit

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/murphy-rl/murphy/pipeline"
)

// Headers of a message on the batches topic.
const (
	HeaderBatchID          = "batch_id"
	HeaderRows             = "rows"
	HeaderTrees            = "trees"
	HeaderSourceTopic      = "source_topic"
	HeaderSourcePartition  = "source_partition"
	HeaderFirstOffset      = "first_offset"
	HeaderLastOffset       = "last_offset"
	HeaderSchemaVersion    = "schema_version"
	HeaderCompression      = "compression"
	HeaderMinPolicyVersion = "min_policy_version"
	HeaderMaxPolicyVersion = "max_policy_version"
	HeaderEmittedAt        = "emitted_at"
)

// batchInfo is what the headers of a batch say besides its range.
type batchInfo struct {
	rows, trees          int
	minPolicy, maxPolicy int64
	emittedAt            time.Time
}

// topicSink produces each batch as one self-contained Arrow IPC stream.
type topicSink struct {
	prod      pipeline.Producer
	topic     string
	source    string
	partition int
	// target is the batches partition of this source partition (its
	// number modulo the batches topic's partitions): all its batches land,
	// in order, on one partition, so trainers splitting partitions by rank
	// see whole partitions and a restarted stage finds its last batch at
	// the tail of one partition.
	target int
	codec  string
	mem    memory.Allocator
	last   int64
	// out is the encode buffer, reused after a successful produce. After a
	// failed one the producer may still hold the bytes, so it is dropped.
	out []byte
}

func (s *topicSink) name() string { return "topic" }

func (s *topicSink) lastWritten() int64 { return s.last }

func (s *topicSink) pendingFirst() (int64, bool) { return 0, false }

func (s *topicSink) tick(context.Context, time.Time) error { return nil }

func (s *topicSink) close(context.Context) error { return nil }

// write produces rec (acks from all in-sync replicas) before returning.
func (s *topicSink) write(ctx context.Context, rec arrow.RecordBatch, r Range, info batchInfo, sizeHint int) (int, error) {
	if cap(s.out) < sizeHint {
		s.out = make([]byte, 0, sizeHint)
	}
	b, err := EncodeStream(s.mem, rec, s.codec, s.out)
	if err != nil {
		return 0, err
	}
	out := pipeline.Out{
		Topic:     s.topic,
		Key:       s.source + "/" + strconv.Itoa(s.partition),
		Partition: pipeline.ToPartition(s.target),
		Value:     b,
		Headers: map[string]string{
			HeaderBatchID:          r.BatchID(),
			HeaderRows:             strconv.FormatInt(rec.NumRows(), 10),
			HeaderTrees:            strconv.Itoa(info.trees),
			HeaderSourceTopic:      r.Topic,
			HeaderSourcePartition:  strconv.Itoa(r.Partition),
			HeaderFirstOffset:      strconv.FormatInt(r.First, 10),
			HeaderLastOffset:       strconv.FormatInt(r.Last, 10),
			HeaderSchemaVersion:    strconv.Itoa(SchemaVersion),
			HeaderCompression:      s.codec,
			HeaderMinPolicyVersion: strconv.FormatInt(info.minPolicy, 10),
			HeaderMaxPolicyVersion: strconv.FormatInt(info.maxPolicy, 10),
			HeaderEmittedAt:        info.emittedAt.UTC().Format(time.RFC3339Nano),
		},
	}
	if err := s.prod.Produce(ctx, out); err != nil {
		s.out = nil
		return 0, fmt.Errorf("emit: produce batch %s: %w", r.BatchID(), err)
	}
	s.out = b[:0]
	s.last = r.Last
	return len(b), nil
}

// topicTail reads back what earlier runs produced to the batches topic.
type topicTail struct {
	brokers  []string
	clientID string
	topic    string
	timeout  time.Duration
}

// ReadBackError says the batches topic could not be read back; assignment
// fails and is retried rather than risking a duplicate batch.
type ReadBackError struct {
	Topic string
	Err   error
}

func (e *ReadBackError) Error() string {
	return fmt.Sprintf("emit: read back batches topic %s: %v", e.Topic, e.Err)
}
func (e *ReadBackError) Unwrap() error { return e.Err }

func (t *topicTail) kafka() pipeline.KafkaConfig {
	c := pipeline.DefaultKafkaConfig()
	c.Brokers, c.ClientID = t.brokers, t.clientID
	return c
}

// scan reads the batches topic backwards from its end and returns the
// partition to produce to (p modulo the batches topic's partitions), and the
// ranges of this source partition's batches, newest first, until stop says
// enough.
func (t *topicTail) scan(ctx context.Context, source string, p int, stop func(Range) bool) (target int, ranges []Range, err error) {
	ctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	wrap := func(err error) error { return &ReadBackError{Topic: t.topic, Err: err} }
	n, err := pipeline.Partitions(ctx, t.kafka(), t.topic)
	if err != nil {
		return 0, nil, wrap(err)
	}
	q := p % n
	part := strconv.Itoa(p)
	_, _, err = pipeline.ReadBackward(ctx, t.kafka(), t.topic, q, pipeline.Backward{Window: 4, Growth: 4, MaxWindow: 4096},
		func(recs []pipeline.Record) (bool, error) {
			for i := len(recs) - 1; i >= 0; i-- {
				rec := recs[i]
				if rec.Headers[HeaderSourceTopic] != source || rec.Headers[HeaderSourcePartition] != part {
					continue
				}
				r, err := ParseBatchID(rec.Headers[HeaderBatchID])
				if err != nil {
					return false, fmt.Errorf("offset %d: %w", rec.Offset, err)
				}
				ranges = append(ranges, r)
				if stop(r) {
					return true, nil
				}
			}
			return false, nil
		})
	if err != nil {
		return 0, nil, wrap(err)
	}
	return q, ranges, nil
}
