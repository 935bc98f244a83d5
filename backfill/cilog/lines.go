package cilog

import (
	"bufio"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/klauspost/compress/zstd"
)

// Limits on what one log may cost.
const (
	// MaxLine is the longest raw line kept (bytes); the rest of a longer
	// line is read and dropped, and the line still counts once.
	MaxLine = 64 << 10
	// MaxDiagnostics is the most diagnostics one report holds.
	MaxDiagnostics = 5000
	// MaxSteps is the most steps one report holds.
	MaxSteps = 10000
	// zstdWindow bounds the window a zstd stream may ask for.
	zstdWindow = 64 << 20
)

// ErrBinary is returned for input that is not a text log.
var ErrBinary = errors.New("not a text log (binary data)")

// FormatError is input whose container format murphy does not read.
type FormatError struct{ Format, Hint string }

func (e *FormatError) Error() string {
	if e.Hint != "" {
		return e.Format + ": " + e.Hint
	}
	return e.Format + ": not a log format murphy reads"
}

// open wraps r in the decompressor its magic bytes ask for and refuses
// containers it does not read. kind is "gzip", "zstd", "bzip2" or "".
func open(r io.Reader) (io.Reader, string, func(), error) {
	br := bufio.NewReaderSize(r, 64<<10)
	magic, _ := br.Peek(6)
	nop := func() {}
	switch {
	case bytes.HasPrefix(magic, []byte{0x1f, 0x8b}):
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, "", nop, fmt.Errorf("gzip: %w", err)
		}
		return zr, "gzip", func() { zr.Close() }, nil
	case bytes.HasPrefix(magic, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		zr, err := zstd.NewReader(br, zstd.WithDecoderMaxWindow(zstdWindow), zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, "", nop, fmt.Errorf("zstd: %w", err)
		}
		return zr, "zstd", zr.Close, nil
	case bytes.HasPrefix(magic, []byte("BZh")):
		return bzip2.NewReader(br), "bzip2", nop, nil
	case bytes.HasPrefix(magic, []byte("PK\x03\x04")):
		return nil, "", nop, &FormatError{"zip archive", "extract it and pass its log files (a GitHub Actions log archive holds one .txt per step)"}
	case bytes.HasPrefix(magic, []byte{0xfd, '7', 'z', 'X', 'Z', 0}):
		return nil, "", nop, &FormatError{"xz stream", "decompress it first"}
	case bytes.HasPrefix(magic, []byte{'7', 'z', 0xbc, 0xaf}):
		return nil, "", nop, &FormatError{"7z archive", "extract it first"}
	}
	return br, "", nop, nil
}

// lineReader splits a stream into raw lines: "\n", "\r\n" and a lone "\r"
// each end one. Lines are numbered from 1.
type lineReader struct {
	r         *bufio.Reader
	line      []byte
	n         int
	bytes     int64
	pendingCR bool
	cut       bool // the current line was longer than MaxLine
	checked   bool
	err       error
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 256<<10)}
}

// next returns the next line (valid until the following call) and whether
// there was one. Err reports a read error that ended the stream early.
func (lr *lineReader) next() ([]byte, bool) {
	lr.line = lr.line[:0]
	lr.cut = false
	have := false
	for {
		if lr.r.Buffered() == 0 {
			if _, err := lr.r.Peek(1); err != nil {
				if !errors.Is(err, io.EOF) {
					lr.err = err
				}
				if have || lr.pendingCR {
					lr.pendingCR = false
					return lr.done()
				}
				return nil, false
			}
		}
		buf, _ := lr.r.Peek(lr.r.Buffered())
		if !lr.checked {
			lr.checked = true
			if isBinary(buf) {
				lr.err = ErrBinary
				return nil, false
			}
		}
		if lr.pendingCR {
			lr.pendingCR = false
			if buf[0] == '\n' {
				lr.discard(1)
			}
			return lr.done()
		}
		i := bytes.IndexAny(buf, "\r\n")
		if i < 0 {
			lr.keep(buf)
			lr.discard(len(buf))
			have = true
			continue
		}
		lr.keep(buf[:i])
		c := buf[i]
		lr.discard(i + 1)
		if c == '\n' {
			return lr.done()
		}
		if i+1 < len(buf) {
			if buf[i+1] == '\n' {
				lr.discard(1)
			}
			return lr.done()
		}
		lr.pendingCR = true
		have = true
	}
}

func (lr *lineReader) done() ([]byte, bool) {
	lr.n++
	return lr.line, true
}

func (lr *lineReader) keep(b []byte) {
	if room := MaxLine - len(lr.line); room < len(b) {
		if room > 0 {
			lr.line = append(lr.line, b[:room]...)
		}
		lr.cut = true
		return
	}
	lr.line = append(lr.line, b...)
}

func (lr *lineReader) discard(n int) {
	_, _ = lr.r.Discard(n) // n bytes are buffered
	lr.bytes += int64(n)
}

// isBinary reports whether the start of a stream is binary data: NUL
// bytes, or mostly control bytes and invalid UTF-8.
func isBinary(b []byte) bool {
	if len(b) > 8192 {
		b = b[:8192]
	}
	if len(b) == 0 {
		return false
	}
	if bytes.IndexByte(b, 0) >= 0 {
		return true
	}
	bad := 0
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if (r == utf8.RuneError && n == 1 && i+4 < len(b)) || (r < 0x20 && r != '\n' && r != '\r' && r != '\t' && r != 0x1b && r != '\b' && r != '\f' && r != 7) {
			bad++
		}
		i += n
	}
	return bad*10 > len(b)
}
