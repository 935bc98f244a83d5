package bench

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/topics"
)

// OverheadResult is the pipeline against raw kafka-go over the same records.
type OverheadResult struct {
	Broker  string
	Machine Machine
	// Tasks and TreesPerTask size the run.
	Tasks, TreesPerTask int
	// Pipeline is the whole pipeline with the in-process verdict; Raw the
	// raw kafka-go hops replaying its records.
	Pipeline, Raw Run
	// Records and Bytes (keys and values) moved by each, over every hop.
	Records int
	Bytes   int64
	// Jobs is how many jobs the verdict decided.
	Jobs int64
	// PipelinePrefix and RawPrefix name the two runs' topics (deleted
	// afterwards unless Config.Keep).
	PipelinePrefix, RawPrefix string
	// PipelineGC and RawGC are the collector's target (GOGC) each side ran
	// with.
	PipelineGC, RawGC int
}

// RawGCPercent is the collector's target of the raw side: Go's default,
// as a plain kafka-go program runs. It is also the faster one for it here:
// the raw side runs with every record of the run in memory (its plan), and
// with the stages' target of 300 its heap grows several times larger and
// the raw loops run slower.
const RawGCPercent = 100

// Ratio is pipeline samples/s over raw samples/s.
func (r OverheadResult) Ratio() float64 { return r.Pipeline.Rate() / max(r.Raw.Rate(), 1e-9) }

func (r OverheadResult) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "overhead: pipeline with an in-process verdict vs raw kafka-go moving the same records through the same hops\n")
	fmt.Fprintf(&b, "  broker    %s\n", r.Broker)
	fmt.Fprintf(&b, "  machine   %s\n", r.Machine)
	fmt.Fprintf(&b, "  workload  %d tasks x %d trees = %d trees, %d samples; %d records, %.1f MB over prompts→candidates→executions→samples(+refinements)→credited(+completions)→batches\n",
		r.Tasks, r.TreesPerTask, r.Pipeline.Trees, r.Pipeline.Samples, r.Records, float64(r.Bytes)/1e6)
	fmt.Fprintf(&b, "  pipeline  %8.1f samples/s (%d samples in %s; %s with consumer start-up; %s CPU per sample; GOGC %d)\n",
		r.Pipeline.Rate(), r.Pipeline.Samples, r.Pipeline.Active.Round(time.Millisecond), r.Pipeline.Wall.Round(time.Millisecond), r.Pipeline.CPUPerSample().Round(time.Microsecond), r.PipelineGC)
	fmt.Fprintf(&b, "  stages    %s (records in, mean handler time)\n", r.Pipeline.stagesString())
	fmt.Fprintf(&b, "  raw       %8.1f samples/s (%d samples in %s; %s with consumer start-up; %s CPU per sample; GOGC %d)\n",
		r.Raw.Rate(), r.Raw.Samples, r.Raw.Active.Round(time.Millisecond), r.Raw.Wall.Round(time.Millisecond), r.Raw.CPUPerSample().Round(time.Microsecond), r.RawGC)
	fmt.Fprintf(&b, "  topics    %s* (pipeline), %s* (raw)\n", r.PipelinePrefix, r.RawPrefix)
	fmt.Fprintf(&b, "  ratio     %.2f (target >= %.1f: %s)\n", r.Ratio(), OverheadTarget, ratioVerdict(r.Ratio(), OverheadTarget))
	return b.String()
}

// Overhead runs the pipeline with the sandbox replaced by Verdict over
// c.TreesPerTask trees per task, then raw kafka-go hops over the records
// that run produced, in this process, on b.
func Overhead(ctx context.Context, b *Broker, c Config, ts []topics.Task, logw io.Writer) (OverheadResult, error) {
	if err := c.Validate(); err != nil {
		return OverheadResult{}, err
	}
	c = c.seeded()
	res := OverheadResult{Broker: b.String(), Machine: startMachine(), Tasks: len(ts), TreesPerTask: c.TreesPerTask}
	defer res.Machine.finish()
	cat, err := b.catalog(ctx, "overhead", c.Partitions)
	if err != nil {
		return res, err
	}
	if !c.Keep {
		defer b.deleteTopics(cat)
	}
	res.PipelinePrefix = cat.Prefix
	v := NewVerdict(ts)
	res.PipelineGC = pipeline.GCPercent()
	freshHeap()
	res.Pipeline, err = runPipeline(ctx, b, cat, c, executeWith{runner: v}, ts, c.submitConfig("bench-overhead", c.TreesPerTask), logw)
	if err != nil {
		return res, fmt.Errorf("overhead: pipeline: %w", err)
	}
	res.Jobs = v.Jobs()
	rawCat, err := b.catalog(ctx, "raw", c.Partitions)
	if err != nil {
		return res, err
	}
	if !c.Keep {
		defer b.deleteTopics(rawCat)
	}
	res.RawPrefix = rawCat.Prefix
	p, err := buildPlan(ctx, b.Kafka, cat, rawCat)
	if err != nil {
		return res, fmt.Errorf("overhead: %w", err)
	}
	if p.samples != res.Pipeline.Samples || p.trees != res.Pipeline.Trees {
		return res, fmt.Errorf("overhead: topics hold %d samples of %d trees, batches %d of %d", p.samples, p.trees, res.Pipeline.Samples, res.Pipeline.Trees)
	}
	res.Records, res.Bytes = p.records, p.bytes
	prev := debug.SetGCPercent(RawGCPercent)
	res.RawGC = RawGCPercent
	freshHeap()
	res.Raw, err = runRaw(ctx, b, rawCat, p, c.RunTimeout)
	debug.SetGCPercent(prev)
	if err != nil {
		return res, fmt.Errorf("overhead: raw: %w", err)
	}
	res.Machine.finish()
	return res, nil
}

// freshHeap collects what earlier work left (the previous run, building
// the plan) and returns the free memory to the OS, so that each side starts
// like a fresh process that has only its own live data: without it a run
// after another inherited the other's heap, either a collector target set
// by the previous run's plan (no collection for gigabytes, every page new
// to the process) or pages already mapped (none new), and the later runs
// of a series did not measure like the first.
func freshHeap() {
	debug.FreeOSMemory() // a full collection, then the free memory returned
}

// OverheadSeries is several overhead runs one after the other: the
// machine's state moves a single run's figures (BENCHMARKS.md), so the
// series' figure is the median of its runs' ratios.
type OverheadSeries []OverheadResult

// Ratio is the median of the runs' ratios (0 for no run).
func (s OverheadSeries) Ratio() float64 {
	r := make([]float64, len(s))
	for i, x := range s {
		r[i] = x.Ratio()
	}
	return median(r)
}

func (s OverheadSeries) String() string {
	parts := make([]string, len(s))
	for i, x := range s {
		parts[i] = fmt.Sprintf("%.2f", x.Ratio())
	}
	return fmt.Sprintf("overhead over %d runs: ratios %s; median %.2f (target >= %.1f: %s)\n",
		len(s), strings.Join(parts, " "), s.Ratio(), OverheadTarget, ratioVerdict(s.Ratio(), OverheadTarget))
}

// median of xs (the mean of the middle two for an even count; 0 for none).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
