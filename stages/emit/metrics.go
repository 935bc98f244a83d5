package emit

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/topics"
)

// Metrics are the emit stage's metrics.
type Metrics struct {
	batches      *prometheus.CounterVec
	bytes        *prometheus.CounterVec
	errors       *prometheus.CounterVec
	rows         prometheus.Counter
	trees        prometheus.Counter
	skipped      prometheus.Counter
	duplicates   prometheus.Counter
	rebuilt      prometheus.Counter
	flushSeconds prometheus.Histogram
	staleness    prometheus.Histogram
	unversioned  prometheus.Counter
}

// NewMetrics creates the metrics and registers them on reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	cl := prometheus.Labels{"stage": StageName}
	m := &Metrics{}
	err := pipeline.RegisterMetrics(reg, func(f promauto.Factory) {
		m.batches = f.NewCounterVec(prometheus.CounterOpts{Name: "murphy_emit_batches_total",
			Help: "Batches written, by sink.", ConstLabels: cl}, []string{"sink"})
		m.bytes = f.NewCounterVec(prometheus.CounterOpts{Name: "murphy_emit_bytes_total",
			Help: "Encoded bytes produced, by sink.", ConstLabels: cl}, []string{"sink"})
		m.errors = f.NewCounterVec(prometheus.CounterOpts{Name: "murphy_emit_sink_errors_total",
			Help: "Failed batch writes, by sink.", ConstLabels: cl}, []string{"sink"})
		m.rows = f.NewCounter(prometheus.CounterOpts{Name: "murphy_emit_rows_total",
			Help: "Rows (responses) emitted.", ConstLabels: cl})
		m.trees = f.NewCounter(prometheus.CounterOpts{Name: "murphy_emit_trees_total",
			Help: "Credited trees emitted.", ConstLabels: cl})
		m.duplicates = f.NewCounter(prometheus.CounterOpts{Name: "murphy_emit_duplicates_dropped_total",
			Help: "Credited records dropped because their tree id is on an earlier record within emit.dedupe_window offsets (a write that landed twice).", ConstLabels: cl})
		m.skipped = f.NewCounter(prometheus.CounterOpts{Name: "murphy_emit_replayed_skipped_total",
			Help: "Redelivered credited records skipped because every sink already holds them.", ConstLabels: cl})
		m.rebuilt = f.NewCounter(prometheus.CounterOpts{Name: "murphy_emit_rebuilt_ranges_total",
			Help: "Batch ranges rebuilt after a restart for a sink that lacked them.", ConstLabels: cl})
		m.flushSeconds = f.NewHistogram(prometheus.HistogramOpts{Name: "murphy_emit_flush_seconds",
			Help: "Time to build and write one batch.", ConstLabels: cl, Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)})
		m.staleness = f.NewHistogram(prometheus.HistogramOpts{Name: "murphy_emit_row_staleness_versions",
			Help:        "Staleness of the rows written, in policy versions: the newest version known (policy-versions topic, or a row's) minus the row's policy_version.",
			ConstLabels: cl, Buckets: topics.StalenessBuckets()})
		m.unversioned = f.NewCounter(prometheus.CounterOpts{Name: "murphy_emit_rows_unversioned_total",
			Help: "Rows written while no policy version is known (every row at policy_version 0): not in the staleness histogram.", ConstLabels: cl})
	})
	if err != nil {
		return nil, fmt.Errorf("emit: register metrics: %w", err)
	}
	return m, nil
}

func (m *Metrics) assigned(rebuilt int) { m.rebuilt.Add(float64(rebuilt)) }
