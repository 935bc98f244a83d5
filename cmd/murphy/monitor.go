package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/stages/emit"
	"github.com/murphy-rl/murphy/topics"
)

// monitor follows the credited and batches topics of a run: it shows
// progress and gathers the summary. It reads outside any consumer group, so
// it changes nothing the stages see.
type monitor struct {
	total   int
	summary *summary
}

func newMonitor(total int) *monitor {
	return &monitor{total: total, summary: newSummary(total)}
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
	seenBatch := map[string]bool{}
	batchedTrees := 0
	var tick <-chan time.Time
	if every > 0 {
		t := time.NewTicker(every)
		defer t.Stop()
		tick = t.C
	}
	for {
		if m.summary.Trees >= m.total && batchedTrees >= m.total {
			m.progress(progress, start, batchedTrees)
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d trees credited, %d in batches: %w", m.summary.Trees, m.total, batchedTrees, ctx.Err())
		case rec := <-credited:
			var tree topics.CreditedTree
			if err := topics.Decode(rec.Value, &tree); err != nil {
				continue // dead-lettered by emit; not ours to judge here
			}
			m.summary.add(&tree)
		case rec := <-batches:
			id := rec.Headers[emit.HeaderBatchID]
			if id == "" || seenBatch[id] {
				continue
			}
			seenBatch[id] = true
			var n int
			fmt.Sscan(rec.Headers[emit.HeaderTrees], &n)
			batchedTrees += n
		case <-tick:
			m.progress(progress, start, batchedTrees)
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
	seen                            map[string]bool
	nodesPerTurn                    map[int]int
	passedPerTurn                   map[int]int
	solvedBy                        map[int]int // trees whose first solve is at turn t
	reward, credited                []float64
	liftedFailures, failedNodes     int
	routes                          map[string]int
}

func newSummary(total int) *summary {
	return &summary{Total: total, seen: map[string]bool{}, nodesPerTurn: map[int]int{}, passedPerTurn: map[int]int{},
		solvedBy: map[int]int{}, routes: map[string]int{}}
}

func (s *summary) add(t *topics.CreditedTree) {
	if s.seen[t.TreeID] {
		return
	}
	s.seen[t.TreeID] = true
	s.Trees++
	if t.Incomplete {
		s.Incomplete++
	}
	first := 0
	for i := range t.Samples {
		n := &t.Samples[i]
		s.Nodes++
		s.nodesPerTurn[n.Turn]++
		s.routes[n.Route]++
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

func (s *summary) print(w io.Writer, elapsed time.Duration, files []string, fileTrees int) {
	fmt.Fprintf(w, "\n== murphy run summary ==\n")
	fmt.Fprintf(w, "trees        %d of %d credited (%d incomplete), %d in output files\n", s.Trees, s.Total, s.Incomplete, fileTrees)
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
	}
	fmt.Fprintf(w, "routes       %s\n", formatCounts(s.routes))
	fmt.Fprintf(w, "reward       %s\n", distribution(s.reward))
	fmt.Fprintf(w, "credited     %s\n", distribution(s.credited))
	fmt.Fprintf(w, "credit flow  %d of %d failed nodes received credit from a later success\n", s.liftedFailures, s.failedNodes)
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
