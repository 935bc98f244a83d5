package openai

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// LimitConfig configures the concurrency limit of each server of a Pool.
// The limit counts sequences (a request for n samples holds n), the unit a
// continuous-batching server (vLLM, SGLang, TGI) schedules.
//
// On such a server latency rises with the batch long before the server is
// full: that is how batching works, not overload, so the limit does not
// follow latency. It follows what the server says it is doing, and, where
// it says nothing, the throughput it delivers:
//
//   - Server metrics (MetricsPath, scraped every MetricsInterval): the
//     scheduler's running and waiting sequences and its KV cache usage
//     (vLLM's vllm:num_requests_running, vllm:num_requests_waiting,
//     vllm:kv_cache_usage_perc, or vllm:gpu_cache_usage_perc before vLLM
//     0.11; SGLang's sglang:num_running_reqs, sglang:num_queue_reqs,
//     sglang:token_usage). The limit keeps a small queue waiting on the
//     server beyond what its KV cache can still admit, target =
//     max(QueueMin, QueueRatio × running): enough that a finished
//     sequence's place in the batch is taken at the next step, not after
//     the client's round trip, and no more. The cache's room is what it
//     still holds at the running sequences' mean size: its capacity in
//     sequences (running / usage, smoothed over the scrapes at a usage of
//     30% or more) less those running, none at 95% usage; sequences waiting
//     within it only arrived during the current step. Per scrape, with excess = waiting −
//     room: above the target, the limit shrinks by half the difference,
//     whoever sent the excess (several clients of one server share its
//     queue); below it, while the limit is what holds the pool back (its
//     in-flight sequences reached 90% of it since the last scrape), it
//     grows by the difference, at most doubling (by half, at least the
//     target, with nothing waiting and no KV usage reported). A server
//     whose cache is full keeps the target waiting. (A server capped below
//     its cache, such as vLLM's --max-num-seqs, keeps up to the cache's
//     room waiting.)
//   - No metrics (the endpoint answers 404, is not configured, or fails
//     three scrapes in a row; it is tried again with a backoff up to 30 s):
//     a throughput hill climb. The limit slow-starts from Initial,
//     doubling per measurement while a doubling gains at least 25% more
//     completed sequences per second, then grows by half while a step
//     gains more than Gain; when a step gains less, the limit goes back to
//     the last one that gained, times Headroom (the server's queue), and
//     holds. A measurement lasts one mean request latency and at least
//     max(64, limit/2) completed sequences, after the first completion of
//     a request sent at the new limit; one in which the pool did not fill
//     the limit is measured again, unless its rate gained nothing over the
//     best: then the climb holds as above (the pool sent more than the
//     server gains from). Every ProbeInterval
//     the limit tries one step up and keeps it if it gains more than Gain.
//   - Errors of the server (5xx, timeouts, connection failures, 429)
//     multiply the limit by BackoffRatio, at most once per round trip
//     (only requests sent after the last decrease count), in both modes.
type LimitConfig struct {
	// Initial is a new server's limit, in sequences.
	Initial int `yaml:"initial"`
	// Min is the lowest limit.
	Min int `yaml:"min"`
	// Max is the highest limit.
	Max int `yaml:"max"`
	// MetricsPath is the server's Prometheus endpoint, relative to its
	// root (the API root without its /v1): "/metrics" for vLLM and SGLang
	// (SGLang with --enable-metrics). Empty: never scraped, the limit
	// follows throughput.
	MetricsPath string `yaml:"metrics_path"`
	// MetricsInterval is how often the metrics are scraped.
	MetricsInterval time.Duration `yaml:"metrics_interval"`
	// QueueMin is the fewest sequences kept waiting on a server beyond
	// what its KV cache can admit (the target is max(QueueMin,
	// QueueRatio × its running sequences)).
	QueueMin int `yaml:"queue_min"`
	// QueueRatio is the share of a server's running sequences kept
	// waiting on it, when more than QueueMin.
	QueueRatio float64 `yaml:"queue_ratio"`
	// Gain is the least relative throughput gain of a step up that keeps
	// the throughput climb going (0.05: 5%).
	Gain float64 `yaml:"gain"`
	// Headroom multiplies the last limit that gained throughput when the
	// climb stops (>= 1: a few sequences queued on the server).
	Headroom float64 `yaml:"headroom"`
	// BackoffRatio multiplies the limit on a server error, in (0, 1).
	BackoffRatio float64 `yaml:"backoff_ratio"`
	// ProbeInterval is how often the throughput climb tries a step up
	// again once it holds (0 = never).
	ProbeInterval time.Duration `yaml:"probe_interval"`
}

// DefaultLimitConfig starts at 8 sequences, within [1, 4096], scrapes
// /metrics every 250 ms and keeps max(4, 5% of the running sequences)
// waiting on a server.
func DefaultLimitConfig() LimitConfig {
	return LimitConfig{Initial: 8, Min: 1, Max: 4096, MetricsPath: "/metrics", MetricsInterval: 250 * time.Millisecond,
		QueueMin: 4, QueueRatio: 0.05, Gain: 0.05, Headroom: 1.25, BackoffRatio: 0.5, ProbeInterval: time.Minute}
}

// Validate checks the configuration.
func (c LimitConfig) Validate() error {
	var errs []error
	if c.Min < 1 || c.Initial < c.Min || c.Max < c.Initial {
		errs = append(errs, fmt.Errorf("limit: need 1 <= min (%d) <= initial (%d) <= max (%d)", c.Min, c.Initial, c.Max))
	}
	if c.MetricsPath != "" && (c.MetricsPath[0] != '/' || c.MetricsInterval <= 0) {
		errs = append(errs, fmt.Errorf("limit: metrics_path %q must start with / and metrics_interval (%s) be > 0", c.MetricsPath, c.MetricsInterval))
	}
	if c.QueueMin < 0 || !(c.QueueRatio >= 0) {
		errs = append(errs, fmt.Errorf("limit: queue_min (%d) and queue_ratio (%v) must be >= 0", c.QueueMin, c.QueueRatio))
	}
	if !(c.Gain > 0 && c.Gain < 1) {
		errs = append(errs, fmt.Errorf("limit: gain must be in (0, 1), got %v", c.Gain))
	}
	if !(c.Headroom >= 1) {
		errs = append(errs, fmt.Errorf("limit: headroom must be >= 1, got %v", c.Headroom))
	}
	if !(c.BackoffRatio > 0 && c.BackoffRatio < 1) {
		errs = append(errs, fmt.Errorf("limit: backoff_ratio must be in (0, 1), got %v", c.BackoffRatio))
	}
	if c.ProbeInterval < 0 {
		errs = append(errs, fmt.Errorf("limit: probe_interval must be >= 0, got %s", c.ProbeInterval))
	}
	return errors.Join(errs...)
}

// ServerLoad is what a server's metrics say about its scheduler.
type ServerLoad struct {
	// Running and Waiting are its sequences decoding and queued.
	Running, Waiting float64
	// KVUsage is its KV cache's used share, 0–1; < 0 when not reported.
	KVUsage float64
}

// serverLimit is one server's concurrency limit (LimitConfig's
// algorithm). It is a plain state machine: the caller holds the lock and
// passes the clock.
type serverLimit struct {
	cfg   LimitConfig
	limit float64
	// metrics: the limit follows the server's metrics (else throughput);
	// capacity is its KV cache's capacity in sequences as they last ran
	// (0: not known yet).
	metrics  bool
	capacity float64
	// peak is the most sequences in flight since the last decision.
	peak int
	// lastDecrease: errors of requests sent before it do not decrease
	// the limit again.
	lastDecrease time.Time
	tp           throughputClimb
}

// throughputClimb is the state of the throughput hill climb.
type throughputClimb struct {
	// t0 is when the current limit was set; a measurement starts at the
	// first completion of a request sent after it (m0).
	t0, m0    time.Time
	measuring bool
	settled   bool
	seqs      int
	latSum    float64
	latN      int
	// area is the integral of the sequences in flight over the
	// measurement (lastN since lastAt).
	area   float64
	lastAt time.Time
	lastN  int
	// slowStart: doubling; best is the best rate of the climb, at the
	// limit bestAt; holding: the climb stopped (next probe at nextProbe);
	// probing: a step up from holdAt is being measured against ref.
	slowStart, holding, probing bool
	best, bestAt, ref, holdAt   float64
	nextProbe                   time.Time
}

func newServerLimit(cfg LimitConfig, now time.Time) *serverLimit {
	l := &serverLimit{cfg: cfg, limit: float64(cfg.Initial)}
	l.tp = throughputClimb{t0: now, slowStart: true}
	return l
}

// Limit is the current limit in whole sequences (at least Min).
func (l *serverLimit) Limit() int { return max(l.cfg.Min, int(l.limit)) }

// Mode is "metrics" or "throughput".
func (l *serverLimit) Mode() string {
	if l.metrics {
		return "metrics"
	}
	return "throughput"
}

// restart starts over from Initial (a server back from the dead: its
// capacity is unknown); the climb slow-starts again.
func (l *serverLimit) restart(now time.Time) {
	l.limit, l.peak = float64(l.cfg.Initial), 0
	l.tp = throughputClimb{t0: now, slowStart: true}
}

// inFlight records the number of sequences in flight after a request
// started or ended.
func (l *serverLimit) inFlight(now time.Time, n int) {
	l.peak = max(l.peak, n)
	t := &l.tp
	if t.measuring && now.After(t.lastAt) {
		t.area += float64(t.lastN) * now.Sub(t.lastAt).Seconds()
	}
	t.lastAt, t.lastN = now, n
}

// limited says whether the limit held the pool back since the last
// decision: its in-flight sequences reached 90% of it.
func (l *serverLimit) limited() bool { return float64(l.peak) >= 0.9*l.limit-1 }

// observe applies a scrape of the server's metrics, with inflight the
// pool's sequences on it now, and reports whether the limit changed.
func (l *serverLimit) observe(load ServerLoad, inflight int) bool {
	before := l.Limit()
	l.metrics = true
	target := max(float64(l.cfg.QueueMin), l.cfg.QueueRatio*load.Running)
	// room is what the KV cache still holds at the running sequences'
	// mean size: sequences waiting within it are admitted at the next
	// step (they arrived during this one), not queued for a place.
	room := 0.0
	if u := load.KVUsage; u >= 0 && u < 0.95 {
		room = load.Running * (1 - u) / max(u, 0.01)
		if u >= 0.3 {
			// The cache's capacity in sequences, smoothed over scrapes
			// (a few running sequences say little about it).
			c := load.Running / u
			if l.capacity == 0 {
				l.capacity = c
			}
			l.capacity += 0.3 * (c - l.capacity)
		}
		if l.capacity > 0 {
			room = max(0, l.capacity-load.Running)
		}
	}
	excess := load.Waiting - room
	switch {
	case excess > target:
		l.limit -= 0.5 * (excess - target)
	case !l.limited():
	case load.KVUsage < 0 && load.Waiting == 0:
		l.limit += max(target, l.limit/2)
	default:
		l.limit += max(1, min(l.limit, target-excess))
	}
	l.peak = inflight
	l.clamp()
	return l.Limit() != before
}

// noMetrics makes the limit follow throughput (the server stopped
// answering its metrics, or has none), measured from now.
func (l *serverLimit) noMetrics(now time.Time) {
	if !l.metrics {
		return
	}
	l.metrics = false
	l.tp = throughputClimb{t0: now}
}

// success records a successful request of w sequences sent at start,
// after which inflight sequences are in flight, and reports whether the
// limit changed.
func (l *serverLimit) success(now, start time.Time, w, inflight int) bool {
	if l.metrics || w <= 0 {
		l.inFlight(now, inflight)
		return false
	}
	t := &l.tp
	if !t.measuring {
		if !start.Before(t.t0) {
			t.start(now)
			l.peak = 0
		}
		l.inFlight(now, inflight)
		return false
	}
	l.inFlight(now, inflight)
	t.seqs += w
	t.latSum += now.Sub(start).Seconds() * float64(w)
	t.latN += w
	el := now.Sub(t.m0).Seconds()
	lat := t.latSum / float64(t.latN)
	if t.seqs < max(64, int(l.limit/2)) || el < lat || el <= 0 {
		return false
	}
	if !t.settled {
		// The first measurement at a new limit is the transient between
		// the two limits: it is measured again.
		t.start(now)
		t.settled = true
		return false
	}
	before := l.Limit()
	// Little's law: throughput = mean in flight / mean latency, which
	// bursts of completions (a batch admitted together) do not bias as a
	// count of completions over a window would.
	l.decide(now, t.area/el/lat)
	return l.Limit() != before
}

// start starts a measurement at now.
func (t *throughputClimb) start(now time.Time) {
	t.measuring, t.m0, t.seqs, t.latSum, t.latN, t.area = true, now, 0, 0, 0, 0
}

// decide ends a throughput measurement of rate sequences/s at the
// current limit.
func (l *serverLimit) decide(now time.Time, rate float64) {
	t := &l.tp
	limited := l.limited()
	t.measuring, t.settled, t.t0 = false, false, now
	if !limited {
		// The pool did not fill the limit. While climbing, a rate no
		// better than the best means the sequences the pool did send were
		// already more than the server gains from: the climb stops, as
		// when a filled step gains nothing. Otherwise nothing is learned.
		if !t.holding && !t.probing && t.best > 0 && rate <= t.best*(1+l.cfg.Gain) {
			l.hold(now, rate)
		}
		return
	}
	switch {
	case t.probing:
		t.probing = false
		if rate > t.ref*(1+l.cfg.Gain) {
			t.holding, t.best, t.bestAt = false, rate, l.limit
			l.limit *= 1.5
		} else {
			l.limit = t.holdAt
			t.nextProbe = now.Add(l.cfg.ProbeInterval)
		}
	case t.holding:
		t.ref = rate
		if l.cfg.ProbeInterval > 0 && !now.Before(t.nextProbe) {
			t.probing, t.holdAt = true, l.limit
			l.limit *= 1.25
		}
	case t.best == 0 || rate > t.best*(1+l.cfg.Gain):
		factor := 1.5
		if t.slowStart && (t.best == 0 || rate >= 1.25*t.best) {
			factor = 2
		} else {
			t.slowStart = false
		}
		t.best, t.bestAt = rate, l.limit
		l.limit *= factor
	default:
		l.hold(now, rate)
	}
	l.clamp()
}

// hold ends the climb at the last limit that gained, times Headroom.
func (l *serverLimit) hold(now time.Time, rate float64) {
	t := &l.tp
	t.slowStart, t.holding, t.ref = false, true, rate
	l.limit = min(l.limit, t.bestAt*l.cfg.Headroom)
	t.nextProbe = now.Add(l.cfg.ProbeInterval)
	l.clamp()
}

// overload records a server error of a request sent at start and reports
// whether the limit changed.
func (l *serverLimit) overload(now, start time.Time) bool {
	if start.Before(l.lastDecrease) {
		return false
	}
	before := l.Limit()
	l.limit *= l.cfg.BackoffRatio
	l.lastDecrease = now
	l.tp = throughputClimb{t0: now}
	l.clamp()
	return l.Limit() != before
}

func (l *serverLimit) clamp() {
	l.limit = min(float64(l.cfg.Max), max(float64(l.cfg.Min), l.limit))
	if math.IsNaN(l.limit) {
		l.limit = float64(l.cfg.Min)
	}
}
