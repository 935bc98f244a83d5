package generate

import (
	"strconv"
	"time"

	"github.com/murphy-rl/murphy/openai"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Metrics of the generate stage, all with the constant label stage=generate.
type Metrics struct {
	// Prompts counts prompts handled, by kind (root, backfill, refinement).
	Prompts *prometheus.CounterVec
	// Started counts prompts that got a generation slot, by stream
	// (refinement, live, backfill): the split of capacity BackfillShare
	// sets.
	Started *prometheus.CounterVec
	// PolicyCalls counts policy Generate calls (one per prompt).
	PolicyCalls prometheus.Counter
	// Samples counts candidates emitted, by result (ok or the infra cause);
	// its rate is samples/s.
	Samples *prometheus.CounterVec
	// Tokens counts prompt and response tokens of emitted candidates; its
	// rate is tokens/s.
	Tokens *prometheus.CounterVec
	// Latency is the time of one policy call (a whole group).
	Latency prometheus.Histogram
	// Requests counts HTTP attempts to the inference server, by endpoint
	// and status code ("error" when no response came).
	Requests *prometheus.CounterVec
	// RequestLatency is the time of one HTTP attempt.
	RequestLatency prometheus.Histogram
	// Retries counts HTTP attempts that are retried, by error kind.
	Retries *prometheus.CounterVec
	// Failures counts failures by cause: infra causes of emitted
	// candidates, and HTTP error kinds of requests that gave up.
	Failures *prometheus.CounterVec
	// InFlight is the number of prompts being generated now.
	InFlight prometheus.Gauge
	// TreesInFlight is the number of trees admitted and not yet completed.
	TreesInFlight prometheus.Gauge
	// HeldBack counts root prompts that waited for the tree cap.
	HeldBack prometheus.Counter
	// Completions counts completed trees that released a slot.
	Completions prometheus.Counter

	// Policy versions and the staleness bound (VERSIONS.md).
	// VersionServed is the version new trees start at; VersionNewest the
	// newest published (above VersionServed while a load fails).
	VersionServed prometheus.Gauge
	VersionNewest prometheus.Gauge
	// VersionChanges counts versions served; VersionLoads load hook
	// outcomes (ok, failed); VersionLoadSeconds the hook's time.
	VersionChanges     prometheus.Counter
	VersionLoads       *prometheus.CounterVec
	VersionLoadSeconds prometheus.Histogram
	// VersionsInFlight is the number of distinct versions among the trees
	// in flight (every process's); InFlightVersionLag the served version
	// minus the oldest in flight; BoundTreesInFlight those trees.
	VersionsInFlight   prometheus.Gauge
	InFlightVersionLag prometheus.Gauge
	BoundTreesInFlight prometheus.Gauge
	// VersionsAhead is how many versions generation is ahead of each
	// bounded trainer; TrainerBacklog the same in trees.
	VersionsAhead  *prometheus.GaugeVec
	TrainerBacklog *prometheus.GaugeVec
	// TrainersBounding is the number of trainers whose bound applies now.
	TrainersBounding prometheus.Gauge
	// HeldBackStale counts root prompts that waited for the staleness bound.
	HeldBackStale prometheus.Counter
	// Restarts counts stale refinements closed by in_flight=restart.
	Restarts prometheus.Counter
	// Admissions counts this process's proposals on the admission log, by
	// decision (granted, voided).
	Admissions *prometheus.CounterVec
	// HeldBackVersion counts root prompts that waited for a bounded
	// trainer's version to be served.
	HeldBackVersion prometheus.Counter
	// Aborted counts requests interrupted by a version change
	// (in_flight=abort) and generated again.
	Aborted prometheus.Counter
}

// NewMetrics creates the metrics and registers them on reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	l := prometheus.Labels{"stage": "generate"}
	m := &Metrics{
		Prompts: f.NewCounterVec(prometheus.CounterOpts{Name: "murphy_generate_prompts_total",
			Help: "Prompts handled, by kind.", ConstLabels: l}, []string{"kind"}),
		Started: f.NewCounterVec(prometheus.CounterOpts{Name: "murphy_generate_prompts_started_total",
			Help: "Prompts that got a generation slot, by stream (refinement, live, backfill).", ConstLabels: l}, []string{"stream"}),
		PolicyCalls: f.NewCounter(prometheus.CounterOpts{Name: "murphy_generate_policy_calls_total",
			Help: "Policy calls (one per prompt).", ConstLabels: l}),
		Samples: f.NewCounterVec(prometheus.CounterOpts{Name: "murphy_generate_samples_total",
			Help: "Candidates emitted, by result (ok or infra cause).", ConstLabels: l}, []string{"result"}),
		Tokens: f.NewCounterVec(prometheus.CounterOpts{Name: "murphy_generate_tokens_total",
			Help: "Tokens of emitted candidates, by kind (prompt, response).", ConstLabels: l}, []string{"kind"}),
		Latency: f.NewHistogram(prometheus.HistogramOpts{Name: "murphy_generate_policy_latency_seconds",
			Help: "Latency of one policy call (a whole group).", ConstLabels: l,
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 14)}),
		Requests: f.NewCounterVec(prometheus.CounterOpts{Name: "murphy_generate_http_requests_total",
			Help: "HTTP attempts to the inference server, by endpoint and code.", ConstLabels: l}, []string{"endpoint", "code"}),
		RequestLatency: f.NewHistogram(prometheus.HistogramOpts{Name: "murphy_generate_http_request_seconds",
			Help: "Latency of one HTTP attempt.", ConstLabels: l, Buckets: prometheus.ExponentialBuckets(0.005, 2.5, 12)}),
		Retries: f.NewCounterVec(prometheus.CounterOpts{Name: "murphy_generate_retries_total",
			Help: "HTTP attempts that were retried, by error kind.", ConstLabels: l}, []string{"kind"}),
		Failures: f.NewCounterVec(prometheus.CounterOpts{Name: "murphy_generate_failures_total",
			Help: "Failures by cause.", ConstLabels: l}, []string{"cause"}),
		InFlight: f.NewGauge(prometheus.GaugeOpts{Name: "murphy_generate_in_flight",
			Help: "Prompts being generated now.", ConstLabels: l}),
		TreesInFlight: f.NewGauge(prometheus.GaugeOpts{Name: "murphy_generate_trees_in_flight",
			Help: "Trees admitted and not yet completed.", ConstLabels: l}),
		HeldBack: f.NewCounter(prometheus.CounterOpts{Name: "murphy_generate_root_prompts_held_back_total",
			Help: "Root prompts that waited for the cap on trees in flight.", ConstLabels: l}),
		Completions: f.NewCounter(prometheus.CounterOpts{Name: "murphy_generate_tree_completions_total",
			Help: "Completed trees that released a slot.", ConstLabels: l}),
	}
	m.VersionServed = f.NewGauge(prometheus.GaugeOpts{Name: "murphy_generate_policy_version",
		Help: "Policy version new trees start at.", ConstLabels: l})
	m.VersionNewest = f.NewGauge(prometheus.GaugeOpts{Name: "murphy_generate_policy_version_newest",
		Help: "Newest policy version published.", ConstLabels: l})
	m.VersionChanges = f.NewCounter(prometheus.CounterOpts{Name: "murphy_generate_policy_version_changes_total",
		Help: "Policy versions served.", ConstLabels: l})
	m.VersionLoads = f.NewCounterVec(prometheus.CounterOpts{Name: "murphy_generate_version_loads_total",
		Help: "Load hook calls, by result (ok, failed).", ConstLabels: l}, []string{"result"})
	m.VersionLoadSeconds = f.NewHistogram(prometheus.HistogramOpts{Name: "murphy_generate_version_load_seconds",
		Help: "Time of the load hook for one version.", ConstLabels: l, Buckets: prometheus.ExponentialBuckets(0.01, 3, 10)})
	m.VersionsInFlight = f.NewGauge(prometheus.GaugeOpts{Name: "murphy_generate_versions_in_flight",
		Help: "Distinct policy versions among the trees in flight.", ConstLabels: l})
	m.InFlightVersionLag = f.NewGauge(prometheus.GaugeOpts{Name: "murphy_generate_in_flight_version_lag",
		Help: "Served version minus the oldest version of a tree in flight.", ConstLabels: l})
	m.BoundTreesInFlight = f.NewGauge(prometheus.GaugeOpts{Name: "murphy_generate_bound_trees_in_flight",
		Help: "Trees in flight of every generate process, as the staleness bound counts them.", ConstLabels: l})
	m.VersionsAhead = f.NewGaugeVec(prometheus.GaugeOpts{Name: "murphy_generate_versions_ahead",
		Help: "Versions generation is ahead of a bounded trainer.", ConstLabels: l}, []string{"trainer"})
	m.TrainerBacklog = f.NewGaugeVec(prometheus.GaugeOpts{Name: "murphy_generate_trainer_backlog_trees",
		Help: "Trees admitted or credited and not yet consumed by a bounded trainer.", ConstLabels: l}, []string{"trainer"})
	m.TrainersBounding = f.NewGauge(prometheus.GaugeOpts{Name: "murphy_generate_trainers_bounding",
		Help: "Trainers whose staleness bound applies now.", ConstLabels: l})
	m.HeldBackStale = f.NewCounter(prometheus.CounterOpts{Name: "murphy_generate_root_prompts_held_back_staleness_total",
		Help: "Root prompts that waited for the staleness bound.", ConstLabels: l})
	m.Restarts = f.NewCounter(prometheus.CounterOpts{Name: "murphy_generate_stale_refinements_total",
		Help: "Refinements of trees older than the served version closed (in_flight=restart).", ConstLabels: l})
	m.Admissions = f.NewCounterVec(prometheus.CounterOpts{Name: "murphy_generate_admissions_total",
		Help: "This process's proposals on the admission log, by decision (granted, voided).", ConstLabels: l}, []string{"result"})
	m.HeldBackVersion = f.NewCounter(prometheus.CounterOpts{Name: "murphy_generate_root_prompts_held_back_version_total",
		Help: "Root prompts that waited for a bounded trainer's version to be served.", ConstLabels: l})
	m.Aborted = f.NewCounter(prometheus.CounterOpts{Name: "murphy_generate_aborted_requests_total",
		Help: "Prompts whose generation a version change interrupted (in_flight=abort), generated again.", ConstLabels: l})
	return m
}

// ObserveAttempt records one HTTP attempt of an openai.Client.
func (m *Metrics) ObserveAttempt(a openai.Attempt) {
	code := "error"
	if a.Status != 0 {
		code = strconv.Itoa(a.Status)
	}
	m.Requests.WithLabelValues(a.Endpoint, code).Inc()
	m.RequestLatency.Observe(a.Duration.Seconds())
	if a.Err == nil {
		return
	}
	if a.Wait > 0 {
		m.Retries.WithLabelValues(string(a.Err.Kind)).Inc()
	} else {
		m.Failures.WithLabelValues("http." + string(a.Err.Kind)).Inc()
	}
}

func (m *Metrics) observeCall(d time.Duration) {
	m.PolicyCalls.Inc()
	m.Latency.Observe(d.Seconds())
}
