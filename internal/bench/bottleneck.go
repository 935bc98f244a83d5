package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/murphy-rl/murphy/stages/execute"
	"github.com/murphy-rl/murphy/topics"
)

// BottleneckResult is the pipeline with the real sandbox against the same
// pool evaluating the same candidates on its own.
type BottleneckResult struct {
	Broker  string
	Machine Machine
	// Tasks and TreesPerTask size the run; Workers is the pool size.
	Tasks, TreesPerTask, Workers int
	// Pipeline is the end-to-end run.
	Pipeline Run
	// Executions is the number of candidates evaluated standalone, in
	// Standalone wall time, as many at once as the pool has workers.
	Executions int
	Standalone time.Duration
	// Agree counts standalone verdicts equal to the pipeline's.
	Agree int
	// PipelineEval and StandaloneEval are the mean time to evaluate one
	// candidate (its sandbox jobs) in each.
	PipelineEval, StandaloneEval time.Duration
}

// StandaloneRate is the pool's executions/s on its own.
func (r BottleneckResult) StandaloneRate() float64 {
	return float64(r.Executions) / max(r.Standalone.Seconds(), 1e-9)
}

// Ratio is pipeline samples/s over standalone executions/s.
func (r BottleneckResult) Ratio() float64 { return r.Pipeline.Rate() / max(r.StandaloneRate(), 1e-9) }

func (r BottleneckResult) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "bottleneck use: pipeline with the real sandbox pool vs the same pool evaluating the same candidates alone\n")
	fmt.Fprintf(&b, "  broker      %s\n", r.Broker)
	fmt.Fprintf(&b, "  machine     %s\n", r.Machine)
	fmt.Fprintf(&b, "  workload    %d tasks x %d trees = %d trees, %d samples; pool of %d sandboxes\n",
		r.Tasks, r.TreesPerTask, r.Pipeline.Trees, r.Pipeline.Samples, r.Workers)
	fmt.Fprintf(&b, "  pipeline    %8.1f samples/s (%d samples in %s; %s with consumer start-up; %s CPU per sample)\n",
		r.Pipeline.Rate(), r.Pipeline.Samples, r.Pipeline.Active.Round(time.Millisecond), r.Pipeline.Wall.Round(time.Millisecond), r.Pipeline.CPUPerSample().Round(time.Microsecond))
	fmt.Fprintf(&b, "  stages      %s (records in, mean handler time)\n", r.Pipeline.stagesString())
	fmt.Fprintf(&b, "  standalone  %8.1f executions/s (%d candidates in %s; %d verdicts equal to the pipeline's)\n",
		r.StandaloneRate(), r.Executions, r.Standalone.Round(time.Millisecond), r.Agree)
	fmt.Fprintf(&b, "  evaluation  %s per candidate in the pipeline, %s alone (mean)\n",
		r.PipelineEval.Round(time.Millisecond), r.StandaloneEval.Round(time.Millisecond))
	fmt.Fprintf(&b, "  ratio       %.2f (target >= %.1f: %s)\n", r.Ratio(), BottleneckTarget, ratioVerdict(r.Ratio(), BottleneckTarget))
	return b.String()
}

// Bottleneck runs the pipeline with the production execute stage over a
// real sandbox pool, then evaluates the candidates that run produced with
// the same pool directly (execute.Evaluator, no Kafka).
func Bottleneck(ctx context.Context, b *Broker, c Config, ts []topics.Task, logw io.Writer) (BottleneckResult, error) {
	if err := c.Validate(); err != nil {
		return BottleneckResult{}, err
	}
	c = c.seeded()
	res := BottleneckResult{Broker: b.String(), Machine: startMachine(), Tasks: len(ts), TreesPerTask: c.BottleneckTreesPerTask}
	defer res.Machine.finish()
	pool, err := newPool(ctx, c)
	if err != nil {
		return res, err
	}
	defer pool.Close()
	res.Workers = pool.Size()
	cat, err := b.catalog(ctx, "bottleneck", c.Partitions)
	if err != nil {
		return res, err
	}
	if !c.Keep {
		defer b.deleteTopics(cat)
	}
	res.Pipeline, err = runPipeline(ctx, b, cat, c, executeWith{pool: pool}, ts, c.submitConfig("bench-bottleneck", c.BottleneckTreesPerTask), logw)
	if err != nil {
		return res, fmt.Errorf("bottleneck: pipeline: %w", err)
	}
	cands, verdicts, evalMS, err := readExecutions(ctx, b, cat)
	if err != nil {
		return res, fmt.Errorf("bottleneck: %w", err)
	}
	byID := map[string]*topics.Task{}
	for i := range ts {
		byID[ts[i].TaskID] = &ts[i]
	}
	eval := &execute.Evaluator{Runner: pool, FeedbackBytes: c.Execute.FeedbackBytes, StdioMaxTimeouts: c.Execute.StdioMaxTimeouts}
	statuses, evalTotal, elapsed, err := evaluateAll(ctx, eval, pool.Size(), byID, cands)
	if err != nil {
		return res, fmt.Errorf("bottleneck: standalone: %w", err)
	}
	res.Executions, res.Standalone = len(cands), elapsed
	res.PipelineEval = time.Duration(evalMS) * time.Millisecond / time.Duration(len(cands))
	res.StandaloneEval = evalTotal / time.Duration(len(cands))
	for i, cd := range cands {
		if verdicts[cd.NodeID] == statuses[i] {
			res.Agree++
		}
	}
	res.Machine.finish()
	return res, nil
}

// readExecutions returns the run's candidates that were evaluated (one per
// node), the status the pipeline gave each and the sum of their evaluation
// times in milliseconds.
func readExecutions(ctx context.Context, b *Broker, cat topics.Catalog) ([]topics.Candidate, map[string]string, int64, error) {
	msgs, err := readTopic(ctx, b.Kafka, cat.Topic(topics.Executions))
	if err != nil {
		return nil, nil, 0, err
	}
	var evalMS int64
	var cands []topics.Candidate
	verdicts := map[string]string{}
	for _, m := range msgs {
		var ex topics.Execution
		if err := json.Unmarshal(m.Value, &ex); err != nil {
			return nil, nil, 0, fmt.Errorf("execution at %d/%d: %w", m.Partition, m.Offset, err)
		}
		if _, dup := verdicts[ex.NodeID]; dup || ex.InfraCause != "" {
			continue
		}
		verdicts[ex.NodeID] = ex.Status
		evalMS += ex.DurationMS
		cands = append(cands, ex.Candidate)
	}
	if len(cands) == 0 {
		return nil, nil, 0, fmt.Errorf("no executions on %s", cat.Topic(topics.Executions))
	}
	return cands, verdicts, evalMS, nil
}

// evaluateAll evaluates every candidate, workers at a time, and returns the
// statuses in candidate order, the sum of evaluation times and the wall
// time.
func evaluateAll(ctx context.Context, eval *execute.Evaluator, workers int, tasks map[string]*topics.Task, cands []topics.Candidate) ([]string, time.Duration, time.Duration, error) {
	defer labelSide(ctx, "standalone")()
	statuses := make([]string, len(cands))
	durations := make([]time.Duration, len(cands))
	next := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				t, ok := tasks[cands[i].TaskID]
				if !ok {
					errs <- fmt.Errorf("candidate %s: unknown task %q", cands[i].NodeID, cands[i].TaskID)
					return
				}
				o, err := eval.Evaluate(ctx, t, cands[i].Code)
				if err != nil {
					errs <- err
					return
				}
				statuses[i], durations[i] = o.Status, o.Duration
			}
		}()
	}
	var err error
feed:
	for i := range cands {
		select {
		case next <- i:
		case err = <-errs:
			break feed
		}
	}
	close(next)
	wg.Wait()
	elapsed := time.Since(start)
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	var total time.Duration
	for _, d := range durations {
		total += d
	}
	return statuses, total, elapsed, err
}
