package execute

import (
	"fmt"
	"time"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/sandbox"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Metrics are the stage's Prometheus metrics.
type Metrics struct {
	// Executions counts execution records by status; its rate is
	// executions/s.
	Executions *prometheus.CounterVec
	// Duration is the time to evaluate one candidate.
	Duration prometheus.Histogram
	// Saturation is the fraction of the pool's sandboxes busy.
	Saturation prometheus.GaugeFunc
	// Restarts counts sandboxes replaced after a failure.
	Restarts prometheus.CounterFunc
}

// NewMetrics registers the metrics on reg (nil = unregistered). The pool
// gauges read pool; without one (nil) they stay zero.
func NewMetrics(reg prometheus.Registerer, stage string, pool *sandbox.Pool) (*Metrics, error) {
	labels := prometheus.Labels{"stage": stage}
	m := &Metrics{}
	err := pipeline.RegisterMetrics(reg, func(f promauto.Factory) {
		m.Executions = f.NewCounterVec(prometheus.CounterOpts{
			Name: "murphy_execute_executions_total", Help: "Execution records produced, by status.", ConstLabels: labels,
		}, []string{"status"})
		m.Duration = f.NewHistogram(prometheus.HistogramOpts{
			Name: "murphy_execute_duration_seconds", Help: "Time to evaluate one candidate.", ConstLabels: labels,
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		})
		m.Saturation = f.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "murphy_execute_pool_saturation", Help: "Fraction of sandboxes busy.", ConstLabels: labels,
		}, func() float64 {
			if pool == nil || pool.Size() == 0 {
				return 0
			}
			return float64(pool.Busy()) / float64(pool.Size())
		})
		m.Restarts = f.NewCounterFunc(prometheus.CounterOpts{
			Name: "murphy_execute_sandbox_restarts_total", Help: "Sandboxes replaced after a failure.", ConstLabels: labels,
		}, func() float64 {
			if pool == nil {
				return 0
			}
			return float64(pool.Stats().Restarts)
		})
	})
	if err != nil {
		return nil, fmt.Errorf("execute: metrics: %w", err)
	}
	return m, nil
}

func (m *Metrics) count(status string) { m.Executions.WithLabelValues(status).Inc() }

func (m *Metrics) observe(d time.Duration) { m.Duration.Observe(d.Seconds()) }
