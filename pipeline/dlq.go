package pipeline

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/cenkalti/backoff/v5"
	"github.com/murphy-rl/murphy/topics"
)

// Reason is a short label for err, used in metrics and DLQ records.
func Reason(err error) string {
	if r, ok := topics.PoisonLabel(err); ok {
		return r
	}
	var te *topics.Error
	if errors.As(err, &te) {
		return te.Reason()
	}
	var rp middleware.RecoveredPanicError
	if errors.As(err, &rp) {
		return "panic"
	}
	if topics.IsTransient(err) {
		return "transient"
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timeout"
	}
	return "error"
}

// describe is the human-readable part of a DLQ reason: the error without a
// panic's stack trace (which is logged instead).
func describe(err error) string {
	var rp middleware.RecoveredPanicError
	if errors.As(err, &rp) {
		return fmt.Sprintf("%v", rp.V)
	}
	return err.Error()
}

// deadLetter builds the DLQ record for rec.
func deadLetter(stage string, rec Record, err error) Out {
	dl := &topics.DeadLetter{
		SchemaVersion: topics.SchemaVersion,
		Stage:         stage,
		Reason:        Reason(err) + ": " + describe(err),
		SourceTopic:   rec.Topic,
		Partition:     rec.Partition,
		Offset:        rec.Offset,
		Key:           rec.Key,
		Value:         rec.Value,
		FailedAt:      time.Now().UTC(),
	}
	b, encErr := topics.Encode(dl)
	if encErr != nil {
		// The original bytes alone exceed the limit: keep the coordinates.
		dl.Value = nil
		dl.Reason += fmt.Sprintf(" (original %d bytes not kept: %v)", len(rec.Value), encErr)
		b, _ = topics.Encode(dl)
	}
	return Out{Topic: "", Key: string(rec.Key), Value: b, Headers: map[string]string{
		"reason": Reason(err), "stage": stage, "source_topic": rec.Topic,
		"source_partition": fmt.Sprint(rec.Partition), "source_offset": fmt.Sprint(rec.Offset),
	}}
}

// dlqMiddleware sends records whose handling failed for good to the DLQ and
// acks them, so the stage continues. If the DLQ write itself fails the error
// is returned and the record is redelivered.
func (rt *Runtime) dlqMiddleware(stage string) message.HandlerMiddleware {
	return func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			out, err := h(msg)
			if err == nil {
				return out, nil
			}
			if topics.IsFatal(err) {
				rt.fail(fmt.Errorf("stage %s: %w", stage, err))
				return nil, err
			}
			if topics.IsTransient(err) || msg.Context().Err() != nil {
				// Transient, or the stage is shutting down under the
				// handler: nothing is known to be wrong with the record.
				// Nack: the record is redelivered after a pause.
				rt.log.Warn("transient failure; record will be redelivered", "stage", stage, "error", err)
				return nil, err
			}
			rec := recordOf(msg)
			if perr := rt.sendDLQ(msg.Context(), stage, rec, err); perr != nil {
				return nil, errors.Join(err, perr)
			}
			return nil, nil
		}
	}
}

func (rt *Runtime) sendDLQ(ctx context.Context, stage string, rec Record, err error) error {
	dl := deadLetter(stage, rec, err)
	dl.Topic = rt.cfg.Catalog.Topic(topics.DLQ)
	rt.log.Warn("record sent to DLQ", "stage", stage, "topic", rec.Topic, "partition", rec.Partition,
		"offset", rec.Offset, "reason", Reason(err), "error", describe(err))
	if perr := rt.producer.Produce(context.WithoutCancel(ctx), dl); perr != nil {
		return fmt.Errorf("write DLQ: %w", perr)
	}
	rt.metrics.DLQ.WithLabelValues(stage, Reason(err)).Inc()
	rt.metrics.Out.WithLabelValues(stage, dl.Topic).Inc()
	return nil
}

// retryMiddleware retries retriable errors with exponential backoff and
// jitter. The happy path is one call: no backoff state is built unless the
// handler fails.
func (rt *Runtime) retryMiddleware(stage string) message.HandlerMiddleware {
	cfg := rt.cfg.Retry
	return func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			out, err := h(msg)
			if err == nil || topics.IsPoison(err) || topics.IsFatal(err) {
				return out, err
			}
			b := backoff.NewExponentialBackOff()
			b.InitialInterval, b.MaxInterval, b.Multiplier, b.RandomizationFactor = cfg.InitialInterval, cfg.MaxInterval, 2, 0.2
			for attempt := 1; attempt <= cfg.MaxRetries; attempt++ {
				select {
				case <-msg.Context().Done():
					return nil, topics.Transient(msg.Context().Err())
				case <-time.After(b.NextBackOff()):
				}
				rt.log.Debug("retrying record", "stage", stage, "attempt", attempt, "error", err)
				if out, err = h(msg); err == nil || topics.IsPoison(err) || topics.IsFatal(err) {
					return out, err
				}
			}
			// A transient failure outlasting the retries is nacked
			// (redelivered), not dead-lettered: see dlqMiddleware.
			return out, err
		}
	}
}
