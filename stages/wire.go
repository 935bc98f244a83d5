// Package stages wires the five stages onto a pipeline.Runtime: the one
// place that knows how `murphy run`, `murphy stage NAME` and the benchmarks
// build them. The stages still talk to each other only through topics.
package stages

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/sandbox"
	"github.com/murphy-rl/murphy/stages/credit"
	"github.com/murphy-rl/murphy/stages/emit"
	"github.com/murphy-rl/murphy/stages/execute"
	"github.com/murphy-rl/murphy/stages/generate"
	"github.com/murphy-rl/murphy/stages/govern"
	"github.com/murphy-rl/murphy/tasks"
	"github.com/murphy-rl/murphy/topics"
)

// Names are the stages in dataflow order.
var Names = []string{"generate", "execute", "govern", "credit", "emit"}

// Index is a stage's position in Names (len(Names) for an unknown name).
func Index(name string) int {
	if i := slices.Index(Names, name); i >= 0 {
		return i
	}
	return len(Names)
}

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

	Generate generate.Config
	Execute  execute.Config
	Govern   govern.Config
	Credit   credit.Config
	Emit     emit.Config
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
	rt, cat, reg := w.Runtime, w.Catalog, w.Runtime.Registry()
	sorted := slices.Clone(names)
	slices.SortStableFunc(sorted, func(a, b string) int { return Index(a) - Index(b) })
	for _, name := range sorted {
		var err error
		switch name {
		case "generate":
			var st *generate.Stage
			if st, err = generate.New(w.Generate, w.Lookup(), cat, reg); err == nil {
				for _, spec := range st.Specs() {
					if err = rt.AddStage(spec); err != nil {
						break
					}
				}
			}
		case "execute":
			runner := w.Runner
			if runner == nil {
				var pool *sandbox.Pool
				if pool, err = sandbox.NewPool(ctx, w.Execute.Sandbox); err != nil {
					err = fmt.Errorf("sandbox: %w", err)
					break
				}
				closers = append(closers, func() { _ = pool.Close() })
				runner = pool
			}
			var st *execute.Stage
			if st, err = execute.New(w.Execute, runner, w.Lookup(), cat, reg); err == nil {
				err = rt.AddStage(st.Spec())
			}
		case "govern":
			var st *govern.Stage
			if st, err = govern.NewStage(w.Govern, w.Lookup(), nil, cat, reg); err == nil {
				err = rt.AddStage(st.Spec())
			}
		case "credit":
			var st *credit.Stage
			if st, err = credit.NewStage(w.Credit, rt.OrderedProducer(), cat, w.Kafka, reg); err == nil {
				err = rt.AddPartitionStage(st.Spec())
			}
		case "emit":
			var st *emit.Stage
			if st, err = emit.NewStage(w.Emit, rt.Producer(), cat, w.Kafka, reg); err == nil {
				err = rt.AddPartitionStage(st.Spec())
			}
		default:
			err = fmt.Errorf("unknown stage %q (stages: %s)", name, strings.Join(Names, ", "))
		}
		if err != nil {
			release()
			return func() {}, fmt.Errorf("stage %s: %w", name, err)
		}
	}
	return release, nil
}

// MemoryBudgetMB is the memory, in MiB, a process running the stage name
// alone is budgeted (BENCHMARKS.md gives the reasons; `murphy bench memory`
// measures it): 128 for the stateless stages, 256 for credit (open trees),
// and for emit 64 plus sixteen times emitMaxBytes per partition of the
// catalog (an open batch per partition, held several times over while it
// is encoded, with the collector's headroom).
func MemoryBudgetMB(name string, cat topics.Catalog, emitMaxBytes int) int {
	switch name {
	case "credit":
		return 256
	case "emit":
		return 64 + 16*max(cat.Partitions, 1)*emitMaxBytes>>20
	}
	return 128
}

// MemoryLimitMB is the soft memory limit of a process running the stages
// names (pipeline.GCConfig): five eighths of their budgets together. The
// rest is for what the limit does not count (the mapped binary, about 25
// MiB of a stage's resident set) and the collector's overshoot.
func MemoryLimitMB(names []string, cat topics.Catalog, emitMaxBytes int) int {
	sum := 0
	for _, n := range names {
		sum += MemoryBudgetMB(n, cat, emitMaxBytes)
	}
	return sum * 5 / 8
}
