package pipeline

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/murphy-rl/murphy/topics"
	"github.com/segmentio/kafka-go"
)

// partitionConsumer runs a PartitionStage: kafka-go's ConsumerGroup hands out
// partitions per generation; each assigned partition gets its own reader and
// processor, and commits the offset the processor chooses.
type partitionConsumer struct {
	rt *Runtime
	s  PartitionStage
}

func newPartitionConsumer(rt *Runtime, s PartitionStage) *partitionConsumer {
	if s.TickInterval <= 0 {
		s.TickInterval = time.Second
	}
	return &partitionConsumer{rt: rt, s: s}
}

func (pc *partitionConsumer) run(ctx context.Context) error {
	kc := pc.rt.cfg.Kafka
	group, err := kafka.NewConsumerGroup(kafka.ConsumerGroupConfig{
		ID:                     pc.rt.GroupID(pc.s.Name),
		Brokers:                kc.Brokers,
		Dialer:                 kc.Dialer(),
		Topics:                 []string{pc.s.Input},
		StartOffset:            kafka.FirstOffset,
		HeartbeatInterval:      2 * time.Second,
		SessionTimeout:         10 * time.Second,
		RebalanceTimeout:       10 * time.Second,
		JoinGroupBackoff:       500 * time.Millisecond,
		WatchPartitionChanges:  true,
		PartitionWatchInterval: 5 * time.Second,
		Timeout:                10 * time.Second,
	})
	if err != nil {
		return err
	}
	// Closing the group ends the current generation: partition loops see
	// their context end, commit and close their processors first.
	closed := make(chan struct{})
	go func() {
		<-ctx.Done()
		_ = group.Close()
		close(closed)
	}()
	defer func() { <-closed }()
	join := newBackOff(200*time.Millisecond, 5*time.Second)
	for {
		gen, err := group.Next(ctx)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, kafka.ErrGroupClosed) {
				return nil
			}
			pc.rt.log.Warn("consumer group join failed; retrying", "stage", pc.s.Name, "error", err)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(join.NextBackOff()):
			}
			continue
		}
		join.Reset()
		for _, pa := range gen.Assignments[pc.s.Input] {
			gen.Start(func(gctx context.Context) { pc.runPartition(gctx, gen, pa) })
		}
	}
}

// assign asks the stage for the partition's processor, retrying
// transient failures with a backoff until the partition is released; a
// fatal one fails the runtime. ok is false when there is no processor.
func (pc *partitionConsumer) assign(gctx context.Context, a Assignment) (PartitionProcessor, bool) {
	s, rt := pc.s, pc.rt
	proc, err := backoff.Retry(gctx, func() (PartitionProcessor, error) {
		proc, err := s.Assigned(gctx, a)
		switch {
		case err == nil:
			return proc, nil
		case gctx.Err() != nil || topics.IsFatal(err):
			return nil, backoff.Permanent(err)
		}
		rt.log.Warn("partition assignment failed; retrying", "stage", s.Name, "partition", a.Partition, "error", err)
		return nil, err
	}, backoff.WithBackOff(newBackOff(200*time.Millisecond, 5*time.Second)), backoff.WithMaxElapsedTime(0))
	if err != nil {
		if gctx.Err() == nil && topics.IsFatal(err) {
			rt.fail(fmt.Errorf("stage %s partition %d: %w", s.Name, a.Partition, err))
		}
		return nil, false
	}
	return proc, true
}

// reader opens the partition's reader at its committed offset (the first
// one when nothing is committed).
func (pc *partitionConsumer) reader(pa kafka.PartitionAssignment) (*kafka.Reader, error) {
	rt := pc.rt
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers: rt.cfg.Kafka.Brokers, Dialer: rt.cfg.Kafka.Dialer(), Topic: pc.s.Input, Partition: pa.ID,
		MinBytes: 1, MaxBytes: topics.DefaultMaxMessageBytes + 1<<20, MaxWait: 250 * time.Millisecond,
		ReadBackoffMin: 50 * time.Millisecond, ReadBackoffMax: time.Second, MaxAttempts: 10,
	})
	start := pa.Offset
	if start < 0 {
		start = kafka.FirstOffset
	}
	if err := r.SetOffset(start); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

func (pc *partitionConsumer) runPartition(gctx context.Context, gen *kafka.Generation, pa kafka.PartitionAssignment) {
	s, rt := pc.s, pc.rt
	a := Assignment{Topic: s.Input, Partition: pa.ID, Committed: pa.Offset}
	if a.Committed < 0 {
		a.Committed = -1
	}
	proc, ok := pc.assign(gctx, a)
	if !ok {
		return
	}
	r, err := pc.reader(pa)
	if err != nil {
		rt.log.Error("set offset", "stage", s.Name, "partition", pa.ID, "error", err)
		return
	}
	defer r.Close()

	committed := a.Committed
	commit := func() {
		off, ok := proc.CommitOffset()
		if !ok || off == committed {
			return
		}
		err := gen.CommitOffsets(map[string]map[int]int64{s.Input: {pa.ID: off}})
		if err != nil {
			rt.log.Warn("commit failed", "stage", s.Name, "partition", pa.ID, "offset", off, "error", err)
			return
		}
		committed = off
	}
	defer func() {
		commit()
		cctx, cancel := context.WithTimeout(context.Background(), rt.cfg.ShutdownTimeout)
		defer cancel()
		if err := proc.Close(cctx); err != nil {
			rt.log.Warn("close partition processor", "stage", s.Name, "partition", pa.ID, "error", err)
		}
		if s.Revoked != nil {
			s.Revoked(a)
		}
	}()

	nextTick := time.Now().Add(s.TickInterval)
	for gctx.Err() == nil {
		fctx, cancel := context.WithDeadline(gctx, nextTick)
		m, err := r.FetchMessage(fctx)
		cancel()
		switch {
		case err == nil:
			rt.metrics.In.WithLabelValues(s.Name, m.Topic).Inc()
			rt.metrics.lag(s.Name, m.Topic, m.Partition, m.Offset, m.HighWaterMark)
			if !pc.process(gctx, proc, fromKafka(m)) {
				return
			}
		case gctx.Err() != nil:
			return
		case errors.Is(err, context.DeadlineExceeded):
		default:
			rt.log.Warn("fetch failed", "stage", s.Name, "partition", pa.ID, "error", err)
			select {
			case <-gctx.Done():
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
		if now := time.Now(); !now.Before(nextTick) {
			if err := proc.Tick(gctx, now); err != nil {
				if topics.IsFatal(err) {
					rt.fail(err)
					return
				}
				if gctx.Err() != nil {
					// The partition was released (shutdown, rebalance)
					// while the tick ran: Close, or the partition's next
					// owner, does what it left undone.
					rt.log.Debug("tick cut short: partition released", "stage", s.Name, "partition", pa.ID, "error", err)
					return
				}
				rt.log.Warn("tick failed", "stage", s.Name, "partition", pa.ID, "error", err)
			}
			commit()
			nextTick = now.Add(s.TickInterval)
		}
	}
}

// process runs one record, retrying failures with backoff until they succeed;
// poison records go to the DLQ. It returns false when the partition must stop.
func (pc *partitionConsumer) process(ctx context.Context, proc PartitionProcessor, rec Record) bool {
	s, rt := pc.s, pc.rt
	var retry *backoff.ExponentialBackOff // built on the first failure: the happy path is one call
	for {
		start := time.Now()
		err := proc.Process(ctx, rec)
		rt.metrics.Latency.WithLabelValues(s.Name).Observe(time.Since(start).Seconds())
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		if topics.IsFatal(err) {
			rt.fail(err)
			return false
		}
		rt.metrics.Failures.WithLabelValues(s.Name, Reason(err)).Inc()
		// A stateful stage dead-letters only poison: dropping any other record
		// after a few retries would leave its tree open for good.
		if topics.IsPoison(err) {
			_, derr := backoff.Retry(ctx, func() (struct{}, error) {
				return struct{}{}, rt.sendDLQ(ctx, s.Name, rec, err)
			}, backoff.WithBackOff(newBackOff(100*time.Millisecond, 5*time.Second)), backoff.WithMaxElapsedTime(0))
			return derr == nil
		}
		if retry == nil {
			retry = newBackOff(rt.cfg.Retry.InitialInterval, rt.cfg.Retry.MaxInterval)
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(retry.NextBackOff()):
		}
	}
}
