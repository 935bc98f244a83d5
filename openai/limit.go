package openai

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// LimitConfig configures the adaptive concurrency limit of each server of
// a Pool. The limit counts sequences (a request for n samples holds n), the
// unit a continuous-batching server (vLLM, SGLang, TGI) schedules.
//
// The algorithm is a gradient limit in the manner of Netflix's
// concurrency-limits (Gradient), over per-token latency:
//
//   - A request's latency sample is its duration divided by its response
//     length in tokens (the longest choice), so that short and long
//     responses compare; without token counts it is the duration.
//   - Samples are averaged over windows of max(4, limit/4) requests (about
//     four windows per round trip at the limit). The no-load latency is the
//     lowest window average since the last probe.
//   - Per window, gradient = clamp(Tolerance × no-load / window average,
//     0.5, 1) and the target is limit × gradient + √limit; the limit moves
//     Smoothing of the way to it. While the server runs everything it is
//     given at once its latency stays at the no-load level, the gradient
//     is 1 and the limit grows by √limit per window; past the server's
//     batch size N requests queue in the server, latency grows as
//     (in flight)/N and the limit settles near Tolerance × N + √limit: a
//     few sequences queued in the server, so that its batch never waits
//     on the client's round trip, and no more. The limit does not grow
//     while less than half of it is used (nothing was learned about it).
//   - Slow start: until the first window that shows queueing (or an
//     error), the limit grows by the sequences of every successful request, doubling
//     every round trip, so that a large server is found in a few round
//     trips.
//   - Errors of the server (5xx, timeouts, connection failures, 429)
//     multiply the limit by BackoffRatio, at most once per round trip
//     (only requests sent after the last decrease count).
//   - Every ProbeInterval the no-load latency is measured again, so that it
//     follows drift (longer prompts, another model): the limit is halved,
//     the no-load latency forgotten and the samples of requests sent
//     before the probe ignored; the limit then slow-starts back up to
//     where it was unless queueing shows first.
type LimitConfig struct {
	// Initial is a new server's limit, in sequences.
	Initial int `yaml:"initial"`
	// Min is the lowest limit.
	Min int `yaml:"min"`
	// Max is the highest limit.
	Max int `yaml:"max"`
	// Tolerance is the latency increase over the no-load latency taken as
	// noise rather than queueing (1.1: 10%).
	Tolerance float64 `yaml:"tolerance"`
	// Smoothing is the share of the way the limit moves to its target per
	// window, in (0, 1].
	Smoothing float64 `yaml:"smoothing"`
	// BackoffRatio multiplies the limit on a server error, in (0, 1).
	BackoffRatio float64 `yaml:"backoff_ratio"`
	// ProbeInterval is how often the no-load latency is measured again (0
	// = never).
	ProbeInterval time.Duration `yaml:"probe_interval"`
}

// DefaultLimitConfig starts at 8 sequences, within [1, 4096].
func DefaultLimitConfig() LimitConfig {
	return LimitConfig{Initial: 8, Min: 1, Max: 4096, Tolerance: 1.1, Smoothing: 0.2, BackoffRatio: 0.5,
		ProbeInterval: time.Minute}
}

// Validate checks the configuration.
func (c LimitConfig) Validate() error {
	var errs []error
	if c.Min < 1 || c.Initial < c.Min || c.Max < c.Initial {
		errs = append(errs, fmt.Errorf("limit: need 1 <= min (%d) <= initial (%d) <= max (%d)", c.Min, c.Initial, c.Max))
	}
	if !(c.Tolerance >= 1) {
		errs = append(errs, fmt.Errorf("limit: tolerance must be >= 1, got %v", c.Tolerance))
	}
	if !(c.Smoothing > 0 && c.Smoothing <= 1) {
		errs = append(errs, fmt.Errorf("limit: smoothing must be in (0, 1], got %v", c.Smoothing))
	}
	if !(c.BackoffRatio > 0 && c.BackoffRatio < 1) {
		errs = append(errs, fmt.Errorf("limit: backoff_ratio must be in (0, 1), got %v", c.BackoffRatio))
	}
	if c.ProbeInterval < 0 {
		errs = append(errs, fmt.Errorf("limit: probe_interval must be >= 0, got %s", c.ProbeInterval))
	}
	return errors.Join(errs...)
}

// gradientLimit is one server's adaptive limit (LimitConfig's algorithm).
// It is a plain state machine: the caller holds the lock and passes the
// clock.
type gradientLimit struct {
	cfg   LimitConfig
	limit float64
	// slowStart is on until queueing or an error shows; ssthresh, when
	// > 0, ends it at that limit (the limit before a probe).
	slowStart bool
	ssthresh  float64
	// noLoad is the lowest window average since the last probe (0 =
	// none yet).
	noLoad float64
	// The current window: samples, their sum, the most in flight seen.
	winN     int
	winSeqs  int
	winSum   float64
	winInMax int
	// lastDecrease: errors of requests sent before it do not decrease
	// the limit again. probeAt: samples of requests sent before it are
	// stale. nextProbe: when to probe next.
	lastDecrease, probeAt, nextProbe time.Time
}

func newGradientLimit(cfg LimitConfig, now time.Time) *gradientLimit {
	g := &gradientLimit{cfg: cfg, limit: float64(cfg.Initial), slowStart: true}
	if cfg.ProbeInterval > 0 {
		g.nextProbe = now.Add(cfg.ProbeInterval)
	}
	return g
}

// Limit is the current limit in whole sequences (at least Min).
func (g *gradientLimit) Limit() int { return max(g.cfg.Min, int(g.limit)) }

// restart starts over in slow start from Initial (a server back from the
// dead: its latency and capacity are unknown), up to at most its old limit.
func (g *gradientLimit) restart(now time.Time) {
	old := g.limit
	*g = *newGradientLimit(g.cfg, now)
	g.ssthresh = max(old, float64(g.cfg.Initial))
	g.probeAt = now
}

// inFlight records the number of sequences in flight after a request
// started.
func (g *gradientLimit) inFlight(n int) { g.winInMax = max(g.winInMax, n) }

// success records a successful request of w sequences sent at start, of
// latency rtt (seconds per token, or seconds), and reports whether the
// limit changed.
func (g *gradientLimit) success(now, start time.Time, rtt float64, w int) bool {
	before := g.Limit()
	if !g.nextProbe.IsZero() && !now.Before(g.nextProbe) {
		g.probe(now)
		return g.Limit() != before
	}
	if start.Before(g.probeAt) || !(rtt > 0) || math.IsInf(rtt, 0) {
		return false
	}
	g.winN++
	g.winSeqs += max(w, 1)
	g.winSum += rtt
	if g.winN < max(4, int(g.limit/4)) {
		return false
	}
	avg, seqs, inMax := g.winSum/float64(g.winN), g.winSeqs, g.winInMax
	g.winN, g.winSeqs, g.winSum, g.winInMax = 0, 0, 0, 0
	if g.noLoad == 0 || avg < g.noLoad {
		g.noLoad = avg
	}
	grad := min(1, max(0.5, g.cfg.Tolerance*g.noLoad/avg))
	appLimited := float64(inMax) < g.limit/2
	switch {
	case grad < 1:
		g.slowStart, g.ssthresh = false, 0
		g.move(g.limit*grad + math.Sqrt(g.limit))
	case appLimited:
	case g.slowStart:
		g.limit += float64(seqs)
		if g.ssthresh > 0 && g.limit >= g.ssthresh {
			g.limit, g.slowStart, g.ssthresh = g.ssthresh, false, 0
		}
	default:
		g.move(g.limit + math.Sqrt(g.limit))
	}
	g.clamp()
	return g.Limit() != before
}

// overload records a server error of a request sent at start and reports
// whether the limit changed.
func (g *gradientLimit) overload(now, start time.Time) bool {
	if start.Before(g.lastDecrease) {
		return false
	}
	before := g.Limit()
	g.slowStart, g.ssthresh = false, 0
	g.limit *= g.cfg.BackoffRatio
	g.lastDecrease = now
	g.clamp()
	return g.Limit() != before
}

// probe halves the limit and forgets the no-load latency; the limit then
// slow-starts back to where it was.
func (g *gradientLimit) probe(now time.Time) {
	g.ssthresh = g.limit
	g.slowStart = true
	g.limit /= 2
	g.noLoad = 0
	g.winN, g.winSeqs, g.winSum, g.winInMax = 0, 0, 0, 0
	g.probeAt = now
	g.nextProbe = now.Add(g.cfg.ProbeInterval)
	g.clamp()
}

func (g *gradientLimit) move(target float64) {
	g.limit += g.cfg.Smoothing * (target - g.limit)
}

func (g *gradientLimit) clamp() {
	g.limit = min(float64(g.cfg.Max), max(float64(g.cfg.Min), g.limit))
}
