// Package stages wires the five stages onto a pipeline.Runtime: the one
// place that knows how `murphy run`, `murphy stage NAME` and the benchmarks
// build them, through one descriptor per stage (registry.go). The stages
// still talk to each other only through topics.
package stages

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/sandbox"
	"github.com/murphy-rl/murphy/tasks"
	"github.com/murphy-rl/murphy/topics"
)

// Wiring is what the stages are built from.
type Wiring struct {
	Runtime *pipeline.Runtime
	Kafka   pipeline.KafkaConfig
	Catalog topics.Catalog
	// Lookup returns the task lookup; only stages that need one call it.
	Lookup func() tasks.Lookup
	// Runner, when set, evaluates for execute instead of a sandbox pool
	// built from Execute.Sandbox; the caller owns it.
	Runner sandbox.Runner
	// Configs are the stages' sections.
	Configs
}

// Add builds the named stages onto w.Runtime, in dataflow order. The
// returned func releases what they hold (execute's sandbox pool); it is
// also safe to call after an error.
func Add(ctx context.Context, w Wiring, names []string) (release func(), err error) {
	var closers []func()
	release = func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	sorted := slices.Clone(names)
	slices.SortStableFunc(sorted, func(a, b string) int { return Index(a) - Index(b) })
	for _, name := range sorted {
		d, err := Get(name)
		var rel func()
		if err == nil {
			rel, err = d.Build(ctx, w)
		}
		if err != nil {
			release()
			return func() {}, fmt.Errorf("stage %s: %w", name, err)
		}
		if rel != nil {
			closers = append(closers, rel)
		}
	}
	return release, nil
}

// Validate checks the sections of the named stages.
func (c *Configs) Validate(names []string) error {
	var errs []error
	for _, name := range names {
		d, err := Get(name)
		if err == nil {
			err = d.Section(c).Validate()
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// MemoryBudgetMB is the memory, in MiB, a process running the stage name
// alone is budgeted (Descriptor.MemoryBudgetMB; BENCHMARKS.md gives the
// reasons; `murphy bench memory` measures it), 128 for an unknown name.
func MemoryBudgetMB(name string, cat topics.Catalog, c *Configs) int {
	d, err := Get(name)
	if err != nil {
		return 128
	}
	return d.MemoryBudgetMB(cat, c)
}

// MemoryLimitMB is the soft memory limit of a process running the stages
// names (pipeline.GCConfig): five eighths of their budgets together. The
// rest is for what the limit does not count (the mapped binary, part of a
// stage's resident set) and the collector's overshoot.
func MemoryLimitMB(names []string, cat topics.Catalog, c *Configs) int {
	sum := 0
	for _, n := range names {
		sum += MemoryBudgetMB(n, cat, c)
	}
	return sum * 5 / 8
}
