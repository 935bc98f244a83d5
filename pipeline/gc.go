package pipeline

import (
	"fmt"
	"math"
	"os"
	"runtime/debug"
)

// GCConfig sets the Go garbage collector of a murphy process. A stage
// allocates about a record's worth of memory for every record it decodes
// and encodes and keeps little of it alive, so with Go's default target
// (GOGC=100, a collection each time the heap doubles its live part) it
// collects often, and the pipeline spends more CPU per sample at 100 than
// at 300 (BENCHMARKS.md, "Memory"). A higher target collects less often;
// the soft memory limit keeps that from taking the process past its memory
// budget.
type GCConfig struct {
	// Percent is the collector's target (GOGC): a collection starts when
	// the heap has grown this many percent over what the last one left
	// alive. 0 keeps Go's default; $GOGC, when set, wins.
	Percent int `yaml:"percent"`
	// MemoryLimitMB is a soft limit on the memory of the Go runtime
	// (GOMEMLIMIT): near it the collector runs as often as it must to stay
	// under, whatever Percent says. 0 derives it from the stages the
	// process runs (five eighths of their memory budgets, see
	// stages.MemoryLimitMB); -1 sets none; $GOMEMLIMIT, when set, wins.
	MemoryLimitMB int `yaml:"memory_limit_mb"`
}

// DefaultGCConfig collects when the heap has grown 300% over its live part,
// under the derived memory limit.
func DefaultGCConfig() GCConfig { return GCConfig{Percent: 300} }

// Validate checks the configuration.
func (c GCConfig) Validate() error {
	if c.Percent < 0 {
		return fmt.Errorf("gc: percent must be >= 0, got %d", c.Percent)
	}
	if c.MemoryLimitMB < -1 {
		return fmt.Errorf("gc: memory_limit_mb must be >= -1, got %d", c.MemoryLimitMB)
	}
	return nil
}

// Apply sets the collector's target and memory limit; derivedMB is the
// limit used when MemoryLimitMB is 0. The environment's GOGC and
// GOMEMLIMIT, which the Go runtime has already applied, are left alone.
// It returns what the process runs with, for the log.
func (c GCConfig) Apply(derivedMB int) string {
	if os.Getenv("GOGC") == "" && c.Percent > 0 {
		debug.SetGCPercent(c.Percent)
	}
	limit := c.MemoryLimitMB
	if limit == 0 {
		limit = derivedMB
	}
	if os.Getenv("GOMEMLIMIT") == "" && limit > 0 {
		debug.SetMemoryLimit(int64(limit) << 20)
	}
	percent := GCPercent()
	mem := "none"
	if l := debug.SetMemoryLimit(-1); l != math.MaxInt64 {
		mem = fmt.Sprintf("%d MiB", l>>20)
	}
	return fmt.Sprintf("gc percent %d, memory limit %s", percent, mem)
}

// GCPercent is the collector's current target (GOGC; -1 when off).
func GCPercent() int {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return p
}
