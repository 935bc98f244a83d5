package govern

import (
	"fmt"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/murphy-rl/murphy/pipeline"
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
// registered); on failure nothing stays registered.
func NewMetrics(reg prometheus.Registerer, stage string) (*Metrics, error) {
	labels := prometheus.Labels{"stage": stage}
	m := &Metrics{}
	err := pipeline.RegisterMetrics(reg, func(f promauto.Factory) {
		m.Samples = f.NewCounterVec(prometheus.CounterOpts{
			Namespace: "murphy", Subsystem: "govern", Name: "samples_total",
			Help: "Samples produced, by route and failure cause.", ConstLabels: labels,
		}, []string{"route", "cause"})
		m.Reward = f.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "murphy", Subsystem: "govern", Name: "reward",
			Help:        "Rewards of train-route samples, by turn.",
			ConstLabels: labels,
			Buckets:     []float64{0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1},
		}, []string{"turn"})
		m.Expansions = f.NewCounter(prometheus.CounterOpts{
			Namespace: "murphy", Subsystem: "govern", Name: "expansions_total",
			Help: "Refinement prompts produced.", ConstLabels: labels,
		})
		m.Children = f.NewCounter(prometheus.CounterOpts{
			Namespace: "murphy", Subsystem: "govern", Name: "children_requested_total",
			Help: "Children requested by refinement prompts.", ConstLabels: labels,
		})
		m.LLM = f.NewCounterVec(prometheus.CounterOpts{
			Namespace: "murphy", Subsystem: "govern", Name: "llm_calls_total",
			Help: "LLM judge and step scorer calls, by component and result.", ConstLabels: labels,
		}, []string{"component", "result"})
	})
	if err != nil {
		return nil, fmt.Errorf("govern metrics: %w", err)
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
