package inspect

import (
	"context"
	"fmt"
	"strings"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/topics"
)

// maxNotes bounds the per-record notes kept about skipped records.
const maxNotes = 20

// ReadTopic reads the credited topic (one topics.CreditedTree per record)
// from the start of every partition up to the high watermark it had when
// the read began, then stops: records written meanwhile are left for the
// next read. It reads outside any consumer group and commits nothing. A
// record that does not decode is skipped and noted; a tree seen twice is
// kept once (the first).
func ReadTopic(ctx context.Context, kc pipeline.KafkaConfig, topic string) (*Input, error) {
	in := &Input{Source: fmt.Sprintf("topic %s on %s", topic, strings.Join(kc.Brokers, ","))}
	parts, err := pipeline.Partitions(ctx, kc, topic)
	if err != nil {
		return nil, fmt.Errorf("inspect: %w", err)
	}
	ends := make([]int64, parts)
	for p := range ends {
		_, end, err := pipeline.PartitionBounds(ctx, kc, topic, p)
		if err != nil {
			return nil, fmt.Errorf("inspect: %w", err)
		}
		ends[p] = end
	}
	seen := map[string]bool{}
	dups := 0
	for p, end := range ends {
		err := pipeline.ReadRange(ctx, kc, topic, p, 0, end, func(rec pipeline.Record) error {
			var t topics.CreditedTree
			if err := topics.Decode(rec.Value, &t); err != nil {
				in.skip(fmt.Sprintf("%s/%d@%d: %v", topic, rec.Partition, rec.Offset, err))
				return nil
			}
			if seen[t.TreeID] {
				dups++
				return nil
			}
			seen[t.TreeID] = true
			in.FromCredited(&t)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("inspect: %w", err)
		}
	}
	if dups > 0 {
		in.Notes = append(in.Notes, fmt.Sprintf("%d credited records repeated a tree already read (kept the first)", dups))
	}
	if len(seen) == 0 {
		return nil, fmt.Errorf("inspect: %s holds no credited trees (up to its high watermark)", in.Source)
	}
	return in, nil
}

func (in *Input) skip(note string) {
	in.Skipped++
	if len(in.Notes) < maxNotes {
		in.Notes = append(in.Notes, "skipped "+note)
	}
}
