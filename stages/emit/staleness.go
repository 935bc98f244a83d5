package emit

import (
	"context"
	"sync/atomic"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/topics"
)

// newestVersion is the newest policy version the stage knows: the newest
// on the policy-versions topic, or the newest a written row carried (a
// row proves its version exists, and the topic may be read behind the
// credited one). It only grows.
type newestVersion struct{ v atomic.Int64 }

func (n *newestVersion) get() int64 { return n.v.Load() }

// raise makes v known.
func (n *newestVersion) raise(v int64) {
	for {
		cur := n.v.Load()
		if v <= cur || n.v.CompareAndSwap(cur, v) {
			return
		}
	}
}

// Follow reads the policy-versions topic from its start (outside any
// consumer group) until ctx ends, so that the staleness of the rows the
// stage writes is counted from the newest version published
// (murphy_emit_row_staleness_versions). Without brokers it does nothing.
func (s *Stage) Follow(ctx context.Context, kcfg pipeline.KafkaConfig) {
	if len(kcfg.Brokers) == 0 {
		return
	}
	go pipeline.Follow(ctx, kcfg, s.cat.Topic(topics.PolicyVersions), s.ObserveVersion)
}

// ObserveVersion handles one record of the policy-versions topic.
func (s *Stage) ObserveVersion(pv *topics.PolicyVersion) { s.newest.raise(pv.Version) }

// NewestVersion is the newest policy version the stage knows (0: none).
func (s *Stage) NewestVersion() int64 { return s.newest.get() }

// rowStaleness is the staleness of the rows of trees against newest, the
// newest version known: newest is first raised to the newest version among
// the rows (so a staleness is never negative), then observe is called with
// newest − policy_version for every row. While no version is known
// (newest 0, every row at version 0: no trainer publishes versions and the
// policy has none) the rows are not observed but counted as unversioned;
// once one is, a row at version 0 is a row of the initial policy, as stale
// as the trainer's reader counts it. It returns the raised newest and the
// count of unversioned rows.
func rowStaleness(trees []sourcedTree, newest int64, observe func(versions int64)) (top int64, unversioned int) {
	top = newest
	for _, t := range trees {
		for i := range t.Tree.Samples {
			top = max(top, t.Tree.Samples[i].PolicyVersion)
		}
	}
	for _, t := range trees {
		for i := range t.Tree.Samples {
			if top == 0 {
				unversioned++
				continue
			}
			observe(top - t.Tree.Samples[i].PolicyVersion)
		}
	}
	return top, unversioned
}

// observeStaleness records the staleness of the rows of trees, just
// written.
func (s *Stage) observeStaleness(trees []sourcedTree) {
	top, unversioned := rowStaleness(trees, s.newest.get(), func(v int64) { s.metrics.staleness.Observe(float64(v)) })
	s.newest.raise(top)
	s.metrics.unversioned.Add(float64(unversioned))
}
