package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/sandbox"
	"github.com/murphy-rl/murphy/stages"
	"github.com/murphy-rl/murphy/stages/emit"
	"github.com/murphy-rl/murphy/tasks"
	"github.com/murphy-rl/murphy/tasks/submit"
	"github.com/murphy-rl/murphy/topics"
)

// Run is the timing of one run through the five hops.
type Run struct {
	// Trees and Samples are what reached the batches topic.
	Trees, Samples int
	// Wall runs from the start of the consumers to the last batch; Active
	// from the first candidate on the broker to the last batch, so the
	// consumer groups' start-up is left out.
	Wall, Active time.Duration
	// CPU is this process's CPU time (user and system) over Wall: every
	// stage and broker client (and the embedded broker, when it is one).
	CPU time.Duration
	// Stages holds, per runtime stage, records consumed and the mean
	// handler time (a pipeline run only).
	Stages []StageStat
	// reg is the pipeline runtime's registry (a pipeline run only).
	reg *prometheus.Registry
}

// StageStat is one runtime stage's share of a pipeline run.
type StageStat struct {
	Name    string
	Records int
	// MeanHandler is the mean time in the stage's handler per record
	// (producing the outputs excluded for stateless stages).
	MeanHandler time.Duration
}

// stageStats reads the runtime's per-stage metrics.
func stageStats(reg *prometheus.Registry) []StageStat {
	mfs, err := reg.Gather()
	if err != nil {
		return nil
	}
	by := map[string]*StageStat{}
	get := func(m *dto.Metric) *StageStat {
		for _, l := range m.GetLabel() {
			if l.GetName() == "stage" {
				st, ok := by[l.GetValue()]
				if !ok {
					st = &StageStat{Name: l.GetValue()}
					by[l.GetValue()] = st
				}
				return st
			}
		}
		return &StageStat{}
	}
	for _, mf := range mfs {
		switch mf.GetName() {
		case "murphy_records_in_total":
			for _, m := range mf.GetMetric() {
				get(m).Records += int(m.GetCounter().GetValue())
			}
		case "murphy_handler_seconds":
			for _, m := range mf.GetMetric() {
				h := m.GetHistogram()
				if h.GetSampleCount() > 0 {
					get(m).MeanHandler = time.Duration(h.GetSampleSum() / float64(h.GetSampleCount()) * float64(time.Second))
				}
			}
		}
	}
	out := make([]StageStat, 0, len(by))
	for _, st := range by {
		out = append(out, *st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (r Run) stagesString() string {
	parts := make([]string, len(r.Stages))
	for i, s := range r.Stages {
		parts[i] = fmt.Sprintf("%s %d in, %s", s.Name, s.Records, s.MeanHandler.Round(10*time.Microsecond))
	}
	return strings.Join(parts, "; ")
}

// Rate is samples per second over Active.
func (r Run) Rate() float64 { return float64(r.Samples) / max(r.Active.Seconds(), 1e-9) }

// CPUPerSample is the process CPU time spent per sample.
func (r Run) CPUPerSample() time.Duration { return r.CPU / time.Duration(max(r.Samples, 1)) }

// cpuTime is this process's CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// submitConfig is the seeding of a run of treesPerTask trees per task.
func (c Config) submitConfig(runID string, treesPerTask int) submit.Config {
	sub := submit.DefaultConfig()
	sub.RunID, sub.MaxTurns, sub.GroupSizes, sub.GroupSize = runID, c.Turns, c.GroupSizes, c.GroupSizes[0]
	sub.TreesPerTask, sub.Seed = treesPerTask, c.Seed
	return sub
}

// executeWith says how the execute stage evaluates: through a sandbox pool
// (the production stage) or through another runner (Verdict).
type executeWith struct {
	pool   *sandbox.Pool
	runner sandbox.Runner
}

// runPipeline submits the trees, then runs every stage in this process on
// one runtime, exactly as `murphy run` wires them except for the execute
// stage's runner, until every tree is in a batch.
func runPipeline(ctx context.Context, b *Broker, cat topics.Catalog, c Config, ex executeWith, ts []topics.Task, sub submit.Config, logw io.Writer) (Run, error) {
	defer labelSide(ctx, "pipeline")()
	ctx, cancel := context.WithTimeout(ctx, c.RunTimeout)
	defer cancel()
	prod := pipeline.NewProducer(b.Kafka)
	rep, err := submit.Publish(ctx, prod, cat, sub, ts, 0)
	prod.Close()
	if err != nil {
		return Run{}, fmt.Errorf("bench: submit: %w", err)
	}
	if len(rep.Skipped) > 0 {
		return Run{}, fmt.Errorf("bench: submit skipped tasks: %w", errors.Join(rep.Skipped...))
	}
	rt, err := pipeline.NewRuntime(pipeline.RuntimeConfig{Kafka: b.Kafka, Catalog: cat, Name: "bench",
		GroupPrefix: cat.Prefix, Logger: quietLogger(logw)})
	if err != nil {
		return Run{}, err
	}
	table := pipeline.NewTable(b.Kafka, cat.Topic(topics.Tasks), 4096)
	defer table.Close()
	lookup := tasks.FromTable(table, pipeline.ErrNotFound)
	if err := addStages(ctx, rt, b.Kafka, cat, c, ex, lookup); err != nil {
		rt.Producer().Close()
		return Run{}, err
	}
	w, err := startWatch(ctx, b.Kafka, cat)
	if err != nil {
		rt.Producer().Close()
		return Run{}, err
	}
	runCtx, stop := context.WithCancel(context.Background())
	var runErr error
	stopped := make(chan struct{})
	start, cpu0 := time.Now(), cpuTime()
	go func() {
		runErr = rt.Run(runCtx)
		close(stopped)
	}()
	res, werr := w.wait(ctx, rep.Trees, stopped)
	res.CPU = cpuTime() - cpu0
	stop()
	<-stopped
	if runErr != nil && !errors.Is(runErr, context.Canceled) && werr == nil {
		werr = fmt.Errorf("bench: runtime: %w", runErr)
	}
	res.Wall = w.last.Sub(start)
	res.Stages = stageStats(rt.Registry())
	res.reg = rt.Registry()
	return res, werr
}

// addStages wires the five stages onto rt as `murphy run` does (stages.Add),
// except that execute evaluates through ex: the benchmark's pool, or a
// runner standing in for one, as many at once as that pool would.
func addStages(ctx context.Context, rt *pipeline.Runtime, kc pipeline.KafkaConfig, cat topics.Catalog, c Config, ex executeWith, lookup tasks.Lookup) error {
	ec := c.Execute
	var runner sandbox.Runner = ex.pool
	if ex.pool == nil {
		runner = ex.runner
		n := c.VerdictConcurrency
		if n == 0 {
			n = c.Execute.Concurrency
		}
		if n == 0 {
			n = c.Execute.Sandbox.Workers
			if n == 0 {
				n = startMachine().CPUs
			}
		}
		ec.Concurrency = n
	}
	sc := c.Configs
	sc.Execute = ec
	_, err := stages.Add(ctx, stages.Wiring{
		Runtime: rt, Kafka: kc, Catalog: cat, Lookup: func() tasks.Lookup { return lookup }, Runner: runner, Configs: sc,
	}, stages.Names())
	return err
}

// watch follows a run from outside any consumer group: the first candidate
// and the batches (trees and rows from their headers, each batch once).
type watch struct {
	first, last time.Time
	candidates  <-chan pipeline.Record
	batches     <-chan pipeline.Record
	stopCands   context.CancelFunc
	stop        context.CancelFunc
}

func startWatch(ctx context.Context, kc pipeline.KafkaConfig, cat topics.Catalog) (*watch, error) {
	wctx, stop := context.WithCancel(ctx)
	cctx, stopCands := context.WithCancel(wctx)
	cands, err := pipeline.Tail(cctx, kc, cat.Topic(topics.Candidates))
	if err != nil {
		stopCands()
		stop()
		return nil, err
	}
	batches, err := pipeline.Tail(wctx, kc, cat.Topic(topics.Batches))
	if err != nil {
		stopCands()
		stop()
		return nil, err
	}
	return &watch{candidates: cands, batches: batches, stopCands: stopCands, stop: stop}, nil
}

// wait returns when trees trees are in batches, when ctx ends or when
// stopped is closed (what is being watched stopped early).
func (w *watch) wait(ctx context.Context, trees int, stopped <-chan struct{}) (Run, error) {
	defer w.stop()
	var res Run
	seen := map[string]bool{}
	cands := w.candidates
	for res.Trees < trees {
		select {
		case <-ctx.Done():
			return res, fmt.Errorf("bench: %d of %d trees in batches: %w", res.Trees, trees, ctx.Err())
		case <-stopped:
			return res, fmt.Errorf("bench: stopped with %d of %d trees in batches", res.Trees, trees)
		case _, ok := <-cands:
			if ok && w.first.IsZero() {
				w.first = time.Now()
				w.stopCands()
			}
			if !ok || !w.first.IsZero() {
				cands = nil
			}
		case rec := <-w.batches:
			id := rec.Headers[emit.HeaderBatchID]
			if id == "" || seen[id] {
				continue
			}
			seen[id] = true
			n, err1 := strconv.Atoi(rec.Headers[emit.HeaderTrees])
			r, err2 := strconv.Atoi(rec.Headers[emit.HeaderRows])
			if err1 != nil || err2 != nil {
				return res, fmt.Errorf("bench: batch %s without tree and row counts", id)
			}
			res.Trees += n
			res.Samples += r
			w.last = time.Now()
		}
	}
	if w.first.IsZero() {
		w.first = w.last
	}
	res.Active = w.last.Sub(w.first)
	return res, nil
}
