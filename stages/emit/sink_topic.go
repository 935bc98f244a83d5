package emit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

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
	key       string
	codec     string
	mem       memory.Allocator
	last      int64
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
		Topic: s.topic,
		Key:   s.key,
		Value: b,
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

// partitions returns the partition count of the batches topic.
func (t *topicTail) partitions(ctx context.Context, cl *kgo.Client) (int, error) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(t.topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, err
	}
	if len(resp.Topics) != 1 {
		return 0, fmt.Errorf("metadata for %d topics", len(resp.Topics))
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		return 0, err
	}
	if len(resp.Topics[0].Partitions) == 0 {
		return 0, errors.New("topic has no partitions")
	}
	return len(resp.Topics[0].Partitions), nil
}

// bounds returns the start and end offsets of partition q.
func (t *topicTail) bounds(ctx context.Context, cl *kgo.Client, q int32) (start, end int64, err error) {
	get := func(ts int64) (int64, error) {
		req := kmsg.NewPtrListOffsetsRequest()
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = t.topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition = q
		rp.Timestamp = ts
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return 0, err
		}
		for _, tp := range resp.Topics {
			for _, pp := range tp.Partitions {
				if pp.Partition == q {
					if err := kerr.ErrorForCode(pp.ErrorCode); err != nil {
						return 0, err
					}
					return pp.Offset, nil
				}
			}
		}
		return 0, fmt.Errorf("no offsets for partition %d", q)
	}
	if start, err = get(-2); err != nil {
		return 0, 0, err
	}
	if end, err = get(-1); err != nil {
		return 0, 0, err
	}
	return start, end, nil
}

// readWindow consumes offsets [lo, hi) of partition q and returns the
// ranges of batches of the given source partition, in offset order.
func (t *topicTail) readWindow(ctx context.Context, q int32, lo, hi int64, source string, p int) ([]Range, error) {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(t.brokers...),
		kgo.ClientID(t.clientID),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{t.topic: {q: kgo.NewOffset().At(lo)}}),
		kgo.FetchMaxWait(200*time.Millisecond),
	)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var out []Range
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return nil, ferr
		}
		done := false
		for _, rec := range fs.Records() {
			if rec.Offset >= hi {
				done = true
				break
			}
			h := make(map[string]string, len(rec.Headers))
			for _, kv := range rec.Headers {
				h[kv.Key] = string(kv.Value)
			}
			if h[HeaderSourceTopic] == source && h[HeaderSourcePartition] == strconv.Itoa(p) {
				r, err := ParseBatchID(h[HeaderBatchID])
				if err != nil {
					return nil, err
				}
				out = append(out, r)
			}
			if rec.Offset >= hi-1 {
				done = true
			}
		}
		if done {
			return out, nil
		}
	}
}

// scan reads the batches topic backwards from its end and returns the key
// and partition count to produce with, and the ranges of this source
// partition's batches, newest first, until stop says enough.
func (t *topicTail) scan(ctx context.Context, source string, p int, stop func(Range) bool) (key string, ranges []Range, err error) {
	ctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	wrap := func(err error) error { return &ReadBackError{Topic: t.topic, Err: err} }
	cl, err := kgo.NewClient(kgo.SeedBrokers(t.brokers...), kgo.ClientID(t.clientID))
	if err != nil {
		return "", nil, wrap(err)
	}
	defer cl.Close()
	n, err := t.partitions(ctx, cl)
	if err != nil {
		return "", nil, wrap(err)
	}
	key = batchKey(source, p, n)
	q := int32(p % n)
	start, end, err := t.bounds(ctx, cl, q)
	if err != nil {
		return "", nil, wrap(err)
	}
	window := int64(4)
	for hi := end; hi > start; {
		lo := max(start, hi-window)
		got, err := t.readWindow(ctx, q, lo, hi, source, p)
		if err != nil {
			return "", nil, wrap(err)
		}
		for i := len(got) - 1; i >= 0; i-- {
			ranges = append(ranges, got[i])
			if stop(got[i]) {
				return key, ranges, nil
			}
		}
		hi = lo
		window = min(window*4, 4096)
	}
	return key, ranges, nil
}
