package generate

import (
	"sort"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/murphy-rl/murphy/topics"
)

// trainerRows exports what the trainers report of their rows on the
// trainer-progress topic (VERSIONS.md), per trainer, summed over the newest
// record of each of its ranks: the staleness histogram of the rows it
// trained (rows_trained_staleness) and the rows its reader dropped, by
// reason (rows_dropped). The counts are cumulative in the records, so the
// metrics are counters read from the log; a trainer is exported while its
// progress is fresher than staleness.progress_ttl.
type trainerRows struct {
	reports   func() map[string][]*topics.TrainerProgress
	staleness *prometheus.Desc
	dropped   *prometheus.Desc
}

func newTrainerRows(reports func() map[string][]*topics.TrainerProgress) *trainerRows {
	l := prometheus.Labels{"stage": "generate"}
	return &trainerRows{reports: reports,
		staleness: prometheus.NewDesc("murphy_trainer_row_staleness_versions",
			"Staleness of the rows a trainer trained, in policy versions (its version minus the row's when its reader yielded it), from its progress records.",
			[]string{"trainer"}, l),
		dropped: prometheus.NewDesc("murphy_trainer_rows_dropped_total",
			"Rows a trainer's reader dropped, by reason (stale, duplicate_batch), from its progress records.",
			[]string{"trainer", "reason"}, l),
	}
}

// Describe implements prometheus.Collector.
func (c *trainerRows) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.staleness
	ch <- c.dropped
}

// Collect implements prometheus.Collector.
func (c *trainerRows) Collect(ch chan<- prometheus.Metric) {
	for trainer, ranks := range c.reports() {
		if h, ok := trainedStaleness(ranks); ok {
			ch <- prometheus.MustNewConstHistogram(c.staleness, h.count, h.sum, h.buckets, trainer)
		}
		for reason, n := range rowsDropped(ranks) {
			ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.CounterValue, float64(n), trainer, reason)
		}
	}
}

// stalenessHistogram is a histogram over staleness in versions: buckets
// maps each upper bound of topics.StalenessBuckets to the rows at most
// that stale (cumulative, as Prometheus wants them).
type stalenessHistogram struct {
	count   uint64
	sum     float64
	buckets map[float64]uint64
}

// trainedStaleness sums the rows_trained_staleness of ranks into a
// histogram; ok is false when no rank reports it (a reader that does not
// know the trainer's version). Counts that are not a version >= 0 and a
// row count >= 0 (not in a validated record) are left out.
func trainedStaleness(ranks []*topics.TrainerProgress) (h stalenessHistogram, ok bool) {
	bounds := topics.StalenessBuckets()
	h.buckets = make(map[float64]uint64, len(bounds))
	for _, b := range bounds {
		h.buckets[b] = 0
	}
	for _, p := range ranks {
		if p.RowsTrainedStaleness == nil {
			continue
		}
		ok = true
		for k, n := range p.RowsTrainedStaleness {
			s, err := topics.ParseStaleness(k)
			if err != nil || n < 0 {
				continue
			}
			h.count += uint64(n)
			h.sum += float64(s) * float64(n)
			for _, b := range bounds {
				if float64(s) <= b {
					h.buckets[b] += uint64(n)
				}
			}
		}
	}
	return h, ok
}

// rowsDropped sums the rows_dropped of ranks by reason (negative counts
// left out).
func rowsDropped(ranks []*topics.TrainerProgress) map[string]int64 {
	out := map[string]int64{}
	for _, p := range ranks {
		for reason, n := range p.RowsDropped {
			if n >= 0 {
				out[reason] += n
			}
		}
	}
	return out
}

// reports returns the newest progress of every rank of each trainer with
// a rank whose progress is fresher than the progress TTL, ranks in order.
func (b *bound) reports() map[string][]*topics.TrainerProgress {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	out := map[string][]*topics.TrainerProgress{}
	for id, ranks := range b.progress {
		fresh := false
		for _, p := range ranks {
			fresh = fresh || now.Sub(p.UpdatedAt) <= b.ttl
		}
		if !fresh {
			continue
		}
		ps := make([]*topics.TrainerProgress, 0, len(ranks))
		for _, p := range ranks {
			ps = append(ps, p)
		}
		sort.Slice(ps, func(i, j int) bool { return ps[i].Rank < ps[j].Rank })
		out[id] = ps
	}
	return out
}

// trainerReports are the trainers' newest progress records (none without
// staleness.enabled: the trainer-progress topic is read only then).
func (s *Stage) trainerReports() map[string][]*topics.TrainerProgress {
	if s.bnd == nil {
		return nil
	}
	return s.bnd.reports()
}
