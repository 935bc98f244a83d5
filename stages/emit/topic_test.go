package emit

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	dto "github.com/prometheus/client_model/go"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/pipeline/pipelinetest"
	"github.com/murphy-rl/murphy/topics"
)

// topicStage is a stage writing to the batches topic of a fresh catalog
// (and to files in dir when dir is set).
func topicStage(t *testing.T, brokers []string, cat topics.Catalog, dir string, mod func(*Config)) (*Stage, pipeline.Producer) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Dir, cfg.Formats = dir, []string{FormatIPC}
	cfg.ReadBackTimeout = 30 * time.Second
	if mod != nil {
		mod(&cfg)
	}
	prod := pipeline.NewProducer(pipelinetest.Kafka(brokers))
	t.Cleanup(func() { prod.Close() })
	s, err := NewStage(cfg, prod, cat, pipelinetest.Kafka(brokers), nil)
	if err != nil {
		t.Fatal(err)
	}
	return s, prod
}

// topicRows reads n batch messages and returns their rows, checking each
// message's headers against its content and its partition against its
// source partition.
func topicRows(t *testing.T, brokers []string, cat topics.Catalog, n int) ([]row, []pipeline.Record) {
	t.Helper()
	recs := pipelinetest.ReadN(t, brokers, cat.Topic(topics.Batches), n, 30*time.Second)
	if len(recs) != n {
		t.Fatalf("%d batch messages, want %d", len(recs), n)
	}
	var rows []row
	for _, m := range recs {
		rec, err := DecodeStream(memory.DefaultAllocator, m.Value)
		if err != nil {
			t.Fatal(err)
		}
		got := readRows(t, rec)
		rec.Release()
		h := m.Headers
		r, err := ParseBatchID(h[HeaderBatchID])
		if err != nil {
			t.Fatal(err)
		}
		if h[HeaderRows] != strconv.Itoa(len(got)) || h[HeaderSourcePartition] != strconv.Itoa(r.Partition) ||
			h[HeaderFirstOffset] != strconv.FormatInt(r.First, 10) || h[HeaderLastOffset] != strconv.FormatInt(r.Last, 10) ||
			h[HeaderSourceTopic] != cat.Topic(topics.Credited) || h[HeaderSchemaVersion] != strconv.Itoa(SchemaVersion) {
			t.Fatalf("headers %v do not describe batch %s of %d rows", h, r, len(got))
		}
		if m.Partition != r.Partition%cat.Partitions {
			t.Fatalf("batch of source partition %d on batches partition %d", r.Partition, m.Partition)
		}
		for _, row := range got {
			if row.BatchID != r.BatchID() {
				t.Fatalf("row of batch %s in message %s", row.BatchID, r)
			}
		}
		rows = append(rows, got...)
	}
	return rows, recs
}

func TestTopicSinkPublishesSelfContainedStreams(t *testing.T) {
	brokers := pipelinetest.Embedded(t)
	cat := pipelinetest.Catalog(t, brokers, 3)
	s, _ := topicStage(t, brokers, cat, "", func(c *Config) { c.MaxRows = 10; c.Compression = CompressionLZ4 })
	trees := genTrees(20, 30, testCreditConfig())
	want := 0
	for p := 0; p < 3; p++ {
		proc := assign(t, s, p, -1)
		for i := range trees {
			if err := proc.Process(t.Context(), record(t, cat.Topic(topics.Credited), p, int64(i), &trees[i])); err != nil {
				t.Fatal(err)
			}
		}
		if err := proc.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		want += len(expectedRows(Range{}, treesAt(0, trees)))
	}
	batches := int(s.metrics.testBatches("topic"))
	rows, _ := topicRows(t, brokers, cat, batches)
	if len(rows) != want {
		t.Fatalf("%d rows on the topic, want %d", len(rows), want)
	}
}

// A stage that crashed after producing batches but before its offsets were
// committed resumes after the last batch on the topic: nothing twice.
func TestTopicRestartResumesAfterLastBatch(t *testing.T) {
	brokers := pipelinetest.Embedded(t)
	cat := pipelinetest.Catalog(t, brokers, 2)
	trees := genTrees(21, 80, testCreditConfig())
	src := cat.Topic(topics.Credited)
	total := 0
	for _, crashAt := range []int{23, 24, 61, len(trees)} {
		s, _ := topicStage(t, brokers, cat, "", func(c *Config) { c.MaxRows = 6 })
		proc := assign(t, s, 1, 0) // nothing committed: everything is redelivered
		for i := 0; i < crashAt; i++ {
			if err := proc.Process(t.Context(), record(t, src, 1, int64(i), &trees[i])); err != nil {
				t.Fatal(err)
			}
		}
		if crashAt == len(trees) {
			if err := proc.Close(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		total += int(s.metrics.testBatches("topic"))
	}
	rows, _ := topicRows(t, brokers, cat, total)
	seen := map[string]int{}
	for _, r := range rows {
		seen[rowKey(r)]++
	}
	want := expectedRows(Range{}, treesAt(0, trees))
	for _, w := range want {
		if seen[rowKey(w)] != 1 {
			t.Fatalf("%s appears %d times", rowKey(w), seen[rowKey(w)])
		}
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(rows), len(want))
	}
}

// Topic ahead of the files (crash before the file was completed): the files
// get exactly the batches the topic holds, with the same ids.
func TestFilesCatchUpWithTopicBatches(t *testing.T) {
	brokers := pipelinetest.Embedded(t)
	cat := pipelinetest.Catalog(t, brokers, 1)
	dir := t.TempDir()
	src := cat.Topic(topics.Credited)
	trees := genTrees(22, 50, testCreditConfig())
	s, _ := topicStage(t, brokers, cat, dir, func(c *Config) { c.MaxRows = 8; c.FileMaxBytes = 1 << 30 })
	proc := assign(t, s, 0, -1)
	for i := range 30 {
		if err := proc.Process(t.Context(), record(t, src, 0, int64(i), &trees[i])); err != nil {
			t.Fatal(err)
		}
	}
	committed, _ := proc.CommitOffset()
	if first, ok := proc.(*processor).files[0].pendingFirst(); !ok || committed != first {
		t.Fatalf("commit %d while the open file starts at %d", committed, first)
	}
	first := int(s.metrics.testBatches("topic"))
	// crash: the open file is lost, the topic keeps its batches
	s2, _ := topicStage(t, brokers, cat, dir, func(c *Config) { c.MaxRows = 3 })
	proc2 := assign(t, s2, 0, committed)
	for i := int(committed); i < len(trees); i++ {
		if err := proc2.Process(t.Context(), record(t, src, 0, int64(i), &trees[i])); err != nil {
			t.Fatal(err)
		}
	}
	if err := proc2.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	total := first + int(s2.metrics.testBatches("topic"))
	rows, _ := topicRows(t, brokers, cat, total)
	topicIDs, _ := batchesOf(rows)
	fileIDs, _ := batchesOf(readDir(t, dir)[FormatIPC])
	if len(topicIDs) != len(fileIDs) {
		t.Fatalf("topic has %d batches, files %d:\n%v\n%v", len(topicIDs), len(fileIDs), topicIDs, fileIDs)
	}
	for i := range topicIDs {
		if topicIDs[i] != fileIDs[i] {
			t.Fatalf("batch %d: topic %s, files %s", i, topicIDs[i], fileIDs[i])
		}
	}
	seen := map[string]int{}
	for _, r := range rows {
		seen[rowKey(r)]++
	}
	for _, w := range expectedRows(Range{}, treesAt(0, trees)) {
		if seen[rowKey(w)] != 1 {
			t.Fatalf("%s appears %d times on the topic", rowKey(w), seen[rowKey(w)])
		}
	}
}

// testBatches reads the batches counter of a sink.
func (m *Metrics) testBatches(sink string) float64 {
	var d dto.Metric
	if err := m.batches.WithLabelValues(sink).Write(&d); err != nil {
		panic(err)
	}
	return d.GetCounter().GetValue()
}

// Files ahead of the topic (the topic sink was turned on later): the topic
// gets the batches the files hold, with their ids, then new ones.
func TestTopicCatchesUpWithFileBatches(t *testing.T) {
	brokers := pipelinetest.Embedded(t)
	cat := pipelinetest.Catalog(t, brokers, 1)
	dir := t.TempDir()
	src := cat.Topic(topics.Credited)
	trees := genTrees(23, 40, testCreditConfig())
	files := fileStage(t, dir, func(c *Config) { c.MaxRows = 7; c.Formats = []string{FormatIPC} })
	files.cat = cat
	proc := assign(t, files, 0, -1)
	for i := range 25 {
		if err := proc.Process(t.Context(), record(t, src, 0, int64(i), &trees[i])); err != nil {
			t.Fatal(err)
		}
	}
	if err := proc.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	s, _ := topicStage(t, brokers, cat, dir, func(c *Config) { c.MaxRows = 4 })
	proc2 := assign(t, s, 0, 0)
	for i := range trees {
		if err := proc2.Process(t.Context(), record(t, src, 0, int64(i), &trees[i])); err != nil {
			t.Fatal(err)
		}
	}
	if err := proc2.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	rows, _ := topicRows(t, brokers, cat, int(s.metrics.testBatches("topic")))
	topicIDs, _ := batchesOf(rows)
	fileIDs, _ := batchesOf(readDir(t, dir)[FormatIPC])
	if len(topicIDs) != len(fileIDs) {
		t.Fatalf("topic %v\nfiles %v", topicIDs, fileIDs)
	}
	for i := range topicIDs {
		if topicIDs[i] != fileIDs[i] {
			t.Fatalf("batch %d: topic %s, files %s", i, topicIDs[i], fileIDs[i])
		}
	}
	if len(rows) != len(expectedRows(Range{}, treesAt(0, trees))) {
		t.Fatalf("%d rows on the topic", len(rows))
	}
}

// When the batches topic cannot be read back (no broker, no such topic), the
// assignment fails with a ReadBackError instead of risking a duplicate batch.
func TestTopicReadBackFailureFailsAssignment(t *testing.T) {
	brokers := pipelinetest.Embedded(t)
	for _, c := range []struct {
		name   string
		kafka  []string
		create bool
	}{
		{"no broker", []string{"127.0.0.1:1"}, true},
		{"no batches topic", brokers, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cat := topics.Catalog{Prefix: pipelinetest.Unique(t) + ".", Partitions: 2}
			if c.create {
				cat = pipelinetest.Catalog(t, brokers, 2)
			}
			cfg := DefaultConfig()
			cfg.ReadBackTimeout = 5 * time.Second
			prod := pipeline.NewProducer(pipelinetest.Kafka(brokers))
			t.Cleanup(func() { prod.Close() })
			s, err := NewStage(cfg, prod, cat, pipelinetest.Kafka(c.kafka), nil)
			if err != nil {
				t.Fatal(err)
			}
			spec := s.Spec()
			start := time.Now()
			_, err = spec.Assigned(t.Context(), pipeline.Assignment{Topic: spec.Input, Partition: 1, Committed: -1})
			var rb *ReadBackError
			if !errors.As(err, &rb) || rb.Topic != cat.Topic(topics.Batches) {
				t.Fatalf("assignment: %v, want a ReadBackError for %s", err, cat.Topic(topics.Batches))
			}
			t.Logf("assignment failed after %v: %v", time.Since(start), err)
			if d := time.Since(start); d > cfg.ReadBackTimeout+2*time.Second {
				t.Fatalf("assignment failed after %v, beyond the read-back timeout %v", d, cfg.ReadBackTimeout)
			}
		})
	}
}
