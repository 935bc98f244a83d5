package pipeline

import (
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the runtime's per-stage metrics. Stages register their own
// metrics on the same registry.
type Metrics struct {
	In       *prometheus.CounterVec
	Out      *prometheus.CounterVec
	Failures *prometheus.CounterVec
	DLQ      *prometheus.CounterVec
	Latency  *prometheus.HistogramVec
	Lag      *prometheus.GaugeVec

	lagChildren sync.Map // lagKey → prometheus.Gauge, resolved once
}

type lagKey struct {
	stage, topic string
	partition    int
}

// NewMetrics registers the runtime metrics on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		In: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "murphy", Name: "records_in_total", Help: "Records consumed, by stage and topic.",
		}, []string{"stage", "topic"}),
		Out: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "murphy", Name: "records_out_total", Help: "Records produced, by stage and topic.",
		}, []string{"stage", "topic"}),
		Failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "murphy", Name: "handler_failures_total", Help: "Handler failures, by stage and reason (retried or not).",
		}, []string{"stage", "reason"}),
		DLQ: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "murphy", Name: "dead_letters_total", Help: "Records sent to the DLQ, by stage and reason.",
		}, []string{"stage", "reason"}),
		Latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "murphy", Name: "handler_seconds", Help: "Handler latency per record, by stage.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 18),
		}, []string{"stage"}),
		Lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "murphy", Name: "consumer_lag", Help: "Records behind the high watermark, by stage, topic and partition.",
		}, []string{"stage", "topic", "partition"}),
	}
	for _, c := range []prometheus.Collector{m.In, m.Out, m.Failures, m.DLQ, m.Latency, m.Lag} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *Metrics) lag(stage, topic string, partition int, offset, hwm int64) {
	if hwm <= 0 {
		return
	}
	k := lagKey{stage, topic, partition}
	g, ok := m.lagChildren.Load(k)
	if !ok {
		g, _ = m.lagChildren.LoadOrStore(k, m.Lag.WithLabelValues(stage, topic, strconv.Itoa(partition)))
	}
	g.(prometheus.Gauge).Set(float64(max(hwm-offset-1, 0)))
}
