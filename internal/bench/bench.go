// Package bench measures the whole pipeline, each figure as a ratio against
// a baseline measured in the same run, on the same machine and broker:
//
//   - Overhead: end-to-end samples/s of the pipeline (simulated policy,
//     execute, govern, credit, emit on the stage runtime) with the sandbox
//     replaced by an in-process verdict (Verdict, benchmark only), against
//     raw kafka-go loops moving the same records (same keys, values and
//     headers) through the same five hops and the refinement loop.
//   - Bottleneck use: end-to-end samples/s with the real sandbox pool,
//     against the same pool's standalone executions/s over the very
//     candidates that run produced.
//   - Memory: the peak RSS (VmHWM) of each stage, run as its own process,
//     working through a backlog of 10,000 trees on its input topics.
//
// `murphy bench` prints the three figures; BENCHMARKS.md records them.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/sandbox"
	"github.com/murphy-rl/murphy/stages"
	"github.com/murphy-rl/murphy/stages/credit"
	"github.com/murphy-rl/murphy/stages/emit"
	"github.com/murphy-rl/murphy/stages/execute"
	"github.com/murphy-rl/murphy/stages/generate"
	"github.com/murphy-rl/murphy/stages/govern"
	"github.com/murphy-rl/murphy/topics"
)

// Targets of the issue; a figure below its target is reported, not hidden.
const (
	// OverheadTarget is the least pipeline/raw throughput ratio.
	OverheadTarget = 0.5
	// BottleneckTarget is the least pipeline/standalone-pool ratio.
	BottleneckTarget = 0.8
)

// Config configures the benchmarks.
type Config struct {
	// Brokers of a Kafka cluster; empty starts an embedded broker in this
	// process.
	Brokers []string `yaml:"brokers"`
	// Partitions of every benchmark topic.
	Partitions int `yaml:"partitions"`
	// GroupSizes are the children sampled per turn (the last repeats).
	GroupSizes []int `yaml:"group_sizes"`
	// Turns is the depth of every tree.
	Turns int `yaml:"turns"`
	// TreesPerTask sizes the overhead run: 160 (about 20,000 samples) so
	// that the figure is the pipeline's steady state rather than the fill
	// and drain of generate's waves of trees in flight.
	TreesPerTask int `yaml:"trees_per_task"`
	// BottleneckTreesPerTask sizes the bottleneck run (real sandbox).
	BottleneckTreesPerTask int `yaml:"bottleneck_trees_per_task"`
	// VerdictConcurrency is the execute stage's concurrency when the
	// in-process verdict stands in for the sandbox (the pool no longer
	// bounds it); 0 keeps Execute.Concurrency or the pool size.
	VerdictConcurrency int `yaml:"verdict_concurrency"`
	// Seed seeds the simulated policy and the sandbox.
	Seed int64 `yaml:"seed"`
	// RunTimeout bounds one pipeline run.
	RunTimeout time.Duration `yaml:"run_timeout"`
	// Configs configures the stages: production defaults, except no cap on
	// trees in flight for generate, half the CPUs for execute's sandbox pool
	// and the batches topic only (no files) for emit (DefaultConfig).
	stages.Configs `yaml:",inline,flatten,squash"`
	// Memory configures the memory benchmark.
	Memory MemoryConfig `yaml:"memory"`
	// Keep leaves the benchmark topics on the broker for inspection
	// (default: deleted after each benchmark).
	Keep bool `yaml:"keep"`
}

// MemoryConfig configures the memory benchmark.
type MemoryConfig struct {
	// Trees is the backlog: at least this many trees (whole multiples of
	// the task set) are on every stage's input topics before it starts.
	Trees int `yaml:"trees"`
	// StageTimeout bounds each stage's run over its backlog; a stage that
	// has not drained it by then is measured over what it processed.
	StageTimeout time.Duration `yaml:"stage_timeout"`
	// BoundsMB overrides, by stage name, the documented bound on a stage
	// process's peak RSS (Config.Bound).
	BoundsMB map[string]int `yaml:"bounds_mb"`
}

// Bound is the documented bound, in MiB, on the peak RSS of stage's
// process: its memory budget (stages.MemoryBudgetMB) over the benchmark's
// partitions, unless BoundsMB overrides it.
func (c Config) Bound(stage string) int {
	if b := c.Memory.BoundsMB[stage]; b > 0 {
		return b
	}
	return stages.MemoryBudgetMB(stage, topics.Catalog{Partitions: c.Partitions}, &c.Configs)
}

// SandboxBound is the bound, in MiB, on execute's sandbox processes
// together: the pool enforces it, with one memory cgroup of
// slot_memory_mb per sandbox (or, without one, the job's address-space
// budget above a warm interpreter).
func (c Config) SandboxBound() int {
	w := c.Execute.Sandbox.Workers
	if w == 0 {
		w = runtime.NumCPU()
	}
	if c.Execute.Sandbox.SlotMemoryMB > 0 {
		return w * c.Execute.Sandbox.SlotMemoryMB
	}
	return w * (c.Execute.Sandbox.Limits.MemoryMB + 128)
}

// labelSide labels the goroutines this one starts from now on with
// side=name in CPU profiles (murphy bench --cpuprofile); the returned func
// puts back ctx's labels.
func labelSide(ctx context.Context, name string) (restore func()) {
	pprof.SetGoroutineLabels(pprof.WithLabels(ctx, pprof.Labels("side", name)))
	return func() { pprof.SetGoroutineLabels(ctx) }
}

// BenchEmitMaxAge is emit's batch age in the benchmarks (--emit-max-age).
const BenchEmitMaxAge = 100 * time.Millisecond

// DefaultConfig is G=2 over 2 turns on 4 partitions, sized to take a few
// minutes on a two-core machine. The sandbox pool gets half the CPUs: the
// other half runs the rest of the pipeline, the broker and the benchmark's
// own monitoring, as execute's own machines would in a deployment.
func DefaultConfig() Config {
	gen := generate.DefaultConfig()
	// Every tree of the run is admitted at once, as the raw baseline seeds
	// every root prompt at once: the production cap on trees in flight is
	// flow control (it bounds what credit holds open), not work, and with
	// it the stages see the workload in waves the baseline never waits for.
	// --max-trees-in-flight sets it.
	gen.MaxTreesInFlight = 0
	ex := execute.DefaultConfig()
	ex.Sandbox.Workers = max(1, runtime.NumCPU()/2)
	em := emit.DefaultConfig()
	em.Topic, em.Dir = true, ""
	// A benchmark run is finite: with the production batch age (2 s) its
	// last partial batch of every partition waits out the timer, and the
	// figure would measure that wait rather than throughput (the raw emit
	// loop writes its batches as trees arrive). Full batches are not held
	// back either way.
	em.MaxAge = BenchEmitMaxAge
	return Config{
		Partitions:             4,
		GroupSizes:             []int{2},
		Turns:                  2,
		TreesPerTask:           160,
		BottleneckTreesPerTask: 8,
		VerdictConcurrency:     16,
		Seed:                   1,
		RunTimeout:             10 * time.Minute,
		Configs:                stages.Configs{Generate: gen, Execute: ex, Govern: govern.DefaultConfig(), Credit: credit.DefaultConfig(), Emit: em},
		Memory: MemoryConfig{
			Trees:        10000,
			StageTimeout: 2 * time.Minute,
		},
	}
}

// Validate checks the configuration.
func (c Config) Validate() error {
	var errs []error
	if c.Partitions < 1 {
		errs = append(errs, fmt.Errorf("partitions must be >= 1, got %d", c.Partitions))
	}
	if len(c.GroupSizes) == 0 {
		errs = append(errs, errors.New("group_sizes must not be empty"))
	}
	for _, g := range c.GroupSizes {
		if g < 1 {
			errs = append(errs, fmt.Errorf("group_sizes entries must be >= 1, got %d", g))
		}
	}
	if c.Turns < 1 || c.TreesPerTask < 1 || c.BottleneckTreesPerTask < 1 {
		errs = append(errs, errors.New("turns, trees_per_task and bottleneck_trees_per_task must be >= 1"))
	}
	if c.VerdictConcurrency < 0 {
		errs = append(errs, fmt.Errorf("verdict_concurrency must be >= 0, got %d", c.VerdictConcurrency))
	}
	if c.RunTimeout <= 0 {
		errs = append(errs, errors.New("run_timeout must be > 0"))
	}
	if c.Memory.Trees < 1 || c.Memory.StageTimeout <= 0 {
		errs = append(errs, errors.New("memory: trees and stage_timeout must be > 0"))
	}
	for stage, mb := range c.Memory.BoundsMB {
		if !slices.Contains(stages.Names(), stage) || mb < 1 {
			errs = append(errs, fmt.Errorf("memory: bound %s=%d: stage must be one of %v, bound >= 1", stage, mb, stages.Names()))
		}
	}
	if err := c.Configs.Validate(stages.Names()); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("bench config: %w", err)
	}
	return nil
}

// seeded returns c with the seed applied to the policy and the sandbox.
func (c Config) seeded() Config {
	c.Generate.Policy.Simulated.Seed = c.Seed
	c.Execute.Sandbox.Seed = c.Seed
	return c
}

// Broker is where a benchmark runs: a real cluster or an embedded broker.
type Broker struct {
	// Kafka is the client configuration.
	Kafka pipeline.KafkaConfig
	// Kind says which: "real Kafka" or "embedded (kfake)".
	Kind     string
	embedded *pipeline.Embedded
}

// OpenBroker connects to brokers, or starts an embedded broker when none
// is given.
func OpenBroker(brokers []string, partitions int) (*Broker, error) {
	kc := pipeline.DefaultKafkaConfig()
	kc.ClientID = "murphy-bench"
	if len(brokers) > 0 {
		kc.Brokers = brokers
		return &Broker{Kafka: kc, Kind: "real Kafka"}, nil
	}
	e, err := pipeline.StartEmbedded(pipeline.EmbeddedConfig{Partitions: partitions})
	if err != nil {
		return nil, err
	}
	kc.Brokers = e.Brokers()
	return &Broker{Kafka: kc, Kind: "embedded (kfake)", embedded: e}, nil
}

// String names the broker and its addresses.
func (b *Broker) String() string {
	return b.Kind + " at " + strings.Join(b.Kafka.Brokers, ",")
}

// Close stops an embedded broker.
func (b *Broker) Close() {
	if b.embedded != nil {
		b.embedded.Close()
	}
}

// catalog returns a fresh catalog (unique prefix) with its topics created.
func (b *Broker) catalog(ctx context.Context, name string, partitions int) (topics.Catalog, error) {
	cat := topics.Catalog{Prefix: fmt.Sprintf("bench-%s-%d-%d.", name, os.Getpid(), time.Now().UnixNano()), Partitions: partitions}
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := pipeline.EnsureTopics(cctx, b.Kafka, cat); err != nil {
		return cat, fmt.Errorf("bench: topics %s*: %w", cat.Prefix, err)
	}
	return cat, nil
}

// deleteTopics deletes every topic of cats (best effort: the figures are
// already measured).
func (b *Broker) deleteTopics(cats ...topics.Catalog) {
	var names []string
	for _, cat := range cats {
		for _, n := range topics.All() {
			names = append(names, cat.Topic(n))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tr := b.Kafka.Transport()
	defer tr.CloseIdleConnections()
	client := &kafka.Client{Addr: kafka.TCP(b.Kafka.Brokers...), Timeout: time.Minute, Transport: tr}
	_, _ = client.DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: names})
}

// Machine describes where the figures were measured.
type Machine struct {
	CPUs int
	// LoadBefore and LoadAfter are /proc/loadavg's 1, 5 and 15 minute
	// averages (other work on the machine slows every figure).
	LoadBefore, LoadAfter string
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "n/a"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "n/a"
	}
	return strings.Join(f[:3], " ")
}

func startMachine() Machine { return Machine{CPUs: runtime.NumCPU(), LoadBefore: loadAvg()} }

func (m *Machine) finish() { m.LoadAfter = loadAvg() }

func (m Machine) String() string {
	return fmt.Sprintf("%d CPUs, load average %s before, %s after", m.CPUs, m.LoadBefore, m.LoadAfter)
}

// quietLogger keeps the stages' own logs to warnings and errors.
func quietLogger(w io.Writer) *slog.Logger {
	if w == nil {
		w = io.Discard
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// newPool starts the sandbox pool of c.
func newPool(ctx context.Context, c Config) (*sandbox.Pool, error) {
	p, err := sandbox.NewPool(ctx, c.Execute.Sandbox)
	if err != nil {
		return nil, fmt.Errorf("bench: sandbox pool: %w", err)
	}
	return p, nil
}

func ratioVerdict(ratio, target float64) string {
	if ratio >= target {
		return "meets"
	}
	return "BELOW"
}
