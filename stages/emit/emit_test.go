package emit

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	json "github.com/goccy/go-json"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/topics"
)

func TestBatchIDRoundTrip(t *testing.T) {
	cases := []struct {
		id      string
		want    Range
		wantErr bool
	}{
		{id: "murphy.credited:3:100-150", want: Range{Topic: "murphy.credited", Partition: 3, First: 100, Last: 150}},
		{id: "a-b_c.credited:0:0-0", want: Range{Topic: "a-b_c.credited", Partition: 0, First: 0, Last: 0}},
		{id: "t:1:5-4", wantErr: true},
		{id: "t:x:1-2", wantErr: true},
		{id: "t:1:12", wantErr: true},
		{id: "1-2", wantErr: true},
		{id: ":1:1-2", wantErr: true},
	}
	for _, c := range cases {
		got, err := ParseBatchID(c.id)
		if (err != nil) != c.wantErr {
			t.Fatalf("%s: err %v, want error %v", c.id, err, c.wantErr)
		}
		if err == nil && (got != c.want || got.BatchID() != c.id) {
			t.Fatalf("%s: got %+v (%s)", c.id, got, got.BatchID())
		}
	}
}

func TestFileNameRoundTripAndOrder(t *testing.T) {
	rs := []Range{
		{Topic: "x.credited", Partition: 2, First: 9, Last: 99},
		{Topic: "x.credited", Partition: 2, First: 100, Last: 1000},
		{Topic: "x-y.credited", Partition: 12345, First: 0, Last: 1 << 40},
	}
	for _, r := range rs {
		for _, f := range []string{FormatIPC, FormatParquet} {
			name := FileName(r, f)
			got, format, ok := ParseFileName(name)
			if !ok || got != r || format != f {
				t.Fatalf("%s: parsed %+v %s %v", name, got, format, ok)
			}
		}
	}
	if !(FileName(rs[0], FormatIPC) < FileName(rs[1], FormatIPC)) {
		t.Fatal("file names do not sort in offset order")
	}
	for _, bad := range []string{tempFileName("x", 1, 5, FormatIPC), "x-p00001-1-2.arrow", "notes.txt"} {
		if _, _, ok := ParseFileName(bad); ok {
			t.Fatalf("%s parsed as a complete file", bad)
		}
	}
}

func TestEncodeStreamKeepsEveryValue(t *testing.T) {
	trees := genTrees(1, 40, testCreditConfig())
	st := treesAt(1000, trees)
	r := Range{Topic: "t.credited", Partition: 4, First: 1000, Last: 1039}
	s, err := NewSchema(testCreditConfig())
	if err != nil {
		t.Fatal(err)
	}
	want := expectedRows(r, st)
	if len(want) < 50 {
		t.Fatalf("generator made only %d rows", len(want))
	}
	for _, codec := range []string{CompressionNone, CompressionZstd, CompressionLZ4} {
		t.Run(codec, func(t *testing.T) {
			rec := buildBatch(memory.DefaultAllocator, s, r, st, newVocabs(), time.Now(), nil)
			defer rec.Release()
			b, err := EncodeStream(memory.DefaultAllocator, rec, codec, nil)
			if err != nil {
				t.Fatal(err)
			}
			back, err := DecodeStream(memory.DefaultAllocator, b)
			if err != nil {
				t.Fatal(err)
			}
			defer back.Release()
			got := readRows(t, back)
			if !reflect.DeepEqual(got, want) {
				for i := range got {
					if !reflect.DeepEqual(got[i], want[i]) {
						t.Fatalf("row %d:\n got %+v\nwant %+v", i, got[i], want[i])
					}
				}
				t.Fatalf("got %d rows, want %d", len(got), len(want))
			}
			cfg, err := CheckSchema(back.Schema())
			if err != nil || !reflect.DeepEqual(cfg, testCreditConfig()) {
				t.Fatalf("credit config %+v, %v", cfg, err)
			}
			if id, ok := batchIDOf(back); !ok || id != r.BatchID() {
				t.Fatalf("batch id %q %v", id, ok)
			}
		})
	}
}

func TestCheckSchemaRejectsOtherVersions(t *testing.T) {
	good, err := NewSchema(testCreditConfig())
	if err != nil {
		t.Fatal(err)
	}
	md := good.Metadata()
	withMeta := func(k, v string) *arrow.Schema {
		keys, vals := md.Keys(), md.Values()
		nk, nv := []string{}, []string{}
		for i := range keys {
			if keys[i] == k {
				if v == "" {
					continue
				}
				nk, nv = append(nk, k), append(nv, v)
				continue
			}
			nk, nv = append(nk, keys[i]), append(nv, vals[i])
		}
		m := arrow.NewMetadata(nk, nv)
		return arrow.NewSchema(good.Fields(), &m)
	}
	dropCol := arrow.NewSchema(good.Fields()[1:], &md)
	cases := []struct {
		name   string
		s      *arrow.Schema
		wantOK bool
	}{
		{"current", good, true},
		{"newer version", withMeta(MetaSchemaVersion, "2"), false},
		{"no version", withMeta(MetaSchemaVersion, ""), false},
		{"no credit config", withMeta(MetaCreditConfig, ""), false},
		{"bad credit config", withMeta(MetaCreditConfig, "{"), false},
		{"missing column", dropCol, false},
	}
	for _, c := range cases {
		_, err := CheckSchema(c.s)
		var se *SchemaError
		if c.wantOK != (err == nil) || (err != nil && !errors.As(err, &se)) {
			t.Fatalf("%s: err %v", c.name, err)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	mod := func(f func(*Config)) Config {
		c := DefaultConfig()
		f(&c)
		return c
	}
	cases := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"default", DefaultConfig(), true},
		{"files only", mod(func(c *Config) { c.Topic, c.Dir, c.Formats = false, "/tmp/x", []string{"ipc", "parquet"} }), true},
		{"no sink", mod(func(c *Config) { c.Topic = false }), false},
		{"bad codec", mod(func(c *Config) { c.Compression = "gzip" }), false},
		{"bad format", mod(func(c *Config) { c.Dir, c.Formats = "/tmp/x", []string{"csv"} }), false},
		{"twice", mod(func(c *Config) { c.Dir, c.Formats = "/tmp/x", []string{"ipc", "ipc"} }), false},
		{"zero rows", mod(func(c *Config) { c.MaxRows = 0 }), false},
		{"huge batch", mod(func(c *Config) { c.MaxBytes = 1 << 30 }), false},
		{"no age", mod(func(c *Config) { c.MaxAge = 0 }), false},
	}
	for _, c := range cases {
		if err := c.cfg.Validate(); (err == nil) != c.ok {
			t.Fatalf("%s: %v", c.name, err)
		}
	}
}

// fileStage is a stage writing only files, driven without a broker.
func fileStage(t *testing.T, dir string, mod func(*Config)) *Stage {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Topic, cfg.Dir, cfg.Formats = false, dir, []string{FormatIPC, FormatParquet}
	if mod != nil {
		mod(&cfg)
	}
	s, err := NewStage(cfg, nil, topics.Catalog{Prefix: "t.", Partitions: 2}, pipeline.KafkaConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func record(t *testing.T, topic string, p int, off int64, tree *topics.CreditedTree) pipeline.Record {
	t.Helper()
	b, err := topics.Encode(tree)
	if err != nil {
		t.Fatal(err)
	}
	return pipeline.Record{Topic: topic, Partition: p, Offset: off, Key: []byte(tree.TreeID), Value: b}
}

func assign(t *testing.T, s *Stage, p int, committed int64) pipeline.PartitionProcessor {
	t.Helper()
	spec := s.Spec()
	proc, err := spec.Assigned(t.Context(), pipeline.Assignment{Topic: spec.Input, Partition: p, Committed: committed})
	if err != nil {
		t.Fatal(err)
	}
	return proc
}

// batchesOf groups rows by batch id, in order of appearance.
func batchesOf(rows []row) (ids []string, by map[string][]row) {
	by = map[string][]row{}
	for _, r := range rows {
		if _, ok := by[r.BatchID]; !ok {
			ids = append(ids, r.BatchID)
		}
		by[r.BatchID] = append(by[r.BatchID], r)
	}
	return ids, by
}

func TestBatchesAreBoundedAndNeverSplitTrees(t *testing.T) {
	trees := genTrees(2, 120, testCreditConfig())
	cases := []struct {
		name     string
		mod      func(*Config)
		maxRows  int
		maxBytes int
	}{
		{name: "rows", mod: func(c *Config) { c.MaxRows = 7 }, maxRows: 7},
		{name: "bytes", mod: func(c *Config) { c.MaxBytes = 3000 }, maxBytes: 3000},
		{name: "one tree each", mod: func(c *Config) { c.MaxRows = 1 }, maxRows: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			s := fileStage(t, dir, c.mod)
			proc := assign(t, s, 1, -1)
			for i := range trees {
				if err := proc.Process(t.Context(), record(t, "t.credited", 1, int64(i), &trees[i])); err != nil {
					t.Fatal(err)
				}
			}
			if err := proc.Close(t.Context()); err != nil {
				t.Fatal(err)
			}
			got := readDir(t, dir)
			want := expectedRows(Range{}, treesAt(0, trees))
			for _, format := range []string{FormatIPC, FormatParquet} {
				rows := got[format]
				if len(rows) != len(want) {
					t.Fatalf("%s: %d rows, want %d", format, len(rows), len(want))
				}
				ids, by := batchesOf(rows)
				treeBatch := map[string]string{}
				prevLast := int64(-1)
				for _, id := range ids {
					r, err := ParseBatchID(id)
					if err != nil {
						t.Fatal(err)
					}
					if r.First <= prevLast {
						t.Fatalf("%s: batch %s overlaps the previous one", format, id)
					}
					prevLast = r.Last
					b := by[id]
					size := 0
					for _, row := range b {
						if row.SourceOffset < r.First || row.SourceOffset > r.Last {
							t.Fatalf("row at offset %d outside batch %s", row.SourceOffset, id)
						}
						if prev, ok := treeBatch[row.TreeID]; ok && prev != id {
							t.Fatalf("tree %s split across %s and %s", row.TreeID, prev, id)
						}
						treeBatch[row.TreeID] = id
					}
					for _, st := range treesAt(0, trees) {
						if st.Offset >= r.First && st.Offset <= r.Last {
							size += rowBytes(st.Tree)
						}
					}
					trees := map[int64]bool{}
					for _, row := range b {
						trees[row.SourceOffset] = true
					}
					if c.maxRows > 0 && len(b) > c.maxRows && len(trees) > 1 {
						t.Fatalf("batch %s: %d rows over %d trees > max %d", id, len(b), len(trees), c.maxRows)
					}
					if c.maxBytes > 0 && size > c.maxBytes && len(trees) > 1 {
						t.Fatalf("batch %s: %d bytes over %d trees > max %d", id, size, len(trees), c.maxBytes)
					}
				}
				for i := range rows {
					w := want[i]
					w.BatchID = rows[i].BatchID
					w.SourcePartition = 1
					if !reflect.DeepEqual(rows[i], w) {
						t.Fatalf("%s row %d differs:\n got %+v\nwant %+v", format, i, rows[i], w)
					}
				}
			}
		})
	}
}

func TestBatchClosesAfterMaxAge(t *testing.T) {
	dir := t.TempDir()
	s := fileStage(t, dir, func(c *Config) { c.MaxAge = time.Minute; c.Formats = []string{FormatIPC} })
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.now = func() time.Time { return clock }
	proc := assign(t, s, 0, -1)
	trees := genTrees(3, 4, testCreditConfig())
	for i := range trees {
		trees[i].Samples = trees[i].Samples[:0]
	}
	trees = append(trees, genTrees(4, 2, testCreditConfig())...)
	for i := range trees {
		if err := proc.Process(t.Context(), record(t, "t.credited", 0, int64(i), &trees[i])); err != nil {
			t.Fatal(err)
		}
	}
	if c, _ := proc.CommitOffset(); c != 0 {
		t.Fatalf("commit %d with an open batch starting at 0", c)
	}
	if err := proc.Tick(t.Context(), clock.Add(59*time.Second)); err != nil {
		t.Fatal(err)
	}
	sink := proc.(*processor).files[0]
	if sink.lastWritten() != -1 {
		t.Fatal("batch closed before max_age")
	}
	if err := proc.Tick(t.Context(), clock.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if sink.lastWritten() != int64(len(trees)-1) {
		t.Fatalf("after max_age the file sink holds through %d", sink.lastWritten())
	}
	// The batch is in an open file: not committed until the file is complete.
	if c, _ := proc.CommitOffset(); c != 0 {
		t.Fatalf("commit %d while the file is open", c)
	}
	if err := proc.Tick(t.Context(), time.Now().Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if c, _ := proc.CommitOffset(); c != int64(len(trees)) {
		t.Fatalf("commit %d after rotation, want %d", c, len(trees))
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || strings.HasPrefix(entries[0].Name(), ".") {
		t.Fatalf("files %v", entries)
	}
}

// The runtime ticks often enough that a batch is written close to its age:
// a tick of 500 ms would hold a 100 ms batch for up to 600 ms.
func TestTickFollowsMaxAge(t *testing.T) {
	for _, tc := range []struct{ tick, age, want time.Duration }{
		{500 * time.Millisecond, 2 * time.Second, 500 * time.Millisecond},
		{500 * time.Millisecond, 100 * time.Millisecond, 25 * time.Millisecond},
		{500 * time.Millisecond, 0, 500 * time.Millisecond},
	} {
		c := DefaultConfig()
		c.TickInterval, c.MaxAge = tc.tick, tc.age
		if got := c.tick(); got != tc.want {
			t.Errorf("tick %s, max_age %s: every %s, want %s", tc.tick, tc.age, got, tc.want)
		}
	}
}

func TestPoisonRecordsGoToDLQAndOthersSurvive(t *testing.T) {
	dir := t.TempDir()
	s := fileStage(t, dir, nil)
	proc := assign(t, s, 0, -1)
	trees := genTrees(5, 3, testCreditConfig())
	var bad topics.CreditedTree
	for _, c := range genTrees(6, 50, testCreditConfig()) {
		if len(c.Samples) > 0 && len(c.Samples[0].ResponseTokenIDs) > 0 {
			bad = c
			break
		}
	}
	bad.Samples[0].LossWeights = append(bad.Samples[0].LossWeights, 1)
	b, _ := json.Marshal(bad)
	recs := []pipeline.Record{
		record(t, "t.credited", 0, 0, &trees[0]),
		{Topic: "t.credited", Offset: 1, Value: []byte("{not json")},
		{Topic: "t.credited", Offset: 2, Value: []byte(`{"schema_version":99,"tree_id":"x"}`)},
		{Topic: "t.credited", Offset: 3, Value: b},
		record(t, "t.credited", 0, 4, &trees[1]),
		record(t, "t.credited", 0, 5, &trees[2]),
	}
	poison := 0
	for _, r := range recs {
		err := proc.Process(t.Context(), r)
		if err != nil {
			if topics.IsFatal(err) || !strings.Contains(err.Error(), "credited_tree") {
				t.Fatalf("offset %d: %v", r.Offset, err)
			}
			poison++
		}
	}
	if poison != 3 {
		t.Fatalf("%d poison records, want 3", poison)
	}
	if err := proc.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	got := readDir(t, dir)[FormatIPC]
	seen := map[string]bool{}
	for _, r := range got {
		seen[r.TreeID] = true
	}
	for _, tr := range trees {
		if len(tr.Samples) > 0 && !seen[tr.TreeID] {
			t.Fatalf("tree %s lost", tr.TreeID)
		}
	}
	if seen[bad.TreeID] {
		t.Fatal("malformed tree was emitted")
	}
}

// A crash (no Close) loses the open batch and the open files; the restarted
// processor starts at the committed offset and every tree ends up in exactly
// one complete file per format, with the same batch ids in both formats.
func TestRestartAfterCrashWritesEveryTreeOnce(t *testing.T) {
	trees := genTrees(7, 200, testCreditConfig())
	dir := t.TempDir()
	committed := int64(-1)
	next := int64(0)
	crashes := []int64{37, 38, 90, 91, 150}
	for _, crashAt := range append(crashes, int64(len(trees))) {
		s := fileStage(t, dir, func(c *Config) { c.MaxRows = 9; c.FileMaxBytes = 20_000 })
		proc := assign(t, s, 0, committed)
		if committed >= 0 {
			next = committed
		}
		for ; next < crashAt; next++ {
			if err := proc.Process(t.Context(), record(t, "t.credited", 0, next, &trees[next])); err != nil {
				t.Fatal(err)
			}
			if next%25 == 0 {
				if c, ok := proc.CommitOffset(); ok {
					committed = c
				}
			}
		}
		if crashAt == int64(len(trees)) {
			if err := proc.Close(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
	}
	got := readDir(t, dir)
	want := expectedRows(Range{}, treesAt(0, trees))
	for _, format := range []string{FormatIPC, FormatParquet} {
		rows := got[format]
		count := map[string]int{}
		for _, r := range rows {
			count[rowKey(r)]++
		}
		for _, w := range want {
			if count[rowKey(w)] != 1 {
				t.Fatalf("%s: row %s appears %d times", format, rowKey(w), count[rowKey(w)])
			}
		}
		if len(rows) != len(want) {
			t.Fatalf("%s: %d rows, want %d", format, len(rows), len(want))
		}
	}
	ipcIDs, _ := batchesOf(got[FormatIPC])
	pqIDs, _ := batchesOf(got[FormatParquet])
	if !reflect.DeepEqual(ipcIDs, pqIDs) {
		t.Fatalf("formats disagree on batches:\n%v\n%v", ipcIDs, pqIDs)
	}
}

// When one format's file was completed and the other's was not (crash
// between the two renames), the lagging format is rebuilt with exactly the
// batches the leading one holds.
func TestLaggingSinkGetsIdenticalBatches(t *testing.T) {
	trees := genTrees(8, 60, testCreditConfig())
	dir := t.TempDir()
	s := fileStage(t, dir, func(c *Config) { c.MaxRows = 11 })
	proc := assign(t, s, 0, -1)
	for i := range 40 {
		if err := proc.Process(t.Context(), record(t, "t.credited", 0, int64(i), &trees[i])); err != nil {
			t.Fatal(err)
		}
	}
	p := proc.(*processor)
	// Complete the IPC file only, then crash.
	if err := p.files[0].finish(); err != nil {
		t.Fatal(err)
	}
	ipcLast := p.files[0].durable
	if ipcLast < 0 {
		t.Fatal("nothing written")
	}
	s2 := fileStage(t, dir, func(c *Config) { c.MaxRows = 5 }) // other bounds: must not matter for rebuilt ranges
	proc2 := assign(t, s2, 0, 0)
	if got := proc2.(*processor).known; len(got) == 0 {
		t.Fatal("no known ranges read back from the IPC files")
	}
	for i := range trees {
		if err := proc2.Process(t.Context(), record(t, "t.credited", 0, int64(i), &trees[i])); err != nil {
			t.Fatal(err)
		}
	}
	if err := proc2.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	got := readDir(t, dir)
	ipcIDs, _ := batchesOf(got[FormatIPC])
	pqIDs, _ := batchesOf(got[FormatParquet])
	if !reflect.DeepEqual(ipcIDs, pqIDs) {
		t.Fatalf("formats disagree on batches:\nipc     %v\nparquet %v", ipcIDs, pqIDs)
	}
	for _, format := range []string{FormatIPC, FormatParquet} {
		seen := map[string]int{}
		for _, r := range got[format] {
			seen[rowKey(r)]++
		}
		for _, w := range expectedRows(Range{}, treesAt(0, trees)) {
			if seen[rowKey(w)] != 1 {
				t.Fatalf("%s: %s seen %d times", format, rowKey(w), seen[rowKey(w)])
			}
		}
	}
}

func TestStaleTempFilesAreRemovedOnAssignment(t *testing.T) {
	dir := t.TempDir()
	mine := filepath.Join(dir, tempFileName("t.credited", 0, 5, FormatIPC))
	other := filepath.Join(dir, tempFileName("t.credited", 1, 5, FormatIPC))
	for _, p := range []string{mine, other} {
		if err := os.WriteFile(p, []byte("half"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := fileStage(t, dir, nil)
	assign(t, s, 0, -1)
	if _, err := os.Stat(mine); !os.IsNotExist(err) {
		t.Fatal("stale temp file of the partition survived")
	}
	if _, err := os.Stat(other); err != nil {
		t.Fatal("temp file of another partition was removed")
	}
}

func TestCreditConfigChangeStartsNewBatchAndFile(t *testing.T) {
	dir := t.TempDir()
	s := fileStage(t, dir, func(c *Config) { c.Formats = []string{FormatIPC} })
	proc := assign(t, s, 0, -1)
	a := genTrees(10, 6, testCreditConfig())
	cfg2 := testCreditConfig()
	cfg2.Strategy = "mers"
	b := genTrees(11, 6, cfg2)
	all := append(a, b...)
	for i := range all {
		if err := proc.Process(t.Context(), record(t, "t.credited", 0, int64(i), &all[i])); err != nil {
			t.Fatal(err)
		}
	}
	if err := proc.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	var files []string
	for _, e := range entries {
		files = append(files, e.Name())
	}
	if len(files) != 2 {
		t.Fatalf("want one file per credit config, got %v", files)
	}
	for i, name := range files {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		r, err := ipcFileSchema(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := CheckSchema(r)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"mars", "mers"}[i]
		if cfg.Strategy != want {
			t.Fatalf("file %s has strategy %s, want %s", name, cfg.Strategy, want)
		}
	}
}
