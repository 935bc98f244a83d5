package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/murphy-rl/murphy/backfill"
	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/tasks/submit"
	"github.com/murphy-rl/murphy/topics"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// backfillSubmitOptions are murphy backfill submit's flags.
type backfillSubmitOptions struct {
	sc                      submit.Config
	manifest, state, prefix string
	ks                      *kafkaSettings
	partitions, jobs        int
	asJSON, noProgress      bool
	timeout                 time.Duration
}

func newBackfillSubmitCmd() *cobra.Command {
	o := &backfillSubmitOptions{sc: submit.DefaultConfig()}
	o.sc.RunID = ""
	cmd := &cobra.Command{
		Use:   "submit --manifest FILE --state DIR",
		Short: "Build, verify and publish a backfill's tasks and root prompts (bounded, resumable)",
		Long: `Submit is a bounded job: it builds and verifies the compile-fix tasks of every
item of the manifest (history pairs, injections), then publishes each item's
tasks to the compacted tasks topic (key task_id) and one root prompt per tree
to the backfill-prompts topic (key tree_id), which generate serves beside the
live prompts with its backfill_share of capacity.

It is idempotent and resumable: the state directory records each item's result
and publication, so a rerun (after a failure, Ctrl-C or kill -9) builds only
what was not built and publishes every tree exactly once. Tree ids are
<run-id>/<task-id>/<k>; the run id is fixed by the first run (default: derived
from the manifest). An item whose build fails is reported and the job goes on;
a rerun retries it.

Progress goes to stderr (a bar on a terminal, else a line per item), the final
report to stdout (text, or JSON with --json).`,
		Example: "  murphy backfill submit --manifest backfill.yaml --state .backfill/state --brokers 127.0.0.1:9092 -g 8 -k 2",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBackfillSubmit(cmd, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.manifest, "manifest", "", "the job's items: YAML or JSON (a list, or {items: [...]}), or JSONL")
	f.StringVar(&o.state, "state", "", "state directory: what the job did, so that a rerun resumes it")
	addTreeFlags(f, &o.sc, "the state's, else the manifest's run_id, else derived from the items")
	f.IntVarP(&o.jobs, "jobs", "j", 1, "items built at once")
	f.BoolVar(&o.asJSON, "json", false, "print the final report as JSON")
	f.BoolVar(&o.noProgress, "no-progress", false, "no progress bar: one line per item on stderr")
	o.ks = addKafkaFlags(f)
	f.StringVar(&o.prefix, "topic-prefix", topics.DefaultCatalog().Prefix, "topic name prefix")
	f.IntVar(&o.partitions, "partitions", topics.DefaultCatalog().Partitions, "partitions of topics created by the job")
	f.DurationVar(&o.timeout, "timeout", 0, "stop after this long (0 = none; a rerun resumes)")
	addTaskBuilderFlags(cmd)
	return cmd
}

// check validates the flags: the catalog, the submission config and the
// Kafka settings, each a usage error (exit 2).
func (o *backfillSubmitOptions) check(cmd *cobra.Command) (topics.Catalog, pipeline.KafkaConfig, error) {
	if o.manifest == "" || o.state == "" {
		return topics.Catalog{}, pipeline.KafkaConfig{}, &exitError{code: 2, err: errors.New("backfill submit: --manifest and --state are required")}
	}
	cat := topics.Catalog{Prefix: o.prefix, Partitions: o.partitions}
	if err := cat.Validate(); err != nil {
		return cat, pipeline.KafkaConfig{}, &exitError{code: 2, err: err}
	}
	probe := o.sc
	if probe.RunID == "" {
		probe.RunID = "x"
	}
	if err := probe.Validate(); err != nil {
		return cat, pipeline.KafkaConfig{}, &exitError{code: 2, err: err}
	}
	kcfg, err := o.ks.config(cmd.Flags(), "murphy-backfill")
	if err != nil {
		return cat, kcfg, &exitError{code: 2, err: err}
	}
	return cat, kcfg, nil
}

// runBackfillSubmit runs the job of the manifest and prints its report:
// exit 1 when an item failed or a manifest entry was skipped.
func runBackfillSubmit(cmd *cobra.Command, o *backfillSubmitOptions) error {
	cat, kcfg, err := o.check(cmd)
	if err != nil {
		return err
	}
	m, err := backfill.LoadManifest(o.manifest)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	stderr := cmd.ErrOrStderr()
	for _, e := range m.Errors {
		fmt.Fprintf(stderr, "%s: skipped: %v\n", o.manifest, e)
	}
	b, release, err := openBackfillBuilder(cmd)
	if err != nil {
		return err
	}
	if release != nil {
		defer release()
	}
	ctx := cmd.Context()
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	if err := pipeline.EnsureTopics(ctx, kcfg, cat); err != nil {
		return fmt.Errorf("backfill submit: %w", err)
	}
	prod := pipeline.NewProducer(kcfg)
	defer prod.Close()
	prog := newBackfillProgress(stderr, !o.noProgress && isTerminal(stderr))
	rep, err := backfill.Run(ctx, backfill.JobConfig{Kafka: kcfg, Catalog: cat, Submit: o.sc, StateDir: o.state,
		Concurrency: o.jobs, Progress: prog}, m, b, prod)
	prog.finish()
	if rep != nil {
		if err := writeBackfillReport(cmd.OutOrStdout(), rep, o.asJSON); err != nil {
			return err
		}
	}
	if err != nil {
		return fmt.Errorf("backfill submit: %w (rerun with the same --state to resume)", err)
	}
	if rep.Failed > 0 || len(rep.ManifestErrors) > 0 {
		return &exitError{code: 1, err: fmt.Errorf("backfill submit: %d items failed, %d manifest entries skipped; the others are published (rerun with the same --state to retry)",
			rep.Failed, len(rep.ManifestErrors))}
	}
	return nil
}

// writeBackfillReport prints the job's report as text, or indented JSON.
func writeBackfillReport(out io.Writer, rep *backfill.Report, asJSON bool) error {
	if !asJSON {
		rep.WriteText(out)
		return nil
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// backfillProgress shows a job's progress: a bar, or a line per item.
type backfillProgress struct {
	w   io.Writer
	bar *progressbar.ProgressBar
	n   int
	of  int
}

func newBackfillProgress(w io.Writer, bar bool) *backfillProgress {
	p := &backfillProgress{w: w}
	if bar {
		p.bar = progressbar.NewOptions(-1, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription("backfill"),
			progressbar.OptionShowCount(), progressbar.OptionSetItsString("items"), progressbar.OptionShowIts(),
			progressbar.OptionSetPredictTime(true), progressbar.OptionClearOnFinish(), progressbar.OptionThrottle(100*time.Millisecond))
	}
	return p
}

func (p *backfillProgress) Start(items int) {
	p.of = items
	if p.bar != nil {
		p.bar.ChangeMax(items)
	}
}

func (p *backfillProgress) Item(ev backfill.ItemEvent) {
	p.n++
	line := fmt.Sprintf("[%d/%d] %s: %s", p.n, p.of, ev.Name, ev.Outcome)
	switch ev.Outcome {
	case backfill.OutcomeFailed:
		line += ": " + ev.Err
	case backfill.OutcomePublished:
		line += fmt.Sprintf(", %d tasks, %d trees", ev.Tasks, ev.Trees)
		if ev.Found > 0 {
			line += fmt.Sprintf(" (+%d found already published)", ev.Found)
		}
	case backfill.OutcomeDone:
		line += fmt.Sprintf(" earlier, %d trees", ev.Trees)
	}
	if ev.Resumed && ev.Outcome != backfill.OutcomeDone {
		line += " [result from state]"
	}
	if p.bar == nil {
		fmt.Fprintf(p.w, "%s (%v)\n", line, ev.Elapsed.Round(time.Millisecond))
		return
	}
	if ev.Outcome == backfill.OutcomeFailed {
		// Failures stay on screen above the bar.
		_ = p.bar.Clear()
		fmt.Fprintln(p.w, line)
	}
	p.bar.Describe(ev.Name)
	_ = p.bar.Add(1)
}

func (p *backfillProgress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}
