package govern

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the govern stage's own metrics (the runtime counts records,
// failures and latency). Every metric carries the const label stage=<name>.
type Metrics struct {
	// Samples counts samples by route and cause.
	Samples *prometheus.CounterVec
	// Reward observes normal samples' rewards by turn.
	Reward *prometheus.HistogramVec
	// Expansions counts refinement prompts; Children the children they ask for.
	Expansions prometheus.Counter
	Children   prometheus.Counter
	// LLM counts LLM judge and scorer calls by component (llm judge or
	// scorer) and result (ok, cache_hit, parse_error, error, unaligned).
	LLM *prometheus.CounterVec
}

// NewMetrics creates the metrics and registers them on reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer, stage string) (*Metrics, error) {
	labels := prometheus.Labels{"stage": stage}
	m := &Metrics{
		Samples: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "murphy", Subsystem: "govern", Name: "samples_total",
			Help: "Samples produced, by route and failure cause.", ConstLabels: labels,
		}, []string{"route", "cause"}),
		Reward: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "murphy", Subsystem: "govern", Name: "reward",
			Help:        "Rewards of train-route samples, by turn.",
			ConstLabels: labels,
			Buckets:     []float64{0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1},
		}, []string{"turn"}),
		Expansions: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "murphy", Subsystem: "govern", Name: "expansions_total",
			Help: "Refinement prompts produced.", ConstLabels: labels,
		}),
		Children: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "murphy", Subsystem: "govern", Name: "children_requested_total",
			Help: "Children requested by refinement prompts.", ConstLabels: labels,
		}),
		LLM: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "murphy", Subsystem: "govern", Name: "llm_calls_total",
			Help: "LLM judge and step scorer calls, by component and result.", ConstLabels: labels,
		}, []string{"component", "result"}),
	}
	if err := m.register(reg); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *Metrics) observe(r Result) {
	s := r.Sample
	m.Samples.WithLabelValues(s.Route, s.FailureCause).Inc()
	if classOf(s.FailureCause) == ClassNormal {
		m.Reward.WithLabelValues(strconv.Itoa(s.Turn)).Observe(s.Reward)
	}
	if r.Refinement != nil {
		m.Expansions.Inc()
		m.Children.Add(float64(r.Refinement.GroupSize))
	}
}

func (m *Metrics) llmEvent(component, result string) {
	m.LLM.WithLabelValues(component, result).Inc()
}

// register registers the metrics on reg (nil: nothing); on failure nothing
// stays registered.
func (m *Metrics) register(reg prometheus.Registerer) error {
	if reg == nil {
		return nil
	}
	var errs []error
	var done []prometheus.Collector
	for _, c := range []prometheus.Collector{m.Samples, m.Reward, m.Expansions, m.Children, m.LLM} {
		if err := reg.Register(c); err != nil {
			errs = append(errs, err)
			continue
		}
		done = append(done, c)
	}
	if len(errs) > 0 {
		for _, c := range done {
			reg.Unregister(c)
		}
		return fmt.Errorf("govern metrics: %w", errors.Join(errs...))
	}
	return nil
}
