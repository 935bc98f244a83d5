package emit

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/murphy-rl/murphy/topics"
)

// Config configures the emit stage.
type Config struct {
	// MaxRows bounds the rows (responses) of a batch. A tree is never split,
	// so a tree larger than the bound forms a batch of its own.
	MaxRows int `yaml:"max_rows"`
	// MaxBytes bounds the estimated size of a batch (token data, text and a
	// per-row overhead) before compression.
	MaxBytes int `yaml:"max_bytes"`
	// MaxAge closes a batch this long after its first record arrived.
	MaxAge time.Duration `yaml:"max_age"`
	// Compression of IPC buffers and Parquet pages: none, zstd or lz4.
	Compression string `yaml:"compression"`
	// Topic turns the batches topic sink on.
	Topic bool `yaml:"topic"`
	// Dir is the output directory of batch files ("" = no files).
	Dir string `yaml:"dir"`
	// Formats are the file formats written to Dir: ipc (Arrow IPC file)
	// and/or parquet.
	Formats []string `yaml:"formats"`
	// FileMaxBytes rotates a file once it holds this many bytes.
	FileMaxBytes int64 `yaml:"file_max_bytes"`
	// FileMaxAge rotates a file this long after it was opened. Until then
	// its trees are not committed on the credited topic.
	FileMaxAge time.Duration `yaml:"file_max_age"`
	// TickInterval is how often time bounds are checked; never less often
	// than every quarter of MaxAge, so a batch is written close to its age.
	TickInterval time.Duration `yaml:"tick_interval"`
	// ReadBackTimeout bounds reading back the batches topic when a partition
	// is assigned.
	ReadBackTimeout time.Duration `yaml:"read_back_timeout"`
	// CloseTimeout bounds the final flush when a partition is released.
	CloseTimeout time.Duration `yaml:"close_timeout"`
	// DedupeWindow is how many offsets back a credited tree's id is looked
	// for: a record whose tree id (its key) is on another record of the same
	// partition within this many offsets before it is a duplicate (a retried
	// write that landed twice) and is dropped. The rule depends on the log
	// alone, so a restarted stage (which reads the window before its first
	// record back) drops the same records and rebuilds the same batches.
	// 0 turns it off.
	DedupeWindow int64 `yaml:"dedupe_window"`
}

// DefaultConfig writes lz4-compressed batches of up to 1024 rows / 8 MiB
// or 2 s to the batches topic, and no files.
//
// LZ4 is the default because emit and the trainers sit on the hot path: it
// writes somewhat more bytes than zstd but encodes and decodes much faster
// (BENCHMARKS.md). Set compression to zstd where storage counts more
// (archived files).
func DefaultConfig() Config {
	return Config{
		MaxRows:         1024,
		MaxBytes:        8 << 20,
		MaxAge:          2 * time.Second,
		Compression:     CompressionLZ4,
		Topic:           true,
		Formats:         []string{FormatIPC},
		FileMaxBytes:    256 << 20,
		FileMaxAge:      time.Minute,
		TickInterval:    500 * time.Millisecond,
		ReadBackTimeout: time.Minute,
		CloseTimeout:    10 * time.Second,
		DedupeWindow:    1024,
	}
}

// Validate checks the configuration.
func (c Config) Validate() error {
	var errs []error
	if c.MaxRows < 1 {
		errs = append(errs, fmt.Errorf("max_rows must be >= 1, got %d", c.MaxRows))
	}
	if c.MaxBytes < 1 || c.MaxBytes > topics.DefaultMaxMessageBytes/2 {
		errs = append(errs, fmt.Errorf("max_bytes must be in [1, %d], got %d", topics.DefaultMaxMessageBytes/2, c.MaxBytes))
	}
	if c.MaxAge <= 0 {
		errs = append(errs, fmt.Errorf("max_age must be > 0"))
	}
	if err := validCompression(c.Compression); err != nil {
		errs = append(errs, err)
	}
	if !c.Topic && c.Dir == "" {
		errs = append(errs, errors.New("no sink: enable topic or set dir"))
	}
	if c.Dir != "" {
		if len(c.Formats) == 0 {
			errs = append(errs, errors.New("formats must name ipc and/or parquet when dir is set"))
		}
		for i, f := range c.Formats {
			if f != FormatIPC && f != FormatParquet {
				errs = append(errs, fmt.Errorf("format %q is not ipc or parquet", f))
			}
			if slices.Contains(c.Formats[:i], f) {
				errs = append(errs, fmt.Errorf("format %q listed twice", f))
			}
		}
		if c.FileMaxBytes < 1 {
			errs = append(errs, errors.New("file_max_bytes must be >= 1"))
		}
		if c.FileMaxAge <= 0 {
			errs = append(errs, errors.New("file_max_age must be > 0"))
		}
	}
	if c.DedupeWindow < 0 {
		errs = append(errs, fmt.Errorf("dedupe_window must be >= 0, got %d", c.DedupeWindow))
	}
	if c.TickInterval <= 0 || c.ReadBackTimeout <= 0 || c.CloseTimeout <= 0 {
		errs = append(errs, errors.New("tick_interval, read_back_timeout and close_timeout must be > 0"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("emit config: %w", err)
	}
	return nil
}

// tick is how often the time bounds are checked.
func (c Config) tick() time.Duration {
	if c.MaxAge > 0 {
		return min(c.TickInterval, max(c.MaxAge/4, time.Millisecond))
	}
	return c.TickInterval
}
