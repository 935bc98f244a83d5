package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"

	"strings"
	"time"

	json "github.com/goccy/go-json"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/stages/credit"
	"github.com/murphy-rl/murphy/stages/emit"
	"github.com/murphy-rl/murphy/topics"
)

// monitor follows the credited and batches topics of a run: it shows
// progress and gathers the summary. It reads outside any consumer group, so
// it changes nothing the stages see.
type monitor struct {
	total   int
	summary *summary
	// compare lists strategies to credit the run's samples under, beside
	// the run's own (the summary table's columns).
	compare []string
	// samplesOut receives every sample once, as a JSON line (the input of
	// murphy credit); nil: not written.
	samplesOut io.Writer
	trees      map[string]*credit.Tree
	sampleErr  error
}

func newMonitor(total int, compare []string, samplesOut io.Writer) *monitor {
	return &monitor{total: total, summary: newSummary(total), compare: compare, samplesOut: samplesOut,
		trees: map[string]*credit.Tree{}}
}

// wantsSamples says whether the monitor reads the samples topic.
func (m *monitor) wantsSamples() bool { return len(m.compare) > 0 || m.samplesOut != nil }

// sample assembles one sample record into its tree and writes it out.
func (m *monitor) sample(rec pipeline.Record) {
	var s topics.Sample
	if err := topics.Decode(rec.Value, &s); err != nil || s.TreeID == "" {
		return // dead-lettered by credit
	}
	t := m.trees[s.TreeID]
	if t == nil {
		t = credit.NewTree(s.TreeID)
		m.trees[s.TreeID] = t
	}
	added, err := t.Add(&s)
	if err != nil || !added {
		return
	}
	if m.samplesOut != nil && m.sampleErr == nil {
		b, err := json.Marshal(&s)
		if err == nil {
			_, err = m.samplesOut.Write(append(b, '\n'))
		}
		if err != nil {
			m.sampleErr = fmt.Errorf("samples out: %w", err)
		}
	}
}

// samplesComplete says whether every credited tree's samples have arrived.
func (m *monitor) samplesComplete() bool {
	for id := range m.summary.seen {
		if t := m.trees[id]; t == nil || !t.Complete() {
			return false
		}
	}
	return true
}

// comparisons credits the run's assembled trees under each strategy of
// compare (other settings as the run's) for the summary table.
func (m *monitor) comparisons() []*credit.Summary {
	if m.summary.credit == nil || len(m.compare) == 0 {
		return nil
	}
	own := m.summary.credit.Config
	ids := make([]string, 0, len(m.trees))
	for id, t := range m.trees {
		if m.summary.seen[id] && t.Complete() {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	var out []*credit.Summary
	for _, name := range m.compare {
		if name == own.Strategy {
			continue
		}
		cfg := own
		cfg.Strategy = name
		if credit.ValidateCreditConfig(cfg) != nil {
			continue
		}
		sum := credit.NewSummary(cfg)
		for _, id := range ids {
			ct, _ := credit.Credit(m.trees[id], cfg)
			sum.Add(&ct, m.trees[id].Len())
		}
		out = append(out, sum)
	}
	return out
}

// watch returns when every tree was credited and is in an emitted batch, or
// with an error when ctx ends first.
func (m *monitor) watch(ctx context.Context, kc pipeline.KafkaConfig, cat topics.Catalog, progress io.Writer, every time.Duration, start time.Time) error {
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	credited, err := pipeline.Tail(tctx, kc, cat.Topic(topics.Credited))
	if err != nil {
		return err
	}
	batches, err := pipeline.Tail(tctx, kc, cat.Topic(topics.Batches))
	if err != nil {
		return err
	}
	// Completions tell of trees credit closed at their deadline and dropped:
	// they end without a credited record.
	completions, err := pipeline.Tail(tctx, kc, cat.Topic(topics.Completions))
	if err != nil {
		return err
	}
	var samples <-chan pipeline.Record
	if m.wantsSamples() {
		if samples, err = pipeline.Tail(tctx, kc, cat.Topic(topics.Samples)); err != nil {
			return err
		}
	}
	seenBatch := map[string]bool{}
	batchedTrees := 0
	var tick <-chan time.Time
	if every > 0 {
		t := time.NewTicker(every)
		defer t.Stop()
		tick = t.C
	}
	for {
		if m.summary.Trees+m.summary.droppedOnly() >= m.total && batchedTrees+m.summary.Empty >= m.summary.Trees {
			m.progress(progress, start, batchedTrees)
			if samples != nil {
				m.drainSamples(ctx, samples)
			}
			return m.sampleErr
		}
		select {
		case rec := <-samples:
			m.sample(rec)
		case <-ctx.Done():
			return fmt.Errorf("%d of %d trees credited, %d in batches: %w", m.summary.Trees, m.total, batchedTrees, ctx.Err())
		case rec := <-credited:
			var tree topics.CreditedTree
			if err := topics.Decode(rec.Value, &tree); err != nil {
				continue // dead-lettered by emit; not ours to judge here
			}
			m.summary.add(&tree)
		case rec := <-completions:
			var c topics.Completion
			if err := topics.Decode(rec.Value, &c); err == nil && c.Dropped {
				m.summary.dropped[c.TreeID] = true
			}
		case rec := <-batches:
			id := rec.Headers[emit.HeaderBatchID]
			if id == "" || seenBatch[id] {
				continue
			}
			seenBatch[id] = true
			if n, err := strconv.Atoi(rec.Headers[emit.HeaderTrees]); err == nil {
				batchedTrees += n
			}
		case <-tick:
			m.progress(progress, start, batchedTrees)
		}
	}
}

// drainSamples reads the samples of credited trees that have not arrived
// yet: they were written before their trees were credited, so they are in
// the log; the wait is bounded all the same.
func (m *monitor) drainSamples(ctx context.Context, samples <-chan pipeline.Record) {
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for !m.samplesComplete() {
		select {
		case rec := <-samples:
			m.sample(rec)
		case <-deadline.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

func (m *monitor) progress(w io.Writer, start time.Time, batched int) {
	done := m.summary.Trees
	el := time.Since(start).Seconds()
	rate := float64(done) / max(el, 1e-9)
	eta := "?"
	if rate > 0 && done < m.total {
		eta = (time.Duration(float64(m.total-done)/rate) * time.Second).Round(time.Second).String()
	} else if done >= m.total {
		eta = "0s"
	}
	fmt.Fprintf(w, "[%6.1fs] trees %d/%d credited (%.0f%%), %d in batches, %d nodes, %.2f trees/s, ETA %s\n",
		el, done, m.total, 100*float64(done)/float64(max(m.total, 1)), batched, m.summary.Nodes, rate, eta)
}

// summary aggregates credited trees for the end-of-run report.
type summary struct {
	Total, Trees, Incomplete, Nodes int
	// Empty trees were credited without a sample left (every group
	// dropped as zero-signal): nothing of them reaches a batch or a file.
	Empty                       int
	seen                        map[string]bool
	nodesPerTurn                map[int]int
	passedPerTurn               map[int]int
	solvedBy                    map[int]int // trees whose first solve is at turn t
	reward, credited            []float64
	liftedFailures, failedNodes int
	routes                      map[string]int
	credit                      *credit.Summary
	// signal are the method's per-turn metrics (credit.TurnMetrics).
	signal map[int]*credit.TurnMetrics
	// dropped holds the trees credit closed at their deadline and dropped.
	dropped map[string]bool
}

func newSummary(total int) *summary {
	return &summary{Total: total, seen: map[string]bool{}, nodesPerTurn: map[int]int{}, passedPerTurn: map[int]int{},
		solvedBy: map[int]int{}, routes: map[string]int{}, signal: map[int]*credit.TurnMetrics{}, dropped: map[string]bool{}}
}

// droppedOnly counts the dropped trees that were not credited after all
// (a tree rebuilt and completed after a restart is credited).
func (s *summary) droppedOnly() int {
	n := 0
	for id := range s.dropped {
		if !s.seen[id] {
			n++
		}
	}
	return n
}

func (s *summary) add(t *topics.CreditedTree) {
	if s.seen[t.TreeID] {
		return
	}
	s.seen[t.TreeID] = true
	s.Trees++
	if len(t.Samples) == 0 {
		s.Empty++
	}
	if t.Incomplete {
		s.Incomplete++
	}
	if s.credit == nil {
		s.credit = credit.NewSummary(t.Config)
	}
	s.credit.Add(t, len(t.Samples)+t.PrunedNodes)
	first := 0
	for i := range t.Samples {
		n := &t.Samples[i]
		s.Nodes++
		s.nodesPerTurn[n.Turn]++
		s.routes[n.Route]++
		tm := s.signal[n.Turn]
		if tm == nil {
			tm = &credit.TurnMetrics{}
			s.signal[n.Turn] = tm
		}
		tm.Add(&n.Sample)
		s.reward = append(s.reward, n.Reward)
		s.credited = append(s.credited, n.CreditedReward)
		if n.Status == topics.StatusPassed {
			s.passedPerTurn[n.Turn]++
			if first == 0 || n.Turn < first {
				first = n.Turn
			}
		} else if n.Route == topics.RouteTrain {
			s.failedNodes++
			if n.CreditedReward > n.Reward {
				s.liftedFailures++
			}
		}
	}
	if first > 0 {
		s.solvedBy[first]++
	}
}

func (s *summary) print(w io.Writer, elapsed time.Duration, files []string, fileTrees int, compare []*credit.Summary) {
	fmt.Fprintf(w, "\n== murphy run summary ==\n")
	fmt.Fprintf(w, "trees        %d of %d credited (%d incomplete), %d in output files", s.Trees, s.Total, s.Incomplete, fileTrees)
	if s.Empty > 0 {
		fmt.Fprintf(w, ", %d with no sample left (zero-signal groups dropped)", s.Empty)
	}
	if n := s.droppedOnly(); n > 0 {
		fmt.Fprintf(w, ", %d closed incomplete at credit's deadline and dropped", n)
	}
	fmt.Fprintln(w)
	turns := make([]int, 0, len(s.nodesPerTurn))
	for t := range s.nodesPerTurn {
		turns = append(turns, t)
	}
	sort.Ints(turns)
	fmt.Fprintf(w, "nodes        %d total\n", s.Nodes)
	cum := 0
	for _, t := range turns {
		cum += s.solvedBy[t]
		fmt.Fprintf(w, "  turn %d     %5d nodes, pass rate %5.1f%%, cumulative solve rate %5.1f%% of trees\n",
			t, s.nodesPerTurn[t], pct(s.passedPerTurn[t], s.nodesPerTurn[t]), pct(cum, s.Trees))
		if tm := s.signal[t]; tm != nil {
			acc, deg, steps, scored := tm.Cells()
			fmt.Fprintf(w, "             strict accuracy (tier 1) %s, degenerate share %s, steps per episode %s, episodes with step scores %s\n",
				acc, deg, steps, scored)
		}
	}
	fmt.Fprintf(w, "routes       %s\n", formatCounts(s.routes))
	fmt.Fprintf(w, "reward       %s\n", distribution(s.reward))
	fmt.Fprintf(w, "credited     %s\n", distribution(s.credited))
	fmt.Fprintf(w, "credit flow  %d of %d failed nodes received credit from a later success\n", s.liftedFailures, s.failedNodes)
	if s.credit != nil {
		fmt.Fprintf(w, "credit       the run's own configuration (%s) beside the baselines on the same samples:\n", s.credit.Name())
		_ = credit.WriteSummaries(w, append([]*credit.Summary{s.credit}, compare...)) // w is the terminal: as fmt.Fprintf above
	}
	secs := max(elapsed.Seconds(), 1e-9)
	fmt.Fprintf(w, "throughput   %.1f samples/s, %.2f trees/s over %s\n", float64(s.Nodes)/secs, float64(s.Trees)/secs, elapsed.Round(time.Millisecond))
	fmt.Fprintf(w, "output       %d files\n", len(files))
	for _, f := range files {
		fmt.Fprintf(w, "  %s\n", f)
	}
}

func pct(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

func formatCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return strings.Join(parts, " ")
}

// distribution prints mean and a coarse histogram over [0, 1] (values above
// 1, possible under MERS, get their own bucket).
func distribution(xs []float64) string {
	if len(xs) == 0 {
		return "n/a"
	}
	var sum float64
	b := make([]int, 5)
	for _, x := range xs {
		sum += x
		switch {
		case x <= 0:
			b[0]++
		case x < 0.5:
			b[1]++
		case x < 1:
			b[2]++
		case x == 1:
			b[3]++
		default:
			b[4]++
		}
	}
	return fmt.Sprintf("mean %.3f | 0: %d  (0,0.5): %d  [0.5,1): %d  1: %d  >1: %d", sum/float64(len(xs)), b[0], b[1], b[2], b[3], b[4])
}
