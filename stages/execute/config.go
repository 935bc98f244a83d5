package execute

import (
	"errors"
	"fmt"
	"time"

	"github.com/murphy-rl/murphy/sandbox"
	"github.com/murphy-rl/murphy/tasks"
)

// Config configures the execute stage.
type Config struct {
	// Name labels metrics and the consumer group.
	Name string `yaml:"name"`
	// Concurrency is the number of candidates evaluated at once; 0 means
	// one per sandbox of the pool (the pool bounds it anyway).
	Concurrency int `yaml:"concurrency"`
	// FeedbackBytes caps the feedback text (head+tail truncation).
	FeedbackBytes int `yaml:"feedback_bytes"`
	// StdioMaxTimeouts stops a stdio task's remaining cases after this many
	// timed out (they count as timeouts); 0 runs every case.
	StdioMaxTimeouts int `yaml:"stdio_max_timeouts"`
	// TaskWait is how long a candidate waits for its task to appear in the
	// task lookup before it is dead-lettered as task_not_found (tasks.Await).
	TaskWait time.Duration `yaml:"task_wait"`
	// Sandbox configures the pool the stage runs in.
	Sandbox sandbox.Config `yaml:"sandbox"`
	// CompileFix configures compile-fix tasks: the workspace store, the
	// snapshot cache and the build sandbox (COMPILEFIX.md).
	CompileFix CompileFixConfig `yaml:"compile_fix"`
}

// CompileFixConfig configures the evaluation of compile-fix tasks.
type CompileFixConfig struct {
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

// DefaultCompileFixConfig keeps 2 GiB of snapshots and accepts diffs up to
// 1 MiB.
func DefaultCompileFixConfig() CompileFixConfig {
	return CompileFixConfig{CacheMB: 2048, MaxPatchKB: 1024, Builder: sandbox.DefaultBuilderConfig()}
}

// Validate checks the configuration.
func (c CompileFixConfig) Validate() error {
	if c.CacheMB < 1 || c.MaxPatchKB < 1 {
		return errors.New("execute: compile_fix cache_mb and max_patch_kb must be >= 1")
	}
	return c.Builder.Validate()
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		Name:             "execute",
		FeedbackBytes:    DefaultFeedbackBytes,
		StdioMaxTimeouts: 2,
		TaskWait:         tasks.DefaultTaskWait,
		Sandbox:          sandbox.DefaultConfig(),
		CompileFix:       DefaultCompileFixConfig(),
	}
}

// Validate checks the configuration.
func (c Config) Validate() error {
	if c.Name == "" {
		return errors.New("execute: name is required")
	}
	if c.Concurrency < 0 || c.StdioMaxTimeouts < 0 || c.TaskWait < 0 {
		return errors.New("execute: concurrency, stdio_max_timeouts and task_wait must be >= 0")
	}
	if c.FeedbackBytes < 128 {
		return fmt.Errorf("execute: feedback_bytes %d < 128", c.FeedbackBytes)
	}
	if err := c.CompileFix.Validate(); err != nil {
		return err
	}
	return c.Sandbox.Validate()
}
