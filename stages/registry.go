package stages

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/murphy-rl/murphy/compilefix"
	"github.com/murphy-rl/murphy/sandbox"
	"github.com/murphy-rl/murphy/stages/credit"
	"github.com/murphy-rl/murphy/stages/emit"
	"github.com/murphy-rl/murphy/stages/execute"
	"github.com/murphy-rl/murphy/stages/generate"
	"github.com/murphy-rl/murphy/stages/govern"
	"github.com/murphy-rl/murphy/topics"
)

// Configs holds every stage's configuration section, keyed in YAML, the
// environment and flags by the stage's name.
type Configs struct {
	Generate generate.Config `yaml:"generate"`
	Execute  execute.Config  `yaml:"execute"`
	Govern   govern.Config   `yaml:"govern"`
	Credit   credit.Config   `yaml:"credit"`
	Emit     emit.Config     `yaml:"emit"`
}

// DefaultConfigs returns every stage's defaults.
func DefaultConfigs() Configs {
	return Configs{
		Generate: generate.DefaultConfig(),
		Execute:  execute.DefaultConfig(),
		Govern:   govern.DefaultConfig(),
		Credit:   credit.DefaultConfig(),
		Emit:     emit.DefaultConfig(),
	}
}

// Validator is a stage's configuration section.
type Validator interface{ Validate() error }

// Descriptor is everything the commands, the wiring and the benchmarks know
// about one stage. Adding a stage is adding a descriptor (and its section
// in Configs).
type Descriptor struct {
	// Name names the stage: `murphy stage NAME`, its configuration section,
	// its consumer group, its metrics label.
	Name string
	// Inputs are the topics whose records the stage processes.
	Inputs []topics.Name
	// Reads are the topics it reads beside its inputs (the task table,
	// completions for admission, its own output read back on assignment).
	Reads []topics.Name
	// Outputs are the topics it produces; the first is its main output.
	Outputs []topics.Name
	// Section returns the stage's configuration section of c.
	Section func(c *Configs) Validator
	// Build constructs the stage on w.Runtime. release frees what it holds
	// (nil when nothing); it is called once the runtime has stopped.
	Build func(ctx context.Context, w Wiring) (release func(), err error)
	// MemoryBudgetMB is the memory, in MiB, a process running the stage
	// alone is budgeted (`murphy bench memory` measures it against it).
	MemoryBudgetMB func(cat topics.Catalog, c *Configs) int
}

// descriptors are the stages in dataflow order.
var descriptors = [...]Descriptor{
	{
		Name:    "generate",
		Inputs:  []topics.Name{topics.Prompts, topics.BackfillPrompts, topics.Refinements},
		Reads:   []topics.Name{topics.Completions, topics.Tasks, topics.PolicyVersions, topics.TrainerProgressTopic, topics.Admissions},
		Outputs: []topics.Name{topics.Candidates, topics.Admissions},
		Section: func(c *Configs) Validator { return &c.Generate },
		Build: func(ctx context.Context, w Wiring) (func(), error) {
			release := func() {}
			var opts []generate.Option
			if w.Generate.Episodes.Enabled {
				eps, closeEps, err := generate.OpenEpisodes(ctx, w.Generate.Episodes)
				if err != nil {
					return nil, fmt.Errorf("episodes: %w", err)
				}
				release = closeEps
				opts = append(opts, generate.WithEpisodes(eps))
			}
			st, err := generate.NewStage(w.Generate, w.Lookup(), w.Catalog, w.Runtime.Registry(), opts...)
			if err != nil {
				release()
				return nil, err
			}
			for _, spec := range st.Specs() {
				if err := w.Runtime.AddStage(spec); err != nil {
					release()
					st.Close()
					return nil, err
				}
			}
			st.Follow(ctx, w.Kafka)
			return func() { release(); st.Close() }, nil
		},
		MemoryBudgetMB: stateless,
	},
	{
		Name:    "execute",
		Inputs:  []topics.Name{topics.Candidates},
		Reads:   []topics.Name{topics.Tasks},
		Outputs: []topics.Name{topics.Executions},
		Section: func(c *Configs) Validator { return &c.Execute },
		Build: func(ctx context.Context, w Wiring) (func(), error) {
			runner, release := w.Runner, func() {}
			if runner == nil {
				pool, err := sandbox.NewPool(ctx, w.Execute.Sandbox)
				if err != nil {
					return nil, fmt.Errorf("sandbox: %w", err)
				}
				runner, release = pool, func() { _ = pool.Close() }
			}
			var opts []execute.Option
			if w.Execute.CompileFix.Store != "" {
				cf, closeCF, err := compilefix.Open(ctx, w.Execute.CompileFix)
				if err != nil {
					release()
					return nil, fmt.Errorf("compile-fix: %w", err)
				}
				prev := release
				release = func() { closeCF(); prev() }
				opts = append(opts, execute.WithCompileFix(cf))
			}
			st, err := execute.NewStage(w.Execute, runner, w.Lookup(), w.Catalog, w.Runtime.Registry(), opts...)
			if err == nil {
				err = w.Runtime.AddStage(st.Spec())
			}
			if err != nil {
				release()
				return nil, err
			}
			return release, nil
		},
		MemoryBudgetMB: stateless,
	},
	{
		Name:    "govern",
		Inputs:  []topics.Name{topics.Executions},
		Reads:   []topics.Name{topics.Tasks},
		Outputs: []topics.Name{topics.Samples, topics.Refinements},
		Section: func(c *Configs) Validator { return &c.Govern },
		Build: func(_ context.Context, w Wiring) (func(), error) {
			st, err := govern.NewStage(w.Govern, w.Lookup(), nil, w.Catalog, w.Runtime.Registry())
			if err != nil {
				return nil, err
			}
			if err := w.Runtime.AddStage(st.Spec()); err != nil {
				st.Close()
				return nil, err
			}
			return st.Close, nil
		},
		MemoryBudgetMB: stateless,
	},
	{
		Name:    "credit",
		Inputs:  []topics.Name{topics.Samples},
		Reads:   []topics.Name{topics.Credited},
		Outputs: []topics.Name{topics.Credited, topics.Completions},
		Section: func(c *Configs) Validator { return &c.Credit },
		Build: func(_ context.Context, w Wiring) (func(), error) {
			st, err := credit.NewStage(w.Credit, w.Runtime.OrderedProducer(), w.Catalog, w.Kafka, w.Runtime.Registry(),
				credit.WithLogger(w.Runtime.Logger()))
			if err != nil {
				return nil, err
			}
			return nil, w.Runtime.AddPartitionStage(st.Spec())
		},
		// Open trees.
		MemoryBudgetMB: func(topics.Catalog, *Configs) int { return 256 },
	},
	{
		Name:    "emit",
		Inputs:  []topics.Name{topics.Credited},
		Reads:   []topics.Name{topics.Batches, topics.PolicyVersions},
		Outputs: []topics.Name{topics.Batches},
		Section: func(c *Configs) Validator { return &c.Emit },
		Build: func(ctx context.Context, w Wiring) (func(), error) {
			st, err := emit.NewStage(w.Emit, w.Runtime.Producer(), w.Catalog, w.Kafka, w.Runtime.Registry())
			if err != nil {
				return nil, err
			}
			if err := w.Runtime.AddPartitionStage(st.Spec()); err != nil {
				return nil, err
			}
			st.Follow(ctx, w.Kafka)
			return nil, nil
		},
		// An open batch per partition, held several times over while it is
		// encoded, with the collector's headroom.
		MemoryBudgetMB: func(cat topics.Catalog, c *Configs) int {
			return 64 + 16*max(cat.Partitions, 1)*c.Emit.MaxBytes>>20
		},
	},
}

func stateless(topics.Catalog, *Configs) int { return 128 }

// All returns the stage descriptors in dataflow order (a fresh copy).
func All() []Descriptor {
	out := descriptors
	for i := range out {
		out[i].Inputs = slices.Clone(out[i].Inputs)
		out[i].Reads = slices.Clone(out[i].Reads)
		out[i].Outputs = slices.Clone(out[i].Outputs)
	}
	return out[:]
}

// Names returns the stage names in dataflow order (a fresh slice).
func Names() []string {
	names := make([]string, len(descriptors))
	for i := range descriptors {
		names[i] = descriptors[i].Name
	}
	return names
}

// Get returns the descriptor of the named stage.
func Get(name string) (Descriptor, error) {
	if i := Index(name); i < len(descriptors) {
		return All()[i], nil
	}
	return Descriptor{}, fmt.Errorf("unknown stage %q (stages: %s)", name, strings.Join(Names(), ", "))
}

// Index is a stage's position in dataflow order (len(All()) for an unknown
// name).
func Index(name string) int {
	if i := slices.IndexFunc(descriptors[:], func(d Descriptor) bool { return d.Name == name }); i >= 0 {
		return i
	}
	return len(descriptors)
}
