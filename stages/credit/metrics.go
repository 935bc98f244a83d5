package credit

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/murphy-rl/murphy/pipeline"
)

// Metrics are the credit stage's own metrics (label stage="credit").
type Metrics struct {
	OpenTrees        *prometheus.GaugeVec // by partition
	Completed        prometheus.Counter
	TimeToComplete   prometheus.Histogram
	PrunedNodes      prometheus.Counter
	ZeroSignalGroups prometheus.Counter
	DroppedSamples   prometheus.Counter
	StuckTrees       prometheus.Counter
	DuplicateSamples prometheus.Counter
	LateSamples      prometheus.Counter
	LookbackRecords  prometheus.Counter
	Backpressure     prometheus.Counter
	Unwritable       prometheus.Counter
	LostCompletions  prometheus.Counter
}

// NewMetrics creates the metrics and registers them on reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	cl := prometheus.Labels{"stage": "credit"}
	m := &Metrics{}
	err := pipeline.RegisterMetrics(reg, func(f promauto.Factory) {
		counter := func(name, help string) prometheus.Counter {
			return f.NewCounter(prometheus.CounterOpts{Namespace: "murphy", Subsystem: "credit", Name: name, Help: help, ConstLabels: cl})
		}
		m.OpenTrees = f.NewGaugeVec(prometheus.GaugeOpts{Namespace: "murphy", Subsystem: "credit", Name: "open_trees",
			Help: "Trees being assembled, by samples partition.", ConstLabels: cl}, []string{"partition"})
		m.Completed = counter("trees_completed_total", "Complete trees credited and emitted.")
		m.TimeToComplete = f.NewHistogram(prometheus.HistogramOpts{Namespace: "murphy", Subsystem: "credit", Name: "time_to_complete_seconds",
			Help:        "Time from a tree's first sample to its last (record timestamps).",
			ConstLabels: cl, Buckets: prometheus.ExponentialBuckets(0.05, 2, 16)})
		m.PrunedNodes = counter("pruned_nodes_total", "Nodes removed by INTRAP/INTERP, subtrees included.")
		m.ZeroSignalGroups = counter("zero_signal_groups_total", "Response groups whose advantages are all zero.")
		m.DroppedSamples = counter("zero_signal_dropped_samples_total", "Members of zero-signal groups left out (drop_zero_signal).")
		m.StuckTrees = counter("stuck_trees_total", "Trees closed incomplete at their deadline or at the open-tree cap.")
		m.DuplicateSamples = counter("duplicate_samples_total", "Samples whose node id had already arrived.")
		m.LateSamples = counter("late_samples_total", "Samples of trees already emitted or closed (replays, stragglers).")
		m.LookbackRecords = counter("lookback_records_total", "Credited records read back on partition assignment.")
		m.Backpressure = counter("backpressure_seconds_total", "Time a partition waited at the open-tree cap.")
		m.Unwritable = counter("unwritable_trees_total", "Trees whose credited record could not be encoded (too large).")
		m.LostCompletions = counter("lost_completions_total", "Completions of emitted trees whose write failed (generate frees their slots after tree_ttl).")
	})
	if err != nil {
		return nil, fmt.Errorf("credit: register metrics: %w", err)
	}
	return m, nil
}
