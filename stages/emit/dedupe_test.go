package emit

import (
	"context"
	"reflect"
	"testing"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/topics"
)

func TestDedupeWindow(t *testing.T) {
	d := newDedupe(4)
	steps := []struct {
		key string
		off int64
		dup bool
	}{
		{"a", 0, false}, {"b", 1, false}, {"a", 2, true}, {"a", 2, false}, // the same record again is not a duplicate
		{"c", 3, false}, {"a", 6, true}, // 2 is within 4 offsets
		{"b", 9, false},                  // 1 is beyond the window
		{"", 10, false}, {"", 11, false}, // no key, no dedupe
		{"b", 13, true},
	}
	for _, s := range steps {
		if got := d.see(s.key, s.off); got != s.dup {
			t.Errorf("see(%q, %d) = %v, want %v", s.key, s.off, got, s.dup)
		}
	}
	if off := newDedupe(0); off.see("a", 0) || off.see("a", 1) {
		t.Error("window 0 dropped a record")
	}
}

// A credited log where some trees were written twice (a retried write):
// every tree lands once in every sink, across crashes at any point (the
// restarted processor reads the window before its first record back), and a
// lagging sink rebuilt after a crash gets the same batches as the other.
func TestDuplicateTreesEmittedOnceAcrossRestarts(t *testing.T) {
	trees := genTrees(9, 120, testCreditConfig())
	var log []pipeline.Record
	for i := range trees {
		log = append(log, record(t, "t.credited", 0, int64(len(log)), &trees[i]))
		if i%7 == 3 && i > 3 {
			// The duplicate of an earlier tree, a few records later.
			log = append(log, record(t, "t.credited", 0, int64(len(log)), &trees[i-2]))
		}
	}
	readLog := func(_ context.Context, _ pipeline.KafkaConfig, _ string, _ int, from, to int64, fn func(pipeline.Record) error) error {
		for _, r := range log[from:min(to, int64(len(log)))] {
			if err := fn(r); err != nil {
				return err
			}
		}
		return nil
	}
	dir := t.TempDir()
	committed := int64(-1)
	next := int64(0)
	crashes := []int64{12, 13, 40, 41, 77, 100}
	for _, crashAt := range append(crashes, int64(len(log))) {
		s := fileStage(t, dir, func(c *Config) { c.MaxRows = 9; c.FileMaxBytes = 20_000; c.DedupeWindow = 16 })
		s.kcfg.Brokers, s.readRange = []string{"log:0"}, readLog
		proc := assign(t, s, 0, committed)
		if committed >= 0 {
			next = committed
		}
		for ; next < crashAt; next++ {
			if err := proc.Process(t.Context(), log[next]); err != nil {
				t.Fatal(err)
			}
			if next%5 == 0 {
				if c, ok := proc.CommitOffset(); ok {
					committed = c
				}
			}
		}
		if crashAt == int64(len(log)) {
			if err := proc.Close(t.Context()); err != nil {
				t.Fatal(err)
			}
		} else if p := proc.(*processor); crashAt%2 == 0 && len(p.files) > 0 {
			// Complete one format's file only, then crash: the other lags.
			if err := p.files[0].finish(); err != nil {
				t.Fatal(err)
			}
		}
	}
	got := readDir(t, dir)
	want := expectedRows(Range{}, treesAt(0, trees))
	for _, format := range []string{FormatIPC, FormatParquet} {
		count := map[string]int{}
		for _, r := range got[format] {
			count[rowKey(r)]++
		}
		for _, w := range want {
			if count[rowKey(w)] != 1 {
				t.Fatalf("%s: row %s appears %d times", format, rowKey(w), count[rowKey(w)])
			}
		}
		if len(got[format]) != len(want) {
			t.Fatalf("%s: %d rows, want %d", format, len(got[format]), len(want))
		}
	}
	ipcIDs, _ := batchesOf(got[FormatIPC])
	pqIDs, _ := batchesOf(got[FormatParquet])
	if !reflect.DeepEqual(ipcIDs, pqIDs) {
		t.Fatalf("formats disagree on batches:\n%v\n%v", ipcIDs, pqIDs)
	}
}

// TestMalformedRecordUnderAnEarlierKeyIsDeadLettered: a record that is not
// a credited tree is bad input even when its key names a tree already
// seen: its error goes to the DLQ; it is not dropped as a duplicate.
func TestMalformedRecordUnderAnEarlierKeyIsDeadLettered(t *testing.T) {
	trees := genTrees(3, 1, testCreditConfig())
	s := fileStage(t, t.TempDir(), func(c *Config) { c.DedupeWindow = 16 })
	proc := assign(t, s, 0, -1)
	first := record(t, "t.credited", 0, 0, &trees[0])
	if err := proc.Process(t.Context(), first); err != nil {
		t.Fatal(err)
	}
	bad := first
	bad.Offset, bad.Value = 1, []byte("{")
	err := proc.Process(t.Context(), bad)
	if err == nil || !topics.IsPoison(err) {
		t.Fatalf("malformed record under a seen key: %v, want a poison error", err)
	}
	if v := counter(s.metrics.duplicates); v != 0 {
		t.Fatalf("counted as a duplicate: %v", v)
	}
}
