package compilefix

import (
	"errors"

	"github.com/murphy-rl/murphy/sandbox"
)

// Config configures the evaluation of compile-fix tasks.
type Config struct {
	// Store is the workspace store's URL: a directory, file://, s3://,
	// gs:// or mem://. Empty: this executor does not run compile-fix tasks
	// (they are sandbox errors, invalid_job).
	Store string `yaml:"store"`
	// CacheDir holds materialised snapshots ("" = a fresh temporary
	// directory, removed at shutdown).
	CacheDir string `yaml:"cache_dir"`
	// CacheMB bounds the materialised snapshots kept (least recently used
	// ones are evicted).
	CacheMB int `yaml:"cache_mb"`
	// MaxPatchKB refuses larger diffs (patch_failed) before parsing them.
	MaxPatchKB int `yaml:"max_patch_kb"`
	// Builder configures the build sandbox.
	Builder sandbox.BuilderConfig `yaml:"builder"`
}

// DefaultConfig keeps 2 GiB of snapshots and accepts diffs up to
// 1 MiB.
func DefaultConfig() Config {
	return Config{CacheMB: 2048, MaxPatchKB: 1024, Builder: sandbox.DefaultBuilderConfig()}
}

// Validate checks the configuration.
func (c Config) Validate() error {
	if c.CacheMB < 1 || c.MaxPatchKB < 1 {
		return errors.New("compile_fix: cache_mb and max_patch_kb must be >= 1")
	}
	return c.Builder.Validate()
}
