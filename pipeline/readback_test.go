package pipeline_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/pipeline/pipelinetest"
)

// readBackBackends are the brokers every read-back test runs against.
var readBackBackends = []struct {
	name     string
	brokers  func(testing.TB) []string
	embedded bool
}{{"embedded", pipelinetest.Embedded, true}, {"kafka", pipelinetest.Brokers, false}}

// createTopic creates a topic unique to the test and returns its name.
func createTopic(t *testing.T, brokers []string, partitions int, configs map[string]string) string {
	t.Helper()
	name := pipelinetest.Unique(t)
	tc := kafka.TopicConfig{Topic: name, NumPartitions: partitions, ReplicationFactor: 1}
	for k, v := range configs {
		tc.ConfigEntries = append(tc.ConfigEntries, kafka.ConfigEntry{ConfigName: k, ConfigValue: v})
	}
	client := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 30 * time.Second}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	res, err := client.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{tc}})
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Errors[name]; err != nil {
		t.Fatal(err)
	}
	for { // until its leader is known
		if _, _, err := pipeline.PartitionBounds(ctx, pipelinetest.Kafka(brokers), name, 0); err == nil {
			return name
		}
		select {
		case <-ctx.Done():
			t.Fatalf("topic %s not ready: %v", name, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// readAll returns the records ReadRange delivers for [from, to).
func readAll(t *testing.T, brokers []string, topic string, from, to int64) []pipeline.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var got []pipeline.Record
	err := pipeline.ReadRange(ctx, pipelinetest.Kafka(brokers), topic, 0, from, to, func(r pipeline.Record) error {
		got = append(got, r)
		return nil
	})
	if err != nil {
		t.Fatalf("read [%d, %d): %v", from, to, err)
	}
	return got
}

func offsetsOf(recs []pipeline.Record) []int64 {
	out := make([]int64, len(recs))
	for i, r := range recs {
		out[i] = r.Offset
	}
	return out
}

func TestReadBackPartitionsAndBounds(t *testing.T) {
	for _, b := range readBackBackends {
		t.Run(b.name, func(t *testing.T) {
			brokers := b.brokers(t)
			kc := pipelinetest.Kafka(brokers)
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			three := createTopic(t, brokers, 3, nil)
			if n, err := pipeline.Partitions(ctx, kc, three); err != nil || n != 3 {
				t.Fatalf("partitions of a 3-partition topic: %d, %v", n, err)
			}
			missing := pipelinetest.Unique(t) + "-missing"
			for range 2 { // the first call must not have created it
				if n, err := pipeline.Partitions(ctx, kc, missing); err == nil {
					t.Fatalf("partitions of a missing topic: %d, no error", n)
				}
			}
			one := createTopic(t, brokers, 1, nil)
			if first, end, err := pipeline.PartitionBounds(ctx, kc, one, 0); err != nil || first != 0 || end != 0 {
				t.Fatalf("bounds of an empty partition: [%d, %d), %v", first, end, err)
			}
			var outs []pipeline.Out
			for i := range 7 {
				outs = append(outs, pipeline.Out{Topic: one, Key: strconv.Itoa(i), Value: []byte("v")})
			}
			pipelinetest.Produce(t, brokers, outs...)
			if first, end, err := pipeline.PartitionBounds(ctx, kc, one, 0); err != nil || first != 0 || end != 7 {
				t.Fatalf("bounds after 7 records: [%d, %d), %v, want [0, 7)", first, end, err)
			}
			if _, _, err := pipeline.PartitionBounds(ctx, kc, one, 5); err == nil {
				t.Fatal("bounds of a partition the topic does not have: no error")
			}
			if err := pipeline.ReadRange(ctx, kc, one, 5, 0, 10, func(pipeline.Record) error { return nil }); err == nil {
				t.Fatal("read of a partition the topic does not have: no error")
			}
		})
	}
}

func TestReadRangeDeliversExactlyTheRange(t *testing.T) {
	const n, big = 40, 20 // record big is larger than one fetch asks for
	for _, b := range readBackBackends {
		t.Run(b.name, func(t *testing.T) {
			brokers := b.brokers(t)
			topic := createTopic(t, brokers, 1, map[string]string{"max.message.bytes": strconv.Itoa(8 << 20)})
			values := make([][]byte, n)
			var outs []pipeline.Out
			for i := range n {
				values[i] = []byte(fmt.Sprintf("value-%d", i))
				if i == big {
					values[i] = bytes.Repeat([]byte{byte(i)}, 3<<20)
				}
				outs = append(outs, pipeline.Out{Topic: topic, Key: fmt.Sprintf("key-%d", i), Value: values[i],
					Headers: map[string]string{"i": strconv.Itoa(i)}})
			}
			pipelinetest.Produce(t, brokers, outs...)
			for _, c := range []struct {
				name         string
				from, to     int64
				wantFrom, wn int64 // first offset and count expected
			}{
				{"everything", 0, n, 0, n},
				{"middle", 10, 25, 10, 15},
				{"from below the log start", -100, 5, 0, 5},
				{"to beyond the high watermark", 35, 1 << 40, 35, 5},
				{"the large record alone", big, big + 1, big, 1},
				{"around the large record", big - 1, big + 2, big - 1, 3},
				{"last record", n - 1, n, n - 1, 1},
				{"empty", 7, 7, 0, 0},
				{"inverted", 9, 3, 0, 0},
				{"beyond the end", n, n + 10, 0, 0},
			} {
				t.Run(c.name, func(t *testing.T) {
					got := readAll(t, brokers, topic, c.from, c.to)
					if int64(len(got)) != c.wn {
						t.Fatalf("[%d, %d): %d records %v, want %d", c.from, c.to, len(got), offsetsOf(got), c.wn)
					}
					for j, r := range got {
						i := c.wantFrom + int64(j)
						if r.Offset != i || r.Partition != 0 || r.Topic != topic || string(r.Key) != fmt.Sprintf("key-%d", i) ||
							r.Headers["i"] != strconv.FormatInt(i, 10) || !bytes.Equal(r.Value, values[i]) || r.Time.IsZero() {
							t.Fatalf("record %d: offset %d key %q headers %v, %d value bytes; want offset %d",
								j, r.Offset, r.Key, r.Headers, len(r.Value), i)
						}
					}
				})
			}
			t.Run("an error of fn stops the read and is returned", func(t *testing.T) {
				stop := errors.New("enough")
				calls := 0
				err := pipeline.ReadRange(t.Context(), pipelinetest.Kafka(brokers), topic, 0, 0, n, func(r pipeline.Record) error {
					if calls++; calls == 3 {
						return stop
					}
					return nil
				})
				if err != stop || calls != 3 {
					t.Fatalf("got %v after %d calls, want the error of fn after 3", err, calls)
				}
			})
			t.Run("an ended context stops the read", func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				calls := 0
				err := pipeline.ReadRange(ctx, pipelinetest.Kafka(brokers), topic, 0, 0, n, func(r pipeline.Record) error {
					if calls++; calls == 2 {
						cancel()
					}
					return nil
				})
				if !errors.Is(err, context.Canceled) || calls != 2 {
					t.Fatalf("got %v after %d calls, want context.Canceled after 2", err, calls)
				}
			})
		})
	}
}

// Compaction leaves gaps inside and between record batches, including at the
// end of a batch; ReadRange delivers the records left, in order, and a range
// made only of gaps is empty.
func TestReadRangeSkipsCompactedGaps(t *testing.T) {
	// Each group of keys is produced as its own batch (a segment of its own
	// on Kafka). Batch 0 is superseded entirely; batch 1 keeps f, g, h and
	// ends in a gap; the last batch (the active segment) is never cleaned.
	batches := [][]string{{"a", "b", "c", "d", "e"}, {"f", "a", "g", "h", "b"}, {"a", "b", "d", "e", "c"}, {"z"}}
	want := []int64{5, 7, 8, 10, 11, 12, 13, 14, 15}
	for _, b := range readBackBackends {
		t.Run(b.name, func(t *testing.T) {
			brokers := b.brokers(t)
			configs := map[string]string{"cleanup.policy": "compact", "segment.ms": "100"}
			if b.embedded {
				setCleanerBackoff(t, brokers, "100") // before the topic: it starts the cleaner's timer
			} else {
				configs["min.cleanable.dirty.ratio"] = "0.001"
			}
			topic := createTopic(t, brokers, 1, configs)
			for i, keys := range batches {
				var outs []pipeline.Out
				for _, k := range keys {
					outs = append(outs, pipeline.Out{Topic: topic, Key: k, Value: []byte(fmt.Sprintf("%s-%d", k, i))})
				}
				pipelinetest.Produce(t, brokers, outs...)
				time.Sleep(300 * time.Millisecond) // past segment.ms: the next batch rolls a new segment
			}
			deadline := time.Now().Add(90 * time.Second) // the broker's cleaner runs every 15s
			var got []pipeline.Record
			for {
				got = readAll(t, brokers, topic, 0, 16)
				if len(got) == len(want) || time.Now().After(deadline) {
					break
				}
				time.Sleep(500 * time.Millisecond)
			}
			if fmt.Sprint(offsetsOf(got)) != fmt.Sprint(want) {
				t.Fatalf("offsets after compaction %v, want %v", offsetsOf(got), want)
			}
			for _, r := range got {
				if string(r.Key) != keyAt(batches, r.Offset) {
					t.Fatalf("offset %d has key %q, want %q", r.Offset, r.Key, keyAt(batches, r.Offset))
				}
			}
			for _, c := range []struct {
				from, to int64
				want     []int64
			}{
				{0, 5, nil}, {6, 7, nil}, {9, 10, nil}, {0, 6, []int64{5}}, {6, 10, []int64{7, 8}},
				{9, 11, []int64{10}}, {-1, 100, want},
			} {
				if got := offsetsOf(readAll(t, brokers, topic, c.from, c.to)); fmt.Sprint(got) != fmt.Sprint(c.want) {
					t.Fatalf("[%d, %d): offsets %v, want %v", c.from, c.to, got, c.want)
				}
			}
		})
	}
}

func keyAt(batches [][]string, off int64) string {
	for _, keys := range batches {
		if off < int64(len(keys)) {
			return keys[off]
		}
		off -= int64(len(keys))
	}
	return ""
}

// setCleanerBackoff sets how often the embedded broker compacts.
func setCleanerBackoff(t *testing.T, brokers []string, ms string) {
	t.Helper()
	client := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 30 * time.Second}
	md, err := client.Metadata(t.Context(), &kafka.MetadataRequest{})
	if err != nil || len(md.Brokers) != 1 {
		t.Fatalf("metadata: %v brokers, %v", len(md.Brokers), err)
	}
	res, err := client.IncrementalAlterConfigs(t.Context(), &kafka.IncrementalAlterConfigsRequest{
		Resources: []kafka.IncrementalAlterConfigsRequestResource{{
			ResourceType: kafka.ResourceTypeBroker,
			ResourceName: strconv.Itoa(md.Brokers[0].ID),
			Configs: []kafka.IncrementalAlterConfigsRequestConfig{{
				Name: "log.cleaner.backoff.ms", Value: ms, ConfigOperation: kafka.ConfigOperationSet,
			}},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Resources {
		if r.Error != nil {
			t.Fatal(r.Error)
		}
	}
}

// A broker that goes away fails the read-back after a few retries instead of
// hanging; a failure of the read is not mistaken for an end of the range.
func TestReadRangeFailsWhenTheBrokerIsGone(t *testing.T) {
	e, err := pipeline.StartEmbedded(pipeline.EmbeddedConfig{})
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	t.Cleanup(func() {
		if calls == 0 {
			e.Close()
		}
	})
	brokers := e.Brokers()
	topic := createTopic(t, brokers, 1, map[string]string{"max.message.bytes": strconv.Itoa(8 << 20)})
	for i := range 5 { // one record batch each, too large for two to share a fetch
		pipelinetest.Produce(t, brokers, pipeline.Out{Topic: topic, Key: strconv.Itoa(i), Value: bytes.Repeat([]byte("v"), 800<<10)})
	}
	kc := pipelinetest.Kafka(brokers)
	start := time.Now()
	err = pipeline.ReadRange(t.Context(), kc, topic, 0, 0, 5, func(pipeline.Record) error {
		if calls++; calls == 1 {
			e.Close()
		}
		return nil
	})
	t.Logf("read %d records in %v: %v", calls, time.Since(start), err)
	if err == nil || calls == 5 {
		t.Fatalf("read %d of 5 records with the broker gone after the first; error %v", calls, err)
	}
	if time.Since(start) > 20*time.Second {
		t.Fatalf("read back took %v with the broker gone", time.Since(start))
	}
	if _, _, err := pipeline.PartitionBounds(t.Context(), kc, topic, 0); err == nil {
		t.Fatal("bounds with the broker gone: no error")
	}
}

// ReadBackward hands windows newest first, each in offset order, growing
// by Growth up to MaxWindow; it stops when fn says so, at the start, or
// MaxOffsets before the end (truncated).
func TestReadBackwardWindows(t *testing.T) {
	for _, b := range readBackBackends {
		t.Run(b.name, func(t *testing.T) {
			brokers := b.brokers(t)
			kc := pipelinetest.Kafka(brokers)
			topic := createTopic(t, brokers, 1, nil)
			var outs []pipeline.Out
			for i := range 20 {
				outs = append(outs, pipeline.Out{Topic: topic, Key: strconv.Itoa(i), Value: []byte("v")})
			}
			pipelinetest.Produce(t, brokers, outs...)
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			var windows [][]int64
			collect := func(stopAt int64) func([]pipeline.Record) (bool, error) {
				return func(recs []pipeline.Record) (bool, error) {
					windows = append(windows, offsetsOf(recs))
					return len(recs) > 0 && recs[0].Offset <= stopAt, nil
				}
			}
			read, truncated, err := pipeline.ReadBackward(ctx, kc, topic, 0, pipeline.Backward{Window: 2, Growth: 2, MaxWindow: 8}, collect(-1))
			want := [][]int64{{18, 19}, {14, 15, 16, 17}, {6, 7, 8, 9, 10, 11, 12, 13}, {0, 1, 2, 3, 4, 5}}
			if err != nil || truncated || read != 20 || fmt.Sprint(windows) != fmt.Sprint(want) {
				t.Fatalf("whole partition: read %d truncated %v err %v windows %v, want %v", read, truncated, err, windows, want)
			}
			windows = nil
			read, truncated, err = pipeline.ReadBackward(ctx, kc, topic, 0, pipeline.Backward{Window: 2, Growth: 2}, collect(15))
			if err != nil || truncated || read != 6 || len(windows) != 2 {
				t.Fatalf("stopped by fn: read %d truncated %v err %v windows %v", read, truncated, err, windows)
			}
			windows = nil
			read, truncated, err = pipeline.ReadBackward(ctx, kc, topic, 0, pipeline.Backward{Window: 4, Growth: 2, MaxOffsets: 7}, collect(-1))
			if err != nil || !truncated || read != 7 || fmt.Sprint(windows) != fmt.Sprint([][]int64{{16, 17, 18, 19}, {13, 14, 15}}) {
				t.Fatalf("bounded: read %d truncated %v err %v windows %v", read, truncated, err, windows)
			}
		})
	}
}
