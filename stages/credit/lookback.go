package credit

import (
	"context"
	"fmt"
	"strconv"

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
	cfg pipeline.KafkaConfig
}

func newKafkaLog(cfg pipeline.KafkaConfig) *kafkaLog {
	id := cfg.ClientID
	if id == "" {
		id = "murphy"
	}
	cfg.ClientID = id + "-credit-lookback"
	return &kafkaLog{cfg: cfg}
}

func (l *kafkaLog) Partitions(ctx context.Context, topic string) (int, error) {
	n, err := pipeline.Partitions(ctx, l.cfg, topic)
	if err != nil {
		return 0, fmt.Errorf("credit: %w", err)
	}
	return n, nil
}

func (l *kafkaLog) Tail(ctx context.Context, topic string, p int, from int64, maxRecords int) (tail, error) {
	out := tail{lastMaxPos: -1}
	var chunks [][]emitted
	read, truncated, err := pipeline.ReadBackward(ctx, l.cfg, topic, p,
		pipeline.Backward{Window: 256, Growth: 2, MaxOffsets: int64(maxRecords)},
		func(recs []pipeline.Record) (bool, error) {
			chunk := make([]emitted, len(recs))
			for i, r := range recs {
				chunk[i] = emitted{tree: string(r.Key), maxpos: -1}
				if h, ok := r.Headers[HeaderMaxPos]; ok {
					if v, err := strconv.ParseInt(h, 10, 64); err == nil {
						chunk[i].maxpos = v
					}
				}
			}
			chunks = append(chunks, chunk)
			return reachedBelow(chunk, from), nil
		})
	if err != nil {
		return out, fmt.Errorf("credit: read back: %w", err)
	}
	out.records, out.truncated = int(read), truncated
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
