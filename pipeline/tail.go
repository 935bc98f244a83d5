package pipeline

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/murphy-rl/murphy/topics"
	"github.com/segmentio/kafka-go"
)

// Tail reads every partition of topic from the start, outside any consumer
// group, and delivers records until ctx ends; then the channel closes.
// Monitors, tests and read-back use it.
func Tail(ctx context.Context, cfg KafkaConfig, topic string) (<-chan Record, error) {
	conn, err := cfg.Dialer().DialContext(ctx, "tcp", cfg.Brokers[0])
	if err != nil {
		return nil, fmt.Errorf("tail %s: %w", topic, err)
	}
	parts, err := conn.ReadPartitions(topic)
	conn.Close()
	if err != nil {
		return nil, fmt.Errorf("tail %s: %w", topic, err)
	}
	out := make(chan Record)
	var wg sync.WaitGroup
	for _, p := range parts {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			r := kafka.NewReader(kafka.ReaderConfig{Brokers: cfg.Brokers, Dialer: cfg.Dialer(), Topic: topic, Partition: p,
				MaxBytes: topics.DefaultMaxMessageBytes + 1<<20, MaxWait: 100 * time.Millisecond})
			defer r.Close()
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
		}(p.ID)
	}
	go func() {
		wg.Wait()
		close(out)
	}()
	return out, nil
}
