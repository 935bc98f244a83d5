package emit

import (
	"context"
	"fmt"

	"github.com/murphy-rl/murphy/pipeline"
)

// dedupe finds credited records whose tree id (the record's key) is on an
// earlier record of the same partition at most window offsets before:
// kafka-go's writer is not Kafka's idempotent producer, so a write it
// retried after a lost acknowledgement lands twice. The first record wins.
// The decision depends on the log alone: a restarted processor seeds the
// window from the records before its first one, so it drops the same
// records as the run before it and rebuilds identical batches.
type dedupe struct {
	window int64
	last   map[string]int64 // key -> newest offset seen
	ring   []keyed          // the window's records, oldest first
}

type keyed struct {
	key    string
	offset int64
}

func newDedupe(window int64) *dedupe {
	return &dedupe{window: window, last: map[string]int64{}}
}

// see reports whether the record at offset with key is a duplicate, and
// adds it to the window. Records without a key are never duplicates.
func (d *dedupe) see(key string, offset int64) bool {
	if d.window <= 0 || key == "" {
		return false
	}
	for len(d.ring) > 0 && d.ring[0].offset < offset-d.window {
		old := d.ring[0]
		d.ring = d.ring[1:]
		if d.last[old.key] == old.offset {
			delete(d.last, old.key)
		}
	}
	prev, ok := d.last[key]
	dup := ok && prev < offset && prev >= offset-d.window
	if !ok || prev < offset {
		d.last[key] = offset
		d.ring = append(d.ring, keyed{key, offset})
	}
	return dup
}

// seed reads the window before offset first back from the partition, so
// that the first records this processor sees are judged as they were the
// first time.
func (d *dedupe) seed(ctx context.Context, s *Stage, topic string, partition int, first int64) error {
	if d.window <= 0 || first <= 0 || len(s.kcfg.Brokers) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ReadBackTimeout)
	defer cancel()
	err := s.readRange(ctx, s.kcfg, topic, partition, max(0, first-d.window), first, func(r pipeline.Record) error {
		d.see(string(r.Key), r.Offset)
		return nil
	})
	if err != nil {
		return fmt.Errorf("emit: read back the dedupe window of %s/%d before %d: %w", topic, partition, first, err)
	}
	return nil
}
