package pipeline_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/pipeline/pipelinetest"
	"github.com/murphy-rl/murphy/topics"
	"github.com/segmentio/kafka-go"
)

const benchRecords = 30000

func benchValues(n int) []kafka.Message {
	msgs := make([]kafka.Message, n)
	v := make([]byte, 1024)
	for i := range v {
		v[i] = byte('a' + i%26)
	}
	for i := range msgs {
		msgs[i] = kafka.Message{Key: []byte(fmt.Sprintf("tree-%d", i)), Value: v}
	}
	return msgs
}

func fill(b *testing.B, brokers []string, topic string, msgs []kafka.Message) {
	w := &kafka.Writer{Addr: kafka.TCP(brokers...), Topic: topic, Balancer: kafka.Murmur2Balancer{},
		RequiredAcks: kafka.RequireAll, BatchSize: 1000, BatchTimeout: 2 * time.Millisecond, AllowAutoTopicCreation: true}
	defer w.Close()
	for i := 0; i < len(msgs); i += 1000 {
		if err := w.WriteMessages(context.Background(), msgs[i:min(i+1000, len(msgs))]...); err != nil {
			b.Fatal(err)
		}
	}
}

// rawPassThrough is the baseline: a hand-written kafka-go loop that moves n
// records from in to out with a consumer group, batched writes (acks=all)
// and a commit per batch.
func rawPassThrough(b *testing.B, brokers []string, in, out, group string, n int) time.Duration {
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, GroupID: group, Topic: in, StartOffset: kafka.FirstOffset,
		MinBytes: 1, MaxBytes: 16 << 20, MaxWait: 50 * time.Millisecond, QueueCapacity: 1000})
	defer r.Close()
	w := &kafka.Writer{Addr: kafka.TCP(brokers...), Topic: out, Balancer: kafka.Murmur2Balancer{},
		RequiredAcks: kafka.RequireAll, BatchSize: 1000, BatchTimeout: 2 * time.Millisecond, AllowAutoTopicCreation: true}
	defer w.Close()
	ctx := context.Background()
	start := time.Now()
	batch := make([]kafka.Message, 0, 1000)
	flush := func() {
		outs := make([]kafka.Message, len(batch))
		for i, m := range batch {
			outs[i] = kafka.Message{Key: m.Key, Value: m.Value}
		}
		if err := w.WriteMessages(ctx, outs...); err != nil {
			b.Fatal(err)
		}
		if err := r.CommitMessages(ctx, batch...); err != nil {
			b.Fatal(err)
		}
	}
	for done := 0; done < n; {
		// Fill a batch until it is full or the reader has nothing for 2 ms.
		fctx, cancel := context.WithTimeout(ctx, 2*time.Millisecond)
		if len(batch) == 0 {
			cancel()
			fctx, cancel = ctx, func() {}
		}
		m, err := r.FetchMessage(fctx)
		cancel()
		if err == nil {
			batch = append(batch, m)
		}
		if len(batch) > 0 && (err != nil || len(batch) == cap(batch) || done+len(batch) == n) {
			flush()
			done += len(batch)
			batch = batch[:0]
		}
	}
	return time.Since(start)
}

// runtimePassThrough moves n records through a stage on the runtime.
func runtimePassThrough(b *testing.B, brokers []string, cat topics.Catalog, in, out string, n, conc int) time.Duration {
	var moved atomic.Int64
	doneC := make(chan struct{})
	kc := pipelinetest.Kafka(brokers)
	rt, err := pipeline.NewRuntime(pipeline.RuntimeConfig{Kafka: kc, Catalog: cat, Name: "bench", GroupPrefix: cat.Prefix})
	if err != nil {
		b.Fatal(err)
	}
	err = rt.AddStage(pipeline.Stage{Name: "pass", Inputs: []string{in}, Concurrency: conc,
		Handler: func(_ context.Context, rec pipeline.Record) ([]pipeline.Out, error) {
			return []pipeline.Out{{Topic: out, Key: string(rec.Key), Value: rec.Value}}, nil
		}})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	go func() {
		// Count the records produced (outputs are acked before inputs commit).
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for range t.C {
			if int(moved.Load()) >= n {
				close(doneC)
				return
			}
		}
	}()
	go func() { _ = rt.Run(ctx) }()
	go func() {
		for ctx.Err() == nil {
			var total float64
			mf, _ := rt.Registry().Gather()
			for _, f := range mf {
				if f.GetName() == "murphy_records_out_total" {
					for _, m := range f.Metric {
						total += m.GetCounter().GetValue()
					}
				}
			}
			moved.Store(int64(total))
			time.Sleep(5 * time.Millisecond)
		}
	}()
	<-doneC
	return time.Since(start)
}

// BenchmarkPassThrough reports records/s through a pass-through stage on the
// runtime against raw kafka-go moving the same records through the same hop,
// measured in the same run on the real broker. Target ratio ≥ 0.7.
func BenchmarkPassThrough(b *testing.B) {
	brokers := pipelinetest.Brokers(b)
	msgs := benchValues(benchRecords)
	for b.Loop() {
		cat := pipelinetest.Catalog(b, brokers, 8)
		rawIn, rawOut := cat.Topic(topics.Prompts), cat.Topic(topics.Candidates)
		rtIn, rtOut := cat.Topic(topics.Executions), cat.Topic(topics.Samples)
		fill(b, brokers, rawIn, msgs)
		fill(b, brokers, rtIn, msgs)
		raw := rawPassThrough(b, brokers, rawIn, rawOut, cat.Prefix+"raw", benchRecords)
		run := runtimePassThrough(b, brokers, cat, rtIn, rtOut, benchRecords, 2048)
		rawRate := float64(benchRecords) / raw.Seconds()
		rtRate := float64(benchRecords) / run.Seconds()
		b.ReportMetric(rawRate, "raw_records/s")
		b.ReportMetric(rtRate, "runtime_records/s")
		b.ReportMetric(rtRate/rawRate, "ratio")
	}
}
