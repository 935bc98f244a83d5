package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/murphy-rl/murphy/topics"
	"github.com/segmentio/kafka-go"
)

// Tail reads every partition of topic from the start, outside any consumer
// group, and delivers records until ctx ends; then the channel closes.
// Monitors, tests and read-back use it.
func Tail(ctx context.Context, cfg KafkaConfig, topic string) (<-chan Record, error) {
	// Any live broker of the list answers (one that is down is not asked
	// again and again).
	n, err := Partitions(ctx, cfg, topic)
	if err != nil {
		return nil, fmt.Errorf("tail %s: %w", topic, err)
	}
	out := make(chan Record)
	var wg sync.WaitGroup
	for p := range n {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			r := kafka.NewReader(kafka.ReaderConfig{Brokers: cfg.Brokers, Dialer: cfg.Dialer(), Topic: topic, Partition: p,
				MaxBytes: topics.DefaultMaxMessageBytes + 1<<20, MaxWait: 100 * time.Millisecond})
			defer r.Close()
			deliver(ctx, r, out)
		}(p)
	}
	go func() {
		wg.Wait()
		close(out)
	}()
	return out, nil
}

// TailPartition reads one partition of topic from offset on, outside any
// consumer group, and delivers its records in offset order until ctx ends;
// then the channel closes. A log read by every process in one order (the
// admission log) is read with it. While the partition cannot be read it
// retries.
func TailPartition(ctx context.Context, cfg KafkaConfig, topic string, partition int, offset int64) <-chan Record {
	out := make(chan Record)
	go func() {
		defer close(out)
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: cfg.Brokers, Dialer: cfg.Dialer(), Topic: topic, Partition: partition,
			MaxBytes: topics.DefaultMaxMessageBytes + 1<<20, MaxWait: 50 * time.Millisecond})
		defer r.Close()
		if err := r.SetOffset(offset); err != nil {
			slog.Warn("tail: cannot set offset", "topic", topic, "partition", partition, "offset", offset, "err", err)
			return
		}
		deliver(ctx, r, out)
	}()
	return out
}

// deliver sends r's records to out in order until ctx ends, retrying
// while the partition cannot be read.
func deliver(ctx context.Context, r *kafka.Reader, out chan<- Record) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(200 * time.Millisecond):
			}
			continue
		}
		select {
		case out <- fromKafka(m):
		case <-ctx.Done():
			return
		}
	}
}

// Follow reads every record of topic from its start, outside any consumer
// group, decodes it as a T and hands it to fn, until ctx ends: how a
// process follows a compacted topic whose log is the state (policy
// versions, trainer progress). A record that does not decode is logged and
// skipped; while the topic cannot be read, Follow logs and retries every
// 2 s. It blocks until ctx ends; fn is called from one goroutine.
func Follow[T any, P interface {
	*T
	topics.Record
}](ctx context.Context, cfg KafkaConfig, topic string, fn func(P)) {
	for ctx.Err() == nil {
		ch, err := Tail(ctx, cfg, topic)
		if err != nil {
			slog.Warn("cannot read topic; retrying", "topic", topic, "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(2 * time.Second):
			}
			continue
		}
		for rec := range ch {
			r := P(new(T))
			if err := topics.Decode(rec.Value, r); err != nil {
				slog.Warn("bad record skipped", "topic", topic, "partition", rec.Partition, "offset", rec.Offset, "err", err)
				continue
			}
			fn(r)
		}
		return
	}
}
