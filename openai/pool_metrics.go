package openai

import (
	"sort"

	"github.com/prometheus/client_golang/prometheus"
)

// The pool's metrics, one series per server (label server, its API root).
// The generate stage registers them with its constant label stage=generate.
var (
	poolDescInFlight = prometheus.NewDesc("murphy_generate_server_in_flight",
		"Sequences in flight on an inference server of the pool.", []string{"server"}, nil)
	poolDescLimit = prometheus.NewDesc("murphy_generate_server_limit",
		"An inference server's adaptive concurrency limit, in sequences.", []string{"server"}, nil)
	poolDescLimitMetrics = prometheus.NewDesc("murphy_generate_server_limit_from_metrics",
		"1 while an inference server's limit follows its own metrics (running and waiting sequences), 0 while it follows throughput.", []string{"server"}, nil)
	poolDescWaiting = prometheus.NewDesc("murphy_generate_server_waiting",
		"Sequences waiting in an inference server's scheduler, as its metrics last said (absent without metrics).", []string{"server"}, nil)
	poolDescHealthy = prometheus.NewDesc("murphy_generate_server_healthy",
		"1 while an inference server gets requests, 0 while it waits for a health check.", []string{"server"}, nil)
	poolDescLatency = prometheus.NewDesc("murphy_generate_server_request_seconds",
		"Latency of one pool request (every sample it asked one server for) on an inference server.", []string{"server"}, nil)
	poolDescErrors = prometheus.NewDesc("murphy_generate_server_errors_total",
		"Failed requests on an inference server, by error kind.", []string{"server", "kind"}, nil)
	poolDescRouted = prometheus.NewDesc("murphy_generate_server_routed_total",
		"Requests sent to an inference server, by how it was chosen (affinity, spill, any).", []string{"server", "how"}, nil)
)

// latencyBuckets are the buckets of murphy_generate_server_request_seconds.
var latencyBuckets = prometheus.ExponentialBuckets(0.005, 2.5, 14)

// latencyHistogram is a server's latency histogram, guarded by Pool.mu.
type latencyHistogram struct {
	counts []uint64
	sum    float64
	n      uint64
}

func newLatencyHistogram() *latencyHistogram {
	return &latencyHistogram{counts: make([]uint64, len(latencyBuckets))}
}

func (h *latencyHistogram) observe(v float64) {
	if i := sort.SearchFloat64s(latencyBuckets, v); i < len(h.counts) {
		h.counts[i]++
	}
	h.sum += v
	h.n++
}

func (h *latencyHistogram) buckets() map[float64]uint64 {
	out := make(map[float64]uint64, len(latencyBuckets))
	var c uint64
	for i, ub := range latencyBuckets {
		c += h.counts[i]
		out[ub] = c
	}
	return out
}

// Describe implements prometheus.Collector.
func (p *Pool) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{poolDescInFlight, poolDescLimit, poolDescLimitMetrics, poolDescWaiting, poolDescHealthy, poolDescLatency, poolDescErrors, poolDescRouted} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: the servers of the pool now
// (a removed server's series go with it).
func (p *Pool) Collect(ch chan<- prometheus.Metric) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.servers {
		healthy := 0.0
		if s.routable() {
			healthy = 1
		}
		ch <- prometheus.MustNewConstMetric(poolDescInFlight, prometheus.GaugeValue, float64(s.inflight), s.url)
		ch <- prometheus.MustNewConstMetric(poolDescLimit, prometheus.GaugeValue, float64(s.lim.Limit()), s.url)
		fromMetrics := 0.0
		if s.lim.metrics {
			fromMetrics = 1
		}
		ch <- prometheus.MustNewConstMetric(poolDescLimitMetrics, prometheus.GaugeValue, fromMetrics, s.url)
		if s.loaded {
			ch <- prometheus.MustNewConstMetric(poolDescWaiting, prometheus.GaugeValue, s.load.Waiting, s.url)
		}
		ch <- prometheus.MustNewConstMetric(poolDescHealthy, prometheus.GaugeValue, healthy, s.url)
		ch <- prometheus.MustNewConstHistogram(poolDescLatency, s.latency.n, s.latency.sum, s.latency.buckets(), s.url)
		for k, v := range s.stats.errors {
			ch <- prometheus.MustNewConstMetric(poolDescErrors, prometheus.CounterValue, float64(v), s.url, string(k))
		}
		for k, v := range s.stats.routed {
			ch <- prometheus.MustNewConstMetric(poolDescRouted, prometheus.CounterValue, float64(v), s.url, k)
		}
	}
}
