package credit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/murphy-rl/murphy/pipeline"
)

// Headers on every credited record. They let a restarted stage learn which
// trees were already emitted (see README.md, "Exactly once").
const (
	// HeaderSourcePartition is the samples partition the tree was assembled from.
	HeaderSourcePartition = "murphy-credit-src-partition"
	// HeaderSourceFirst is the samples offset of the tree's first record.
	HeaderSourceFirst = "murphy-credit-src-first"
	// HeaderMaxPos is the highest samples position (offset+1) the partition's
	// lineage of processors had consumed when the tree was emitted. It never
	// decreases along a credited partition.
	HeaderMaxPos = "murphy-credit-maxpos"
)

// emitted is a tree already on the credited topic.
type emitted struct {
	tree   string
	maxpos int64 // -1 when the record carried no header
}

// tail is what a creditedLog read back from the end of a partition.
type tail struct {
	trees      []emitted // oldest first
	lastMaxPos int64     // maxpos of the newest record with one, -1 if none
	records    int       // records read
	truncated  bool      // stopped by the record bound before reaching from
}

// creditedLog reads back the credited topic.
type creditedLog interface {
	// Partitions returns the partition count of topic.
	Partitions(ctx context.Context, topic string) (int, error)
	// Tail reads partition p backwards from its end until it reaches a
	// record whose maxpos is below from (maxpos is non-decreasing along the
	// partition, so everything older is below from too), the start of the
	// log, or maxRecords records.
	Tail(ctx context.Context, topic string, p int, from int64, maxRecords int) (tail, error)
}

// kafkaLog is the creditedLog of a Kafka cluster.
type kafkaLog struct {
	client *kafka.Client
}

func newKafkaLog(cfg pipeline.KafkaConfig) *kafkaLog {
	id := cfg.ClientID
	if id == "" {
		id = "murphy"
	}
	return &kafkaLog{client: &kafka.Client{
		Addr:      kafka.TCP(cfg.Brokers...),
		Timeout:   30 * time.Second,
		Transport: &kafka.Transport{ClientID: id + "-credit-lookback", DialTimeout: 10 * time.Second, IdleTimeout: 30 * time.Second},
	}}
}

func (l *kafkaLog) Partitions(ctx context.Context, topic string) (int, error) {
	res, err := l.client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return 0, fmt.Errorf("credit: metadata of %s: %w", topic, err)
	}
	for _, t := range res.Topics {
		if t.Name == topic {
			if t.Error != nil {
				return 0, fmt.Errorf("credit: metadata of %s: %w", topic, t.Error)
			}
			return len(t.Partitions), nil
		}
	}
	return 0, fmt.Errorf("credit: topic %s not found", topic)
}

func (l *kafkaLog) offsets(ctx context.Context, topic string, p int) (first, end int64, err error) {
	res, err := l.client.ListOffsets(ctx, &kafka.ListOffsetsRequest{
		Topics: map[string][]kafka.OffsetRequest{topic: {kafka.FirstOffsetOf(p), kafka.LastOffsetOf(p)}},
	})
	if err != nil {
		return 0, 0, fmt.Errorf("credit: offsets of %s/%d: %w", topic, p, err)
	}
	for _, po := range res.Topics[topic] {
		if po.Partition == p {
			if po.Error != nil {
				return 0, 0, fmt.Errorf("credit: offsets of %s/%d: %w", topic, p, po.Error)
			}
			return po.FirstOffset, po.LastOffset, nil
		}
	}
	return 0, 0, fmt.Errorf("credit: no offsets for %s/%d", topic, p)
}

func (l *kafkaLog) Tail(ctx context.Context, topic string, p int, from int64, maxRecords int) (tail, error) {
	out := tail{lastMaxPos: -1}
	first, end, err := l.offsets(ctx, topic, p)
	if err != nil {
		return out, err
	}
	var chunks [][]emitted
	pos, chunk := end, int64(256)
	for pos > first {
		if out.records >= maxRecords {
			out.truncated = true
			break
		}
		start := max(first, pos-chunk, end-int64(maxRecords))
		recs, err := l.read(ctx, topic, p, start, pos)
		if err != nil {
			return out, err
		}
		out.records += int(pos - start)
		chunks = append(chunks, recs)
		pos = start
		chunk *= 2
		if reachedBelow(recs, from) {
			break
		}
	}
	for i := len(chunks) - 1; i >= 0; i-- {
		for _, e := range chunks[i] {
			if e.maxpos < 0 || e.maxpos >= from {
				out.trees = append(out.trees, e)
			}
			if e.maxpos >= 0 {
				out.lastMaxPos = e.maxpos
			}
		}
	}
	return out, nil
}

// reachedBelow reports whether recs (oldest first) hold a record whose
// maxpos is below from.
func reachedBelow(recs []emitted, from int64) bool {
	for _, e := range recs {
		if e.maxpos >= 0 {
			return e.maxpos < from
		}
	}
	return false
}

// read returns the records of [start, end) of partition p.
func (l *kafkaLog) read(ctx context.Context, topic string, p int, start, end int64) ([]emitted, error) {
	var out []emitted
	off := start
	for off < end {
		res, err := l.client.Fetch(ctx, &kafka.FetchRequest{
			Topic: topic, Partition: p, Offset: off,
			MinBytes: 1, MaxBytes: 16 << 20, MaxWait: 500 * time.Millisecond,
		})
		if err != nil {
			return nil, fmt.Errorf("credit: read back %s/%d at %d: %w", topic, p, off, err)
		}
		if res.Error != nil {
			if errors.Is(res.Error, kafka.OffsetOutOfRange) && res.LogStartOffset > off {
				off = res.LogStartOffset // retention removed the head meanwhile
				continue
			}
			return nil, fmt.Errorf("credit: read back %s/%d at %d: %w", topic, p, off, res.Error)
		}
		progressed := false
		for {
			r, err := res.Records.ReadRecord()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("credit: read back %s/%d at %d: %w", topic, p, off, err)
			}
			if r.Offset < off {
				continue
			}
			if r.Offset >= end {
				off = end
				break
			}
			key, err := readBytes(r.Key)
			if err != nil {
				return nil, fmt.Errorf("credit: read back %s/%d at %d: %w", topic, p, r.Offset, err)
			}
			e := emitted{tree: string(key), maxpos: -1}
			for _, h := range r.Headers {
				if h.Key == HeaderMaxPos {
					if v, err := strconv.ParseInt(string(h.Value), 10, 64); err == nil {
						e.maxpos = v
					}
				}
			}
			out = append(out, e)
			off = r.Offset + 1
			progressed = true
		}
		if !progressed {
			break // nothing readable left below end (truncation or a gap of control records)
		}
	}
	return out, nil
}

func readBytes(b interface {
	io.Reader
	Len() int
}) ([]byte, error) {
	if b == nil {
		return nil, nil
	}
	buf := make([]byte, b.Len())
	_, err := io.ReadFull(b, buf)
	return buf, err
}
