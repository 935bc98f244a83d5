package pipeline

import (
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
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
	m := &Metrics{}
	err := RegisterMetrics(reg, func(f promauto.Factory) {
		m.In = f.NewCounterVec(prometheus.CounterOpts{
			Namespace: "murphy", Name: "records_in_total", Help: "Records consumed, by stage and topic.",
		}, []string{"stage", "topic"})
		m.Out = f.NewCounterVec(prometheus.CounterOpts{
			Namespace: "murphy", Name: "records_out_total", Help: "Records produced, by stage and topic.",
		}, []string{"stage", "topic"})
		m.Failures = f.NewCounterVec(prometheus.CounterOpts{
			Namespace: "murphy", Name: "handler_failures_total", Help: "Handler failures, by stage and reason (retried or not).",
		}, []string{"stage", "reason"})
		m.DLQ = f.NewCounterVec(prometheus.CounterOpts{
			Namespace: "murphy", Name: "dead_letters_total", Help: "Records sent to the DLQ, by stage and reason.",
		}, []string{"stage", "reason"})
		m.Latency = f.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "murphy", Name: "handler_seconds", Help: "Handler latency per record, by stage.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 18),
		}, []string{"stage"})
		m.Lag = f.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "murphy", Name: "consumer_lag", Help: "Records behind the high watermark, by stage, topic and partition.",
		}, []string{"stage", "topic", "partition"})
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// RegisterMetrics runs build with promauto's factory for reg, so that every
// collector build creates is registered on reg as it is created (reg nil:
// created unregistered). A registration that fails (a name already
// registered) is returned as the error, and the collectors build registered
// before it are unregistered again: a failed constructor leaves reg as it
// found it. Every metrics.go of the module registers through it.
func RegisterMetrics(reg prometheus.Registerer, build func(f promauto.Factory)) (err error) {
	if reg == nil {
		build(promauto.With(nil))
		return nil
	}
	rec := &recordingRegisterer{Registerer: reg}
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		e, ok := r.(error)
		if !ok {
			panic(r)
		}
		for _, c := range rec.done {
			reg.Unregister(c)
		}
		err = e
	}()
	build(promauto.With(rec))
	return nil
}

// recordingRegisterer remembers what it registered, so that RegisterMetrics
// can undo it.
type recordingRegisterer struct {
	prometheus.Registerer
	done []prometheus.Collector
}

func (r *recordingRegisterer) Register(c prometheus.Collector) error {
	if err := r.Registerer.Register(c); err != nil {
		return err
	}
	r.done = append(r.done, c)
	return nil
}

func (r *recordingRegisterer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
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
