package main

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/pipeline/pipelinetest"
	"github.com/murphy-rl/murphy/topics"
)

// grant is one tree granted on the admission log.
type grant struct {
	offset  int64
	tree    string
	version int64
	at      time.Time
	bounded bool
}

// readGrants reads the admission log (partition 0 of the admissions
// topic) and decides every proposal by the rule of VERSIONS.md, on its
// own: granted iff offset − read_to < headroom (no headroom: granted). A
// tree granted twice (a replayed root prompt) counts at its first grant.
func readGrants(t *testing.T, brokers []string, topic string) []grant {
	t.Helper()
	kcfg := pipelinetest.Kafka(brokers)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	first, end, err := pipeline.PartitionBounds(ctx, kcfg, topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []grant
	seen := map[string]bool{}
	err = pipeline.ReadRange(ctx, kcfg, topic, 0, first, end, func(rec pipeline.Record) error {
		var a topics.Admission
		if err := topics.Decode(rec.Value, &a); err != nil {
			return fmt.Errorf("admission log offset %d: %w", rec.Offset, err)
		}
		ok := a.Headroom == nil || rec.Offset-a.ReadTo < *a.Headroom
		if ok && !seen[a.TreeID] {
			seen[a.TreeID] = true
			out = append(out, grant{offset: rec.Offset, tree: a.TreeID, version: a.PolicyVersion, at: a.AdmittedAt, bounded: a.Headroom != nil})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// trainerRun is what a trainer's log says: its bound and, in time order,
// how many trees it had consumed and the rows it trained at which version.
type trainerRun struct {
	name    string
	eta, k  int
	events  []trainerEvent
	trained []trainedRow
	// doneAt is when the trainer finished (its "done" event), zero while
	// it runs. After it, its bound lasts until its progress is older than
	// progress_ttl, which its log cannot time: grants after doneAt are not
	// checked against it.
	doneAt time.Time
}

type trainedRow struct {
	tree           string
	rowVersion     int64
	trainerVersion int64
	step           int // index of the step event in the run, in order
}

func newTrainerRun(name string, eta, k int, events []trainerEvent) *trainerRun {
	r := &trainerRun{name: name, eta: eta, k: k, events: events}
	for i, e := range events {
		if e.Event == "done" {
			r.doneAt = time.Unix(0, int64(e.Time*1e9))
		}
		if e.Event != "step" {
			continue
		}
		for _, row := range e.RowsTrained {
			tree, _ := row[0].(string)
			v, _ := row[1].(float64)
			r.trained = append(r.trained, trainedRow{tree: tree, rowVersion: int64(v), trainerVersion: e.Version, step: i})
		}
	}
	return r
}

// consumedAt is the trees the trainer had consumed at time at, as its log
// says (the last report before at; its progress records say no more).
func (r *trainerRun) consumedAt(at time.Time) int64 {
	var n int64
	for _, e := range r.events {
		if e.Consumed == nil || time.Unix(0, int64(e.Time*1e9)).After(at) {
			continue
		}
		var sum int64
		for _, off := range e.Consumed {
			sum += off
		}
		n = max(n, sum)
	}
	return n
}

// checkAdmissions: no bounded grant let the trees admitted and not
// consumed by a trainer exceed (η+1)·k, counting every grant up to it on
// the log and what the trainer had consumed when it was proposed.
func checkAdmissions(t *testing.T, grants []grant, runs []*trainerRun) {
	t.Helper()
	for i, g := range grants {
		if !g.bounded {
			continue
		}
		for _, r := range runs {
			if !r.doneAt.IsZero() && g.at.After(r.doneAt) {
				continue
			}
			if ahead := int64(i+1) - r.consumedAt(g.at); ahead > int64((r.eta+1)*r.k) {
				t.Errorf("grant of %s (offset %d, %d trees granted): trainer %s had consumed %d: %d ahead, bound (%d+1)*%d",
					g.tree, g.offset, i+1, r.name, r.consumedAt(g.at), ahead, r.eta, r.k)
			}
		}
	}
}

// checkStaleness: every row a trainer trained is at most η versions stale,
// beyond the documented reordering (VERSIONS.md): ⌈o/k⌉ more, o the trees
// admitted after the row's tree that the trainer trained before it.
func checkStaleness(t *testing.T, grants []grant, r *trainerRun) (maxStale int64, reordered int) {
	t.Helper()
	order := map[string]int{}
	for i, g := range grants {
		order[g.tree] = i
	}
	firstStep := map[string]int{}
	for _, row := range r.trained {
		if _, ok := firstStep[row.tree]; !ok {
			firstStep[row.tree] = row.step
		}
	}
	for _, row := range r.trained {
		stale := row.trainerVersion - row.rowVersion
		maxStale = max(maxStale, stale)
		if stale <= int64(r.eta) {
			continue
		}
		pos, ok := order[row.tree]
		if !ok {
			t.Errorf("%s trained a row of tree %s, which the admission log never granted", r.name, row.tree)
			continue
		}
		overtook := 0
		for tree, step := range firstStep {
			if step < firstStep[row.tree] && order[tree] > pos {
				overtook++
			}
		}
		reordered++
		if allowed := int64(r.eta) + int64((overtook+r.k-1)/r.k); stale > allowed {
			t.Errorf("%s trained a row of tree %s (version %d) at version %d: %d stale, %d trees admitted after it trained before it: at most %d",
				r.name, row.tree, row.rowVersion, row.trainerVersion, stale, overtook, allowed)
		}
	}
	return maxStale, reordered
}

// stalenessHistogram counts r's trained rows by staleness, for the log.
func stalenessHistogram(r *trainerRun) string {
	h := map[int64]int{}
	for _, row := range r.trained {
		h[row.trainerVersion-row.rowVersion]++
	}
	keys := make([]int64, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	out := ""
	for _, k := range keys {
		out += " " + strconv.FormatInt(k, 10) + ":" + strconv.Itoa(h[k])
	}
	return out
}
