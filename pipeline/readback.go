package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"syscall"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/segmentio/kafka-go"
)

// Read-back: a stage that restarts reads the tail of its own output topic to
// learn what an earlier run already produced (credit: which trees were
// emitted; emit: which batches are on the batches topic). These functions
// read outside any consumer group and commit nothing.

const (
	// readBackFetchBytes is the size asked of one fetch. The broker returns
	// at least one whole record batch whatever this says, so a larger record
	// still comes through; a small value keeps a short read of large records
	// (the tail of the batches topic) from pulling megabytes it discards.
	readBackFetchBytes = 1 << 20
	// readBackFetchWait bounds how long the broker holds a fetch that has
	// nothing to return yet.
	readBackFetchWait = 500 * time.Millisecond
	// readBackFetchTimeout bounds one fetch round trip when ctx has no
	// earlier deadline.
	readBackFetchTimeout = 30 * time.Second
	// readBackRetries is how many times a retriable broker error is retried
	// (about 3s in all) before the read-back fails; the caller may retry
	// more (a stage's assignment is).
	readBackRetries = 6
	// readBackMaxStalls is how many fetches in a row may return nothing
	// below the high watermark before ReadRange gives up.
	readBackMaxStalls = 10
)

// readBackClient returns a client for metadata and offset requests, and a
// function that releases its connections.
func readBackClient(cfg KafkaConfig) (*kafka.Client, func()) {
	rt := cfg.Transport()
	return &kafka.Client{Addr: kafka.TCP(cfg.Brokers...), Timeout: 30 * time.Second, Transport: rt}, rt.CloseIdleConnections
}

// topicMetadata returns the partitions of topic. It never creates the topic.
func topicMetadata(ctx context.Context, client *kafka.Client, topic string) (parts []kafka.Partition, err error) {
	err = withRetry(ctx, func() error {
		parts, err = readTopicMetadata(ctx, client, topic)
		return err
	})
	return parts, err
}

func readTopicMetadata(ctx context.Context, client *kafka.Client, topic string) ([]kafka.Partition, error) {
	res, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return nil, fmt.Errorf("metadata of %s: %w", topic, err)
	}
	for _, t := range res.Topics {
		if t.Name != topic {
			continue
		}
		if t.Error != nil {
			return nil, fmt.Errorf("metadata of %s: %w", topic, t.Error)
		}
		if len(t.Partitions) == 0 {
			return nil, fmt.Errorf("metadata of %s: topic has no partitions", topic)
		}
		return t.Partitions, nil
	}
	return nil, fmt.Errorf("metadata of %s: %w", topic, kafka.UnknownTopicOrPartition)
}

// Partitions returns the partition count of topic. A topic that does not
// exist is an error (it is not created).
func Partitions(ctx context.Context, cfg KafkaConfig, topic string) (int, error) {
	client, release := readBackClient(cfg)
	defer release()
	parts, err := topicMetadata(ctx, client, topic)
	if err != nil {
		return 0, err
	}
	return len(parts), nil
}

// PartitionBounds returns the earliest offset still in partition's log and
// its high watermark (the offset the next record will get). The partition
// holds no records when first == end.
func PartitionBounds(ctx context.Context, cfg KafkaConfig, topic string, partition int) (first, end int64, err error) {
	client, release := readBackClient(cfg)
	defer release()
	return partitionBounds(ctx, client, topic, partition)
}

func partitionBounds(ctx context.Context, client *kafka.Client, topic string, partition int) (first, end int64, err error) {
	err = withRetry(ctx, func() error {
		first, end, err = listOffsets(ctx, client, topic, partition)
		return err
	})
	return first, end, err
}

func listOffsets(ctx context.Context, client *kafka.Client, topic string, partition int) (first, end int64, err error) {
	res, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{
		Topics: map[string][]kafka.OffsetRequest{topic: {kafka.FirstOffsetOf(partition), kafka.LastOffsetOf(partition)}},
	})
	if err != nil {
		return 0, 0, fmt.Errorf("offsets of %s/%d: %w", topic, partition, err)
	}
	for _, po := range res.Topics[topic] {
		if po.Partition != partition {
			continue
		}
		if po.Error != nil {
			return 0, 0, fmt.Errorf("offsets of %s/%d: %w", topic, partition, po.Error)
		}
		return po.FirstOffset, po.LastOffset, nil
	}
	return 0, 0, fmt.Errorf("offsets of %s/%d: %w", topic, partition, kafka.UnknownTopicOrPartition)
}

// ReadRange calls fn, in offset order, with every record of partition whose
// offset is in [from, to). Offsets without a record (removed by compaction
// or retention, or beyond the high watermark) are skipped, so fn may see
// fewer than to-from records; it never waits for records not yet written.
// The read stops at the first error of fn, which is returned as is, and when
// ctx ends. A broker error that says to try again (a leader moving, a
// connection reset) is retried a few times, resuming after the last record
// delivered.
func ReadRange(ctx context.Context, cfg KafkaConfig, topic string, partition int, from, to int64, fn func(Record) error) error {
	client, release := readBackClient(cfg)
	defer release()
	first, end, err := partitionBounds(ctx, client, topic, partition)
	if err != nil {
		return err
	}
	from, to = max(from, first), min(to, end)
	if from >= to {
		return nil
	}
	var conn *kafka.Conn
	var stopConn func() bool
	closeConn := func() {
		if conn != nil {
			stopConn()
			_ = conn.Close()
			conn = nil
		}
	}
	defer closeConn()

	off, stalls, retry := from, 0, newRetrier()
	for off < to {
		if conn == nil {
			if conn, err = dialPartition(ctx, cfg, client, topic, partition); err != nil {
				if err = retry.wait(ctx, err); err != nil {
					return err
				}
				continue
			}
			// A fetch blocked on the connection returns when ctx ends.
			c := conn
			stopConn = context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Now()) })
		}
		next, err := readBatch(ctx, conn, off, to, fn)
		if err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return fmt.Errorf("read %s/%d at %d: %w", topic, partition, off, cerr)
			}
			var rerr *readError
			if !errors.As(err, &rerr) {
				return err // fn's own error
			}
			if !errors.Is(err, kafka.OffsetOutOfRange) && !errors.Is(err, kafka.RequestTimedOut) {
				closeConn()
				if err := retry.wait(ctx, fmt.Errorf("read %s/%d at %d: %w", topic, partition, off, rerr.err)); err != nil {
					return err
				}
				off = max(off, next)
				continue
			}
		}
		if next > off {
			off, stalls = next, 0
			retry.progress()
			continue
		}
		// Nothing readable at off: retention removed it, the log was
		// truncated below it, or the broker had nothing to return yet.
		if stalls++; stalls > readBackMaxStalls {
			return fmt.Errorf("read %s/%d: no record readable at offset %d below %d", topic, partition, off, to)
		}
		if first, end, err = partitionBounds(ctx, client, topic, partition); err != nil {
			return err
		}
		to = min(to, end)
		off = max(off, first)
	}
	return nil
}

// dialPartition connects to the leader of partition.
func dialPartition(ctx context.Context, cfg KafkaConfig, client *kafka.Client, topic string, partition int) (*kafka.Conn, error) {
	parts, err := topicMetadata(ctx, client, topic)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(parts, func(p kafka.Partition) bool { return p.ID == partition })
	if i < 0 {
		return nil, fmt.Errorf("read %s/%d: %w", topic, partition, kafka.UnknownTopicOrPartition)
	}
	if parts[i].Error != nil {
		return nil, fmt.Errorf("read %s/%d: %w", topic, partition, parts[i].Error)
	}
	if parts[i].Leader.Host == "" {
		return nil, fmt.Errorf("read %s/%d: no leader: %w", topic, partition, kafka.LeaderNotAvailable)
	}
	conn, err := cfg.Dialer().DialPartition(ctx, "tcp", "", parts[i])
	if err != nil {
		return nil, fmt.Errorf("read %s/%d: %w", topic, partition, err)
	}
	return conn, nil
}

// retriable reports whether err says to try again: a Kafka error marked
// temporary (except an unknown topic, which read-back reports at once) or a
// broken connection.
func retriable(err error) bool {
	if authFailure(err) {
		return false
	}
	var ke kafka.Error
	if errors.As(err, &ke) {
		return ke.Temporary() && ke != kafka.UnknownTopicOrPartition
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
}

// retrier spaces the attempts of one read-back (newBackOff) and counts them.
type retrier struct {
	b        *backoff.ExponentialBackOff
	attempts int
}

func newRetrier() *retrier { return &retrier{b: newBackOff(50*time.Millisecond, time.Second)} }

// wait returns err when it is not retriable or the attempts are spent;
// otherwise it waits before the next attempt and returns nil.
func (r *retrier) wait(ctx context.Context, err error) error {
	if !retriable(err) || r.attempts >= readBackRetries {
		return err
	}
	select {
	case <-ctx.Done():
		return errors.Join(err, ctx.Err())
	case <-time.After(r.b.NextBackOff()):
	}
	r.attempts++
	return nil
}

// progress resets the attempts after a step succeeded.
func (r *retrier) progress() { r.attempts = 0; r.b.Reset() }

// withRetry runs op until it succeeds, fails for good (not retriable), or
// the attempts are spent.
func withRetry(ctx context.Context, op func() error) error {
	_, err := backoff.Retry(ctx, func() (struct{}, error) {
		err := op()
		if err != nil && !retriable(err) {
			return struct{}{}, backoff.Permanent(err)
		}
		return struct{}{}, err
	}, backoff.WithBackOff(newBackOff(50*time.Millisecond, time.Second)),
		backoff.WithMaxTries(readBackRetries+1), backoff.WithMaxElapsedTime(0))
	return err
}

// readError is a failure of the fetch itself, as opposed to one returned by
// the caller's function.
type readError struct{ err error }

func (e *readError) Error() string { return e.err.Error() }
func (e *readError) Unwrap() error { return e.err }

// readBatch fetches once at off and calls fn with the records below to. It
// returns the offset to fetch next, past any compacted gap the fetch covered.
func readBatch(ctx context.Context, conn *kafka.Conn, off, to int64, fn func(Record) error) (int64, error) {
	deadline := time.Now().Add(readBackFetchTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := conn.SetReadDeadline(deadline); err != nil {
		return off, &readError{err: err}
	}
	// Checked after setting the deadline: if ctx ends from here on, the
	// AfterFunc of ReadRange moves the deadline to now.
	if err := ctx.Err(); err != nil {
		return off, &readError{err: err}
	}
	if _, err := conn.Seek(off, kafka.SeekAbsolute|kafka.SeekDontCheck); err != nil {
		return off, &readError{err: err}
	}
	b := conn.ReadBatchWith(kafka.ReadBatchConfig{MinBytes: 1, MaxBytes: readBackFetchBytes, MaxWait: readBackFetchWait})
	next := off
	for {
		m, err := b.ReadMessage()
		if err != nil {
			break
		}
		if m.Offset < off {
			continue
		}
		if m.Offset >= to {
			next = to
			break
		}
		if err := ctx.Err(); err != nil {
			_ = b.Close()
			return next, &readError{err: err}
		}
		if err := fn(fromKafka(m)); err != nil {
			_ = b.Close()
			return next, err
		}
		next = m.Offset + 1
	}
	// The batch's own offset has moved past records that compaction removed
	// from the end of the last record batch it read.
	next = max(next, min(b.Offset(), to))
	if err := b.Close(); err != nil {
		return next, &readError{err: err}
	}
	return next, nil
}

// Backward sizes the windows of ReadBackward.
type Backward struct {
	// Window is the first window, in offsets; each next one is Growth
	// times larger (at least 2), up to MaxWindow (0 = no cap).
	Window, MaxWindow, Growth int64
	// MaxOffsets bounds how far back from the end the read reaches (0 = no
	// bound); the oldest window is cut to it.
	MaxOffsets int64
}

// ReadBackward is the read-back on partition assignment that stateful
// stages share (credit learns which trees it already emitted, emit which
// batches): it reads partition of topic from its end towards its start, one
// window of offsets at a time, newest window first, and hands fn each
// window's records in offset order. It stops when fn says stop, at the
// start of the log, or MaxOffsets before the end (truncated). Offsets that
// compaction or retention removed are skipped; broker errors are retried as
// ReadRange retries them.
func ReadBackward(ctx context.Context, cfg KafkaConfig, topic string, partition int, b Backward,
	fn func(recs []Record) (stop bool, err error)) (read int64, truncated bool, err error) {
	first, end, err := PartitionBounds(ctx, cfg, topic, partition)
	if err != nil {
		return 0, false, err
	}
	floor := first
	if b.MaxOffsets > 0 && end-b.MaxOffsets > floor {
		floor = end - b.MaxOffsets
	}
	window, growth := max(b.Window, 1), max(b.Growth, 2)
	var recs []Record
	for hi := end; hi > first; {
		if hi <= floor {
			return read, true, nil
		}
		lo := max(floor, hi-window)
		recs = recs[:0]
		err := ReadRange(ctx, cfg, topic, partition, lo, hi, func(r Record) error {
			recs = append(recs, r)
			return nil
		})
		if err != nil {
			return read, false, err
		}
		read += hi - lo
		stop, err := fn(recs)
		if err != nil || stop {
			return read, false, err
		}
		hi = lo
		window *= growth
		if b.MaxWindow > 0 {
			window = min(window, b.MaxWindow)
		}
	}
	return read, false, nil
}

// OffsetsSince returns, for every partition of topic, the first offset of a
// record written at or after since (the high watermark when none is) and the
// high watermark: the range [from, to) a reader that wants the records of a
// recent window reads (ReadRange) before it follows the topic. A topic that
// does not exist has no partitions (nil, nil).
func OffsetsSince(ctx context.Context, cfg KafkaConfig, topic string, since time.Time) (map[int][2]int64, error) {
	client, release := readBackClient(cfg)
	defer release()
	parts, err := topicMetadata(ctx, client, topic)
	if errors.Is(err, kafka.UnknownTopicOrPartition) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	// Two requests: a partition appears once per request, and the broker
	// answers a time with no record after it as offset -1, which kafka-go
	// cannot tell from the answer to a request for the high watermark.
	ask := func(of func(int) kafka.OffsetRequest) (map[int]kafka.PartitionOffsets, error) {
		var reqs []kafka.OffsetRequest
		for _, p := range parts {
			reqs = append(reqs, of(p.ID))
		}
		var res *kafka.ListOffsetsResponse
		err := withRetry(ctx, func() (err error) {
			res, err = client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("offsets of %s since %s: %w", topic, since.Format(time.RFC3339), err)
		}
		out := map[int]kafka.PartitionOffsets{}
		for _, po := range res.Topics[topic] {
			if po.Error != nil {
				return nil, fmt.Errorf("offsets of %s/%d since %s: %w", topic, po.Partition, since.Format(time.RFC3339), po.Error)
			}
			out[po.Partition] = po
		}
		return out, nil
	}
	ends, err := ask(kafka.LastOffsetOf)
	if err != nil {
		return nil, err
	}
	starts, err := ask(func(p int) kafka.OffsetRequest { return kafka.TimeOffsetOf(p, since) })
	if err != nil {
		return nil, err
	}
	out := map[int][2]int64{}
	for p, e := range ends {
		from := e.LastOffset
		for off := range starts[p].Offsets {
			if off >= 0 && off < from {
				from = off
			}
		}
		out[p] = [2]int64{from, e.LastOffset}
	}
	return out, nil
}

// Watermarks reads the high watermarks of a topic's partitions, outside any
// consumer group, over one connection pool.
type Watermarks struct {
	client *kafka.Client
	rt     *kafka.Transport
}

// NewWatermarks connects to the cluster cfg names (lazily, at the first
// read).
func NewWatermarks(cfg KafkaConfig) *Watermarks {
	rt := cfg.Transport()
	return &Watermarks{client: &kafka.Client{Addr: kafka.TCP(cfg.Brokers...), Timeout: 10 * time.Second, Transport: rt}, rt: rt}
}

// Close releases the connections.
func (w *Watermarks) Close() { w.rt.CloseIdleConnections() }

// Ends returns the high watermark of every partition of topic.
func (w *Watermarks) Ends(ctx context.Context, topic string) (map[int]int64, error) {
	md, err := w.client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return nil, err
	}
	var reqs []kafka.OffsetRequest
	for _, t := range md.Topics {
		if t.Name == topic {
			if t.Error != nil {
				return nil, t.Error
			}
			for _, p := range t.Partitions {
				reqs = append(reqs, kafka.LastOffsetOf(p.ID))
			}
		}
	}
	if len(reqs) == 0 {
		return nil, fmt.Errorf("topic %s has no partitions", topic)
	}
	res, err := w.client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	if err != nil {
		return nil, err
	}
	ends := map[int]int64{}
	for _, po := range res.Topics[topic] {
		if po.Error != nil {
			return nil, po.Error
		}
		ends[po.Partition] = po.LastOffset
	}
	return ends, nil
}
