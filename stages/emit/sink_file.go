package emit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// FileError is an I/O failure of the file sink. The open file is lost, so
// the stage must be restarted to rebuild it from the credited topic: it is
// returned as a pipeline.Fatal error.
type FileError struct {
	Path string
	Err  error
}

func (e *FileError) Error() string { return fmt.Sprintf("emit: file %s: %v", e.Path, e.Err) }
func (e *FileError) Unwrap() error { return e.Err }

// countingWriter counts bytes and hides Close from the format writers, so
// that the sink can sync the file before closing it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// fileSink writes the batches of one partition into rotated files of one
// format. A file is written under a temporary dot-name and renamed to its
// final name, which states the offsets it covers, once it is complete.
type fileSink struct {
	dir       string
	format    string
	topic     string
	partition int
	codec     string
	maxBytes  int64
	maxAge    time.Duration
	mem       memory.Allocator

	// open file
	f        *os.File
	cw       *countingWriter
	ipcw     *ipc.FileWriter
	pqw      *pqarrow.FileWriter
	tmpPath  string
	first    int64
	fileLast int64
	openedAt time.Time
	schema   *arrow.Schema
	dicts    [][]string
	ids      []string

	last    int64 // last offset written, open file included
	durable int64 // last offset in a complete file
}

func newFileSink(cfg Config, format, topic string, partition int, mem memory.Allocator) *fileSink {
	return &fileSink{
		dir: cfg.Dir, format: format, topic: topic, partition: partition,
		codec: cfg.Compression, maxBytes: cfg.FileMaxBytes, maxAge: cfg.FileMaxAge, mem: mem,
		last: -1, durable: -1,
	}
}

func (s *fileSink) name() string { return "file_" + s.format }

func (s *fileSink) lastWritten() int64 { return s.last }

// pendingFirst is the first offset of the open file: what a crash would lose.
func (s *fileSink) pendingFirst() (int64, bool) {
	if s.f == nil {
		return 0, false
	}
	return s.first, true
}

// completeFiles lists this partition's complete files, in offset order.
func (s *fileSink) completeFiles() ([]Range, error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, &FileError{Path: s.dir, Err: err}
	}
	var out []Range
	for _, e := range entries {
		r, format, ok := ParseFileName(e.Name())
		if !ok || format != s.format || r.Topic != s.topic || r.Partition != s.partition {
			continue
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Range) int { return int(a.Last - b.Last) })
	return out, nil
}

// recover removes temporary files a crashed predecessor left for this
// partition and reads the last covered offset from the complete files.
func (s *fileSink) recover() error {
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return &FileError{Path: s.dir, Err: err}
	}
	prefix := fmt.Sprintf(".%s-p%05d-", s.topic, s.partition)
	suffix := fileExt(s.format) + ".tmp"
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return &FileError{Path: s.dir, Err: err}
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) && strings.HasSuffix(e.Name(), suffix) {
			p := filepath.Join(s.dir, e.Name())
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return &FileError{Path: p, Err: err}
			}
		}
	}
	files, err := s.completeFiles()
	if err != nil {
		return err
	}
	if len(files) > 0 {
		s.last = files[len(files)-1].Last
		s.durable = s.last
	}
	return nil
}

// rangesAfter returns the batch ranges of complete files that end after
// floor, read from the files themselves.
func (s *fileSink) rangesAfter(floor int64) ([]Range, error) {
	files, err := s.completeFiles()
	if err != nil {
		return nil, err
	}
	var out []Range
	for _, fr := range files {
		if fr.Last <= floor {
			continue
		}
		ids, err := ReadFileBatchIDs(filepath.Join(s.dir, FileName(fr, s.format)))
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			r, err := ParseBatchID(id)
			if err != nil {
				return nil, err
			}
			if r.Last > floor {
				out = append(out, r)
			}
		}
	}
	return out, nil
}

// ReadFileBatchIDs returns the ids of the batches in a complete file, in
// order: the custom metadata of each IPC record batch, or the Parquet
// file's key-value metadata.
func ReadFileBatchIDs(path string) ([]string, error) {
	if strings.HasSuffix(path, ".parquet") {
		r, err := file.OpenParquetFile(path, false)
		if err != nil {
			return nil, &FileError{Path: path, Err: err}
		}
		defer r.Close()
		v := r.MetaData().KeyValueMetadata().FindValue(MetaBatchIDs)
		if v == nil || *v == "" {
			return nil, &FileError{Path: path, Err: errors.New("no " + MetaBatchIDs + " metadata")}
		}
		return strings.Split(*v, ","), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, &FileError{Path: path, Err: err}
	}
	defer f.Close()
	r, err := ipc.NewFileReader(f)
	if err != nil {
		return nil, &FileError{Path: path, Err: err}
	}
	defer r.Close()
	ids := make([]string, 0, r.NumRecords())
	for i := 0; i < r.NumRecords(); i++ {
		rec, err := r.RecordBatchAt(i)
		if err != nil {
			return nil, &FileError{Path: path, Err: err}
		}
		id, ok := batchIDOf(rec)
		rec.Release()
		if !ok {
			return nil, &FileError{Path: path, Err: fmt.Errorf("batch %d has no id", i)}
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// batchIDOf reads a batch's id from its message metadata, or else from its
// batch_id column.
func batchIDOf(rec arrow.RecordBatch) (string, bool) {
	if m, ok := rec.(arrow.RecordBatchWithMetadata); ok {
		if id, ok := m.Metadata().GetValue(MetaBatchID); ok {
			return id, true
		}
	}
	if rec.NumRows() == 0 {
		return "", false
	}
	col, ok := rec.Column(0).(*array.String)
	if !ok || rec.ColumnName(0) != ColBatchID {
		return "", false
	}
	return col.Value(0), true
}

// dictValues lists the dictionary values of rec's dictionary columns.
func dictValues(rec arrow.RecordBatch) [][]string {
	var out [][]string
	for _, c := range rec.Columns() {
		d, ok := c.(*array.Dictionary)
		if !ok {
			continue
		}
		s := d.Dictionary().(*array.String)
		vals := make([]string, s.Len())
		for i := range vals {
			vals[i] = s.Value(i)
		}
		out = append(out, vals)
	}
	return out
}

func sameDicts(a, b [][]string) bool {
	return slices.EqualFunc(a, b, func(x, y []string) bool { return slices.Equal(x, y) })
}

// write appends one batch covering r to the open file, opening or rotating
// files as needed.
func (s *fileSink) write(_ context.Context, rec arrow.RecordBatch, r Range) error {
	dicts := dictValues(rec)
	if s.f != nil && (s.schema != rec.Schema() && !s.schema.Equal(rec.Schema()) ||
		!sameMetadata(s.schema, rec.Schema()) ||
		s.format == FormatIPC && !sameDicts(s.dicts, dicts)) {
		// One schema (with its credit configuration) and, for IPC files,
		// one dictionary per column and file.
		if err := s.finish(); err != nil {
			return err
		}
	}
	if s.f == nil {
		if err := s.open(rec.Schema(), r.First); err != nil {
			return err
		}
		s.dicts = dicts
	}
	var err error
	if s.ipcw != nil {
		err = s.ipcw.Write(rec)
	} else {
		err = s.pqw.Write(rec)
	}
	if err != nil {
		return s.abort(err)
	}
	s.fileLast = r.Last
	s.last = r.Last
	s.ids = append(s.ids, r.BatchID())
	if s.cw.n >= s.maxBytes {
		return s.finish()
	}
	return nil
}

func sameMetadata(a, b *arrow.Schema) bool {
	am, bm := a.Metadata(), b.Metadata()
	return slices.Equal(am.Keys(), bm.Keys()) && slices.Equal(am.Values(), bm.Values())
}

func (s *fileSink) open(schema *arrow.Schema, first int64) error {
	s.tmpPath = filepath.Join(s.dir, tempFileName(s.topic, s.partition, first, s.format))
	f, err := os.OpenFile(s.tmpPath, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return &FileError{Path: s.tmpPath, Err: err}
	}
	s.f, s.cw = f, &countingWriter{w: f}
	s.first, s.schema, s.ids, s.openedAt = first, schema, nil, time.Now()
	if s.format == FormatIPC {
		s.ipcw, err = ipc.NewFileWriter(s.cw, ipcOptions(s.mem, schema, s.codec)...)
	} else {
		props := parquet.NewWriterProperties(
			parquet.WithCompression(parquetCodec(s.codec)),
			parquet.WithDictionaryDefault(false),
			parquet.WithDictionaryFor(ColRoute, true),
			parquet.WithDictionaryFor(ColFailureCause, true),
			parquet.WithDictionaryFor(ColStatus, true),
			parquet.WithDictionaryFor(ColFinishReason, true),
			parquet.WithDictionaryFor(ColBatchID, true),
			parquet.WithMaxRowGroupLength(1<<30),
			parquet.WithAllocator(s.mem),
		)
		s.pqw, err = pqarrow.NewFileWriter(schema, s.cw, props,
			pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema(), pqarrow.WithAllocator(s.mem)))
	}
	if err != nil {
		return s.abort(err)
	}
	return nil
}

// finish completes the open file and renames it to its final name.
func (s *fileSink) finish() error {
	if s.f == nil {
		return nil
	}
	var err error
	if s.ipcw != nil {
		err = s.ipcw.Close()
	} else {
		if err = s.pqw.AppendKeyValueMetadata(MetaBatchIDs, strings.Join(s.ids, ",")); err == nil {
			err = s.pqw.Close()
		}
	}
	if err == nil {
		err = s.f.Sync()
	}
	if err != nil {
		return s.abort(err)
	}
	if err := s.f.Close(); err != nil {
		return s.abort(err)
	}
	final := filepath.Join(s.dir, FileName(Range{Topic: s.topic, Partition: s.partition, First: s.first, Last: s.fileLast}, s.format))
	if err := os.Rename(s.tmpPath, final); err != nil {
		return s.abort(err)
	}
	if d, err := os.Open(s.dir); err == nil {
		_ = d.Sync() // make the rename durable where the platform allows it
		d.Close()
	}
	s.durable = s.fileLast
	s.reset()
	return nil
}

// abort drops the open file after a failure; its batches are rebuilt from
// the credited topic after a restart.
func (s *fileSink) abort(cause error) error {
	path := s.tmpPath
	if s.f != nil {
		s.f.Close()
		os.Remove(s.tmpPath)
	}
	s.reset()
	s.last = s.durable
	return &FileError{Path: path, Err: cause}
}

func (s *fileSink) reset() {
	s.f, s.cw, s.ipcw, s.pqw = nil, nil, nil, nil
	s.tmpPath, s.schema, s.dicts, s.ids = "", nil, nil, nil
}

// tick completes a file older than the rotation age.
func (s *fileSink) tick(_ context.Context, now time.Time) error {
	if s.f != nil && now.Sub(s.openedAt) >= s.maxAge {
		return s.finish()
	}
	return nil
}

func (s *fileSink) close(_ context.Context) error { return s.finish() }
