package pipeline

import (
	"math"
	"runtime/debug"
	"testing"
)

func TestGCConfigApply(t *testing.T) {
	percent, limit := debug.SetGCPercent(-1), debug.SetMemoryLimit(-1)
	debug.SetGCPercent(percent)
	t.Cleanup(func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	})
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")

	if got := (GCConfig{Percent: 250}).Apply(96); got != "gc percent 250, memory limit 96 MiB" {
		t.Fatalf("derived limit: %s", got)
	}
	if got := (GCConfig{Percent: 300, MemoryLimitMB: 40}).Apply(96); got != "gc percent 300, memory limit 40 MiB" {
		t.Fatalf("configured limit: %s", got)
	}
	debug.SetMemoryLimit(math.MaxInt64)
	if got := (GCConfig{Percent: 300, MemoryLimitMB: -1}).Apply(96); got != "gc percent 300, memory limit none" {
		t.Fatalf("no limit: %s", got)
	}

	// What the environment set (the runtime read it at start) is kept.
	debug.SetGCPercent(150)
	debug.SetMemoryLimit(64 << 20)
	t.Setenv("GOGC", "150")
	t.Setenv("GOMEMLIMIT", "64MiB")
	if got := (GCConfig{Percent: 300}).Apply(96); got != "gc percent 150, memory limit 64 MiB" {
		t.Fatalf("environment: %s", got)
	}

	for _, c := range []GCConfig{{Percent: -1}, {MemoryLimitMB: -2}} {
		if c.Validate() == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	if err := DefaultGCConfig().Validate(); err != nil {
		t.Fatal(err)
	}
}
