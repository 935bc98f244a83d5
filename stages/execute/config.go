package execute

import (
	"errors"
	"fmt"
	"time"

	"github.com/murphy-rl/murphy/compilefix"
	"github.com/murphy-rl/murphy/sandbox"
	"github.com/murphy-rl/murphy/tasks"
	"github.com/murphy-rl/murphy/topics"
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
	// snapshot cache and the build sandbox (compilefix/README.md).
	CompileFix compilefix.Config `yaml:"compile_fix"`
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		Name:             "execute",
		FeedbackBytes:    topics.DefaultFeedbackBytes,
		StdioMaxTimeouts: 2,
		TaskWait:         tasks.DefaultTaskWait,
		Sandbox:          sandbox.DefaultConfig(),
		CompileFix:       compilefix.DefaultConfig(),
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
