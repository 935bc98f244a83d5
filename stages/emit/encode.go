package emit

import (
	"bytes"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/compress"
)

// Compression codecs of IPC buffers (and of Parquet column chunks).
const (
	CompressionNone = "none"
	CompressionZstd = "zstd"
	CompressionLZ4  = "lz4"
)

func validCompression(c string) error {
	switch c {
	case CompressionNone, CompressionZstd, CompressionLZ4:
		return nil
	}
	return fmt.Errorf("emit: compression %q is not one of none, zstd, lz4", c)
}

// ipcOptions are the IPC writer options for schema s and codec c.
func ipcOptions(mem memory.Allocator, s *arrow.Schema, c string) []ipc.Option {
	opts := []ipc.Option{ipc.WithSchema(s), ipc.WithAllocator(mem)}
	switch c {
	case CompressionZstd:
		opts = append(opts, ipc.WithZstd())
	case CompressionLZ4:
		opts = append(opts, ipc.WithLZ4())
	}
	return opts
}

// parquetCodec maps a compression name to the Parquet codec. LZ4 uses the
// LZ4_RAW codec, the one Parquet readers agree on.
func parquetCodec(c string) compress.Compression {
	switch c {
	case CompressionZstd:
		return compress.Codecs.Zstd
	case CompressionLZ4:
		return compress.Codecs.Lz4Raw
	}
	return compress.Codecs.Uncompressed
}

// EncodeStream writes rec as one self-contained Arrow IPC stream (schema,
// dictionaries, the batch, end of stream) compressed with codec c. It
// appends to dst[:0], so a caller can reuse one buffer for every batch.
func EncodeStream(mem memory.Allocator, rec arrow.RecordBatch, c string, dst []byte) ([]byte, error) {
	buf := bytes.NewBuffer(dst[:0])
	w := ipc.NewWriter(buf, ipcOptions(mem, rec.Schema(), c)...)
	if err := w.Write(rec); err != nil {
		return nil, fmt.Errorf("emit: encode ipc stream: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("emit: close ipc stream: %w", err)
	}
	return buf.Bytes(), nil
}

// DecodeStream reads the single batch of an IPC stream made by EncodeStream
// and checks its schema. The caller releases the result.
func DecodeStream(mem memory.Allocator, b []byte) (arrow.RecordBatch, error) {
	r, err := ipc.NewReader(bytes.NewReader(b), ipc.WithAllocator(mem))
	if err != nil {
		return nil, fmt.Errorf("emit: open ipc stream: %w", err)
	}
	defer r.Release()
	if _, err := CheckSchema(r.Schema()); err != nil {
		return nil, err
	}
	if !r.Next() {
		if r.Err() != nil {
			return nil, fmt.Errorf("emit: read ipc stream: %w", r.Err())
		}
		return nil, fmt.Errorf("emit: ipc stream holds no batch")
	}
	rec := r.RecordBatch()
	rec.Retain()
	return rec, nil
}
