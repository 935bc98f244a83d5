package backfill

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/tasks/submit"
	"github.com/murphy-rl/murphy/topics"
)

// JobConfig configures a publishing job (Run).
type JobConfig struct {
	Kafka   pipeline.KafkaConfig
	Catalog topics.Catalog
	// Submit shapes the trees (G, K, turns); its RunID is the run's ("" =
	// the state's, else the manifest's, else DefaultRunID of the items).
	Submit submit.Config
	// StateDir holds what the job did, so that a rerun resumes it.
	StateDir string
	// Concurrency is the number of items built at once (0 = 1). Items are
	// published one at a time, in the order their builds finish.
	Concurrency int
	// Progress, when not nil, hears of every item.
	Progress Progress
	// PublishRetries is how many times a failed publication of an item is
	// retried (with backoff, resuming from its intent) before the job
	// stops; 0 = 5.
	PublishRetries int

	// hook, in tests, is called at the named points of an item's
	// publication; an error stops the job there as a crash would.
	hook func(point, key string) error
}

// Hook points of a publication.
const (
	HookIntent   = "intent"   // the intent is on disk, nothing produced yet
	HookProduced = "produced" // every record acknowledged, not yet marked published
)

// Progress hears of a job's items.
type Progress interface {
	// Start is called once with the number of items.
	Start(items int)
	// Item is called once per item, when it is done with (published,
	// already published, or failed).
	Item(ev ItemEvent)
}

// Item outcomes.
const (
	OutcomePublished = "published" // built (or resumed) and published now
	OutcomeDone      = "done"      // published by an earlier run: skipped
	OutcomeFailed    = "failed"    // the build failed; nothing published
)

// ItemEvent is one item's outcome.
type ItemEvent struct {
	Key     string        `json:"key"`
	Name    string        `json:"name"`
	Outcome string        `json:"outcome"`
	Tasks   int           `json:"tasks"`
	Trees   int           `json:"trees"`
	Found   int           `json:"found,omitempty"`
	Resumed bool          `json:"resumed,omitempty"` // its result came from the state
	Err     string        `json:"error,omitempty"`
	Elapsed time.Duration `json:"elapsed_ns"`
}

// ItemError is an item that failed, with its error.
type ItemError struct {
	Key   string `json:"key"`
	Name  string `json:"name"`
	Error string `json:"error"`
}

// Report is a job's final report.
type Report struct {
	RunID string `json:"run_id"`
	// Items is the number of items in the manifest (after duplicates and
	// malformed entries), ManifestErrors the malformed ones.
	Items          int      `json:"items"`
	ManifestErrors []string `json:"manifest_errors,omitempty"`
	// DuplicateItems are items identical to an earlier one (built once).
	DuplicateItems int `json:"duplicate_items,omitempty"`
	// Built counts items built by this run, Resumed those whose result an
	// earlier run recorded, Failed those whose build failed (reported in
	// Errors, retried by the next run).
	Built   int         `json:"built"`
	Resumed int         `json:"resumed"`
	Failed  int         `json:"failed"`
	Errors  []ItemError `json:"errors,omitempty"`
	// LogsRead counts history items with a log whose result is known;
	// Diagnostics counts their logs' diagnostics by tool, Causes the logs
	// by failure cause.
	LogsRead    int            `json:"logs_read"`
	Diagnostics map[string]int `json:"diagnostics_by_tool"`
	Causes      map[string]int `json:"logs_by_cause"`
	// TasksBuilt counts verified tasks over every item, Rejected the
	// candidates that did not verify, by reason.
	TasksBuilt int            `json:"tasks_built"`
	Rejected   map[string]int `json:"rejected_by_reason"`
	// DuplicateTasks counts tasks whose id an earlier item of the run
	// already published (published once).
	DuplicateTasks int `json:"duplicate_tasks,omitempty"`
	// TreesPublished counts root prompts this run produced;
	// TreesFoundPublished those a resumed publication found already on the
	// broker (an earlier run stopped while publishing); TreesDone those of
	// items an earlier run finished (skipped).
	TreesPublished      int `json:"trees_published"`
	TreesFoundPublished int `json:"trees_found_published"`
	TreesDone           int `json:"trees_done"`
	// ItemsPublished counts items published by this run, ItemsDone items an
	// earlier run had published.
	ItemsPublished int           `json:"items_published"`
	ItemsDone      int           `json:"items_done"`
	Elapsed        time.Duration `json:"elapsed_ns"`
	// Warnings are per-item problems that did not fail the item.
	Warnings []string `json:"warnings,omitempty"`
	// Yield is the run's reproducibility (items reproduced, rejected by
	// reason, time per item, dependency-cache hits).
	Yield *Yield `json:"yield"`
}

// Trees is every tree of the run on the broker: published now, found, or
// done before.
func (r *Report) Trees() int { return r.TreesPublished + r.TreesFoundPublished + r.TreesDone }

// WriteText writes the report for people.
func (r *Report) WriteText(w io.Writer) {
	fmt.Fprintf(w, "backfill run %s: %d items in %v\n", r.RunID, r.Items, r.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(w, "  items: %d built, %d resumed from state, %d failed, %d already published", r.Built, r.Resumed, r.Failed, r.ItemsDone)
	if r.DuplicateItems > 0 {
		fmt.Fprintf(w, ", %d duplicates", r.DuplicateItems)
	}
	if len(r.ManifestErrors) > 0 {
		fmt.Fprintf(w, ", %d malformed", len(r.ManifestErrors))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  logs read: %d; diagnostics by tool: %s; logs by cause: %s\n", r.LogsRead, counts(r.Diagnostics), counts(r.Causes))
	fmt.Fprintf(w, "  tasks built: %d; rejected by reason: %s", r.TasksBuilt, counts(r.Rejected))
	if r.DuplicateTasks > 0 {
		fmt.Fprintf(w, "; %d duplicate tasks published once", r.DuplicateTasks)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  trees: %d published now, %d found already published (resumed), %d published by earlier runs\n",
		r.TreesPublished, r.TreesFoundPublished, r.TreesDone)
	for _, e := range r.ManifestErrors {
		fmt.Fprintf(w, "  manifest: %s\n", e)
	}
	for _, e := range r.Errors {
		fmt.Fprintf(w, "  failed: %s: %s\n", e.Name, e.Error)
	}
	for _, e := range r.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", e)
	}
	if r.Yield != nil {
		r.Yield.WriteText(w)
	}
}

func counts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := slices.Collect(maps.Keys(m))
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] || m[keys[i]] == m[keys[j]] && keys[i] < keys[j] })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

type job struct {
	cfg   JobConfig
	state *stateDir
	prod  pipeline.Producer
	rep   *Report
	// owner maps a task id to the key of the item that publishes it.
	owner map[string]string
}

// Run builds every item of m with b and publishes its tasks (tasks topic)
// and one root prompt per tree (backfill-prompts topic) through prod. It is
// idempotent and resumable: what it did is in cfg.StateDir, an item
// published by an earlier run is skipped, an item built by an earlier run
// is not built again, and an item whose publication was interrupted
// (a crash, kill -9) publishes only what is not yet on the broker, so every
// tree is published once. An item whose build fails is reported and the
// job goes on; the job stops (with the report so far) when ctx ends or
// the brokers stay unreachable. EnsureTopics must have created the topics.
func Run(ctx context.Context, cfg JobConfig, m *Manifest, b TaskBuilder, prod pipeline.Producer) (*Report, error) {
	start := time.Now()
	rep := &Report{Diagnostics: map[string]int{}, Causes: map[string]int{}, Rejected: map[string]int{}, Yield: NewYield()}
	for _, e := range m.Errors {
		rep.ManifestErrors = append(rep.ManifestErrors, e.Error())
	}
	state, err := openState(cfg.StateDir)
	if err != nil {
		return rep, err
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 1
	}
	if cfg.PublishRetries <= 0 {
		cfg.PublishRetries = 5
	}
	// The run id: the state's, else asked for, else the manifest's, else
	// derived from the items.
	prev, havePrev, err := state.readRun()
	if err != nil {
		return rep, err
	}
	switch {
	case cfg.Submit.RunID != "":
	case havePrev:
		cfg.Submit.RunID = prev.RunID
	case m.RunID != "":
		cfg.Submit.RunID = m.RunID
	default:
		cfg.Submit.RunID = DefaultRunID(m.Items)
	}
	rep.RunID = cfg.Submit.RunID
	if err := cfg.Submit.Validate(); err != nil {
		return rep, err
	}
	cur := newRunState(cfg.Submit, start)
	if havePrev {
		if err := prev.sameShape(cur); err != nil {
			return rep, fmt.Errorf("backfill: %s: %w", cfg.StateDir, err)
		}
	} else if err := state.writeRun(cur); err != nil {
		return rep, err
	}
	j := &job{cfg: cfg, state: state, prod: prod, rep: rep, owner: map[string]string{}}
	// Tasks already published (or being published) by items of this run.
	sts, err := state.items()
	if err != nil {
		return rep, err
	}
	for _, st := range sts {
		if st.Phase == PhasePublishing || st.Phase == PhasePublished {
			for _, id := range st.TaskIDs {
				j.owner[id] = st.Key
			}
		}
	}
	// Distinct items, in manifest order.
	var items []Item
	seen := map[string]bool{}
	for _, it := range m.Items {
		if k := it.Key(); seen[k] {
			rep.DuplicateItems++
			continue
		} else {
			seen[k] = true
		}
		items = append(items, it)
	}
	rep.Items = len(items)
	if cfg.Progress != nil {
		cfg.Progress.Start(len(items))
	}
	err = j.run(ctx, items, m.Dir, b)
	rep.Elapsed = time.Since(start)
	return rep, err
}

type built struct {
	it      Item
	st      *itemState
	resumed bool
	err     error
	elapsed time.Duration
}

func (j *job) run(ctx context.Context, items []Item, dir string, b TaskBuilder) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	todo := make(chan Item)
	done := make(chan built)
	var wg sync.WaitGroup
	for range j.cfg.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range todo {
				r := j.build(ctx, it, dir, b)
				select {
				case done <- r:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	go func() {
		defer close(todo)
		for _, it := range items {
			select {
			case todo <- it:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(done) }()
	var stop error
	for r := range done {
		if stop != nil {
			continue // draining after a stop
		}
		if err := j.settle(ctx, r); err != nil {
			stop = err
			cancel()
		}
	}
	if stop == nil && ctx.Err() != nil {
		stop = ctx.Err()
	}
	return stop
}

// build returns the item's state: read from the state directory, or
// built now and recorded.
func (j *job) build(ctx context.Context, it Item, dir string, b TaskBuilder) built {
	start := time.Now()
	key := it.Key()
	st, err := j.state.readItem(key)
	if err != nil {
		return built{it: it, err: err}
	}
	if st != nil && st.Result != nil {
		return built{it: it, st: st, resumed: true, elapsed: time.Since(start)}
	}
	res, err := safeBuild(ctx, b, it.resolved(dir))
	if err == nil && res == nil {
		err = errors.New("builder returned no result")
	}
	if err != nil {
		return built{it: it, err: err, elapsed: time.Since(start)}
	}
	st = &itemState{Key: key, Name: it.ReportName(), Item: it, Phase: PhaseBuilt, Result: res, BuiltAt: time.Now().UTC()}
	if err := j.state.writeItem(st); err != nil {
		return built{it: it, err: stateError{err}, elapsed: time.Since(start)}
	}
	return built{it: it, st: st, elapsed: time.Since(start)}
}

// safeBuild calls the builder; a panic is the item's error, not the job's.
func safeBuild(ctx context.Context, b TaskBuilder, it Item) (res *Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = nil, fmt.Errorf("builder panicked: %v", p)
		}
	}()
	return b.BuildItem(ctx, it)
}

// settle publishes a built item (or reports its failure) and accounts for
// it. An error stops the job.
func (j *job) settle(ctx context.Context, r built) error {
	rep := j.rep
	ev := ItemEvent{Key: r.it.Key(), Name: r.it.ReportName(), Resumed: r.resumed}
	if r.err != nil {
		if ctx.Err() != nil {
			return ctx.Err() // stopped, not failed
		}
		rep.Failed++
		rep.Errors = append(rep.Errors, ItemError{Key: ev.Key, Name: ev.Name, Error: r.err.Error()})
		rep.Yield.Add(ev.Name, r.it.Kind, nil, r.err, r.elapsed)
		ev.Outcome, ev.Err, ev.Elapsed = OutcomeFailed, r.err.Error(), r.elapsed
		j.progress(ev)
		if errors.As(r.err, new(stateError)) {
			return r.err // the state directory cannot be written: stop
		}
		return nil
	}
	if r.err == nil && r.st == nil {
		return errors.New("backfill: no state") // unreachable
	}
	st := r.st
	if r.resumed {
		rep.Resumed++
	} else {
		rep.Built++
	}
	j.account(r.it, st.Result)
	rep.Yield.Add(ev.Name, r.it.Kind, st.Result, nil, r.elapsed)
	ev.Tasks = len(st.Result.Tasks)
	if st.Phase == PhasePublished {
		rep.ItemsDone++
		rep.TreesDone += st.Published + st.Found
		ev.Outcome, ev.Trees, ev.Elapsed = OutcomeDone, st.Published+st.Found, r.elapsed
		j.progress(ev)
		return nil
	}
	// The tasks this item publishes: its own, less those another item of
	// the run publishes.
	var tasks []topics.Task
	for _, t := range st.Result.Tasks {
		if o, ok := j.owner[t.TaskID]; ok && o != st.Key {
			rep.DuplicateTasks++
			continue
		}
		tasks = append(tasks, t)
	}
	start := time.Now()
	published, found, err := j.publishRetrying(ctx, st, tasks)
	if err != nil {
		return fmt.Errorf("backfill: publish %s: %w", st.Name, err)
	}
	for _, id := range st.TaskIDs {
		j.owner[id] = st.Key
	}
	st.Phase, st.Published, st.Found, st.PublishedAt = PhasePublished, st.Published+published, found, time.Now().UTC()
	if err := j.state.writeItem(st); err != nil {
		return err
	}
	rep.ItemsPublished++
	rep.TreesPublished += published
	rep.TreesFoundPublished += found
	ev.Outcome, ev.Trees, ev.Found, ev.Elapsed = OutcomePublished, published, found, r.elapsed+time.Since(start)
	j.progress(ev)
	return nil
}

// publishRetrying publishes st, retrying a failed attempt (from its
// intent, so nothing goes twice) with backoff.
func (j *job) publishRetrying(ctx context.Context, st *itemState, tasks []topics.Task) (published, found int, err error) {
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval, bo.MaxInterval = 500*time.Millisecond, 10*time.Second
	for attempt := 0; ; attempt++ {
		p, f, err := j.publish(ctx, st, tasks)
		published += p
		if err == nil {
			return published, f, nil
		}
		if errors.Is(err, errHook) || ctx.Err() != nil || attempt >= j.cfg.PublishRetries {
			return published, f, err
		}
		j.warn(st, fmt.Errorf("publish attempt %d: %w (retrying)", attempt+1, err))
		select {
		case <-time.After(bo.NextBackOff()):
		case <-ctx.Done():
			return published, f, ctx.Err()
		}
	}
}

// account adds an item's result to the report.
func (j *job) account(it Item, res *Result) {
	rep := j.rep
	if it.Kind == KindHistory && it.Log != "" {
		rep.LogsRead++
	}
	for tool, n := range res.Diagnostics {
		rep.Diagnostics[tool] += n
	}
	if res.Cause != "" {
		rep.Causes[res.Cause]++
	}
	rep.TasksBuilt += len(res.Tasks)
	for _, r := range res.Rejected {
		rep.Rejected[r.Reason]++
	}
}

func (j *job) progress(ev ItemEvent) {
	if j.cfg.Progress != nil {
		j.cfg.Progress.Item(ev)
	}
}

func (j *job) warn(st *itemState, err error) {
	j.rep.Warnings = append(j.rep.Warnings, st.Name+": "+err.Error())
}

// stateError is a failure to write the state directory: it stops the job.
type stateError struct{ error }

func (e stateError) Unwrap() error { return e.error }

// errHook wraps a test hook's error: a simulated crash, never retried.
var errHook = errors.New("stopped by hook")

func (j *job) hook(point, key string) error {
	if j.cfg.hook == nil {
		return nil
	}
	if err := j.cfg.hook(point, key); err != nil {
		return fmt.Errorf("%w: %w", errHook, err)
	}
	return nil
}
