// Package dataset reads the Arrow files that emit writes back into rows and
// compares two datasets, value by value, ignoring what legitimately differs
// between runs (timestamps, batch ids and source offsets).
package dataset

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"context"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	json "github.com/goccy/go-json"
)

// Row is one emitted row: column name → JSON value.
type Row map[string]any

// Files lists the complete batch files of dir: Arrow IPC files when there
// are any, Parquet files otherwise. Temporary files are never listed.
func Files(dir string) ([]string, error) {
	ipcFiles, err := filepath.Glob(filepath.Join(dir, "*.arrow"))
	if err != nil {
		return nil, err
	}
	if len(ipcFiles) > 0 {
		sort.Strings(ipcFiles)
		return ipcFiles, nil
	}
	pq, err := filepath.Glob(filepath.Join(dir, "*.parquet"))
	sort.Strings(pq)
	return pq, err
}

// ReadDir reads every row of the batch files of dir.
func ReadDir(dir string) ([]Row, error) {
	files, err := Files(dir)
	if err != nil {
		return nil, err
	}
	var rows []Row
	for _, f := range files {
		r, err := ReadFile(f)
		if err != nil {
			return nil, err
		}
		rows = append(rows, r...)
	}
	return rows, nil
}

// ReadFile reads the rows of one Arrow IPC or Parquet file.
func ReadFile(path string) ([]Row, error) {
	var recs []arrow.RecordBatch
	if strings.HasSuffix(path, ".parquet") {
		f, err := file.OpenParquetFile(path, false)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		defer f.Close()
		fr, err := pqarrow.NewFileReader(f, pqarrow.ArrowReadProperties{BatchSize: 1024}, memory.DefaultAllocator)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		rr, err := fr.GetRecordReader(context.Background(), nil, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		defer rr.Release()
		for rr.Next() {
			rec := rr.RecordBatch()
			rec.Retain()
			recs = append(recs, rec)
		}
		if err := rr.Err(); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r, err := ipc.NewFileReader(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		defer r.Close()
		for i := 0; i < r.NumRecords(); i++ {
			rec, err := r.RecordBatchAt(i)
			if err != nil {
				return nil, fmt.Errorf("%s: batch %d: %w", path, i, err)
			}
			rec.Retain()
			recs = append(recs, rec)
		}
	}
	var rows []Row
	for _, rec := range recs {
		b, err := rec.MarshalJSON()
		rec.Release()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		var rs []Row
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		if err := d.Decode(&rs); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		rows = append(rows, rs...)
	}
	return rows, nil
}

// Volatile reports whether a column may differ between two runs of the same
// data: timestamps, and where a row landed (batch, source partition/offset).
func Volatile(col string) bool {
	switch col {
	case "batch_id", "source_partition", "source_offset":
		return true
	}
	return strings.HasSuffix(col, "_at")
}

// Diff describes one difference between two datasets.
type Diff struct {
	NodeID string
	Column string // "" when the whole row is missing or duplicated
	A, B   string
}

func (d Diff) String() string {
	if d.Column == "" {
		return fmt.Sprintf("node %s: %s vs %s", d.NodeID, d.A, d.B)
	}
	return fmt.Sprintf("node %s: %s = %s vs %s", d.NodeID, d.Column, d.A, d.B)
}

// Compare matches rows by node_id and reports every difference outside the
// volatile columns, including rows present in one dataset only and rows
// present more than once.
func Compare(a, b []Row) ([]Diff, error) {
	ia, err := index(a)
	if err != nil {
		return nil, fmt.Errorf("first dataset: %w", err)
	}
	ib, err := index(b)
	if err != nil {
		return nil, fmt.Errorf("second dataset: %w", err)
	}
	var diffs []Diff
	ids := map[string]bool{}
	for id := range ia {
		ids[id] = true
	}
	for id := range ib {
		ids[id] = true
	}
	sorted := make([]string, 0, len(ids))
	for id := range ids {
		sorted = append(sorted, id)
	}
	sort.Strings(sorted)
	for _, id := range sorted {
		ra, rb := ia[id], ib[id]
		switch {
		case len(ra) == 0:
			diffs = append(diffs, Diff{NodeID: id, A: "missing", B: "present"})
			continue
		case len(rb) == 0:
			diffs = append(diffs, Diff{NodeID: id, A: "present", B: "missing"})
			continue
		case len(ra) != 1 || len(rb) != 1:
			diffs = append(diffs, Diff{NodeID: id, A: fmt.Sprintf("%d copies", len(ra)), B: fmt.Sprintf("%d copies", len(rb))})
			continue
		}
		cols := map[string]bool{}
		for c := range ra[0] {
			cols[c] = true
		}
		for c := range rb[0] {
			cols[c] = true
		}
		names := make([]string, 0, len(cols))
		for c := range cols {
			if !Volatile(c) {
				names = append(names, c)
			}
		}
		sort.Strings(names)
		for _, c := range names {
			va, _ := json.Marshal(ra[0][c])
			vb, _ := json.Marshal(rb[0][c])
			if !bytes.Equal(va, vb) {
				diffs = append(diffs, Diff{NodeID: id, Column: c, A: clip(string(va)), B: clip(string(vb))})
			}
		}
	}
	return diffs, nil
}

func index(rows []Row) (map[string][]Row, error) {
	m := make(map[string][]Row, len(rows))
	for _, r := range rows {
		id, ok := r["node_id"].(string)
		if !ok || id == "" {
			return nil, errors.New("row without node_id")
		}
		m[id] = append(m[id], r)
	}
	return m, nil
}

func clip(s string) string {
	if len(s) > 120 {
		return s[:60] + "…" + s[len(s)-50:]
	}
	return s
}

// Trees counts the distinct tree ids of rows.
func Trees(rows []Row) int {
	t := map[any]bool{}
	for _, r := range rows {
		t[r["tree_id"]] = true
	}
	return len(t)
}
