package openai

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"math"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v5"
)

// Pool spreads requests over several OpenAI-compatible servers serving
// one model and keeps each as busy as it can take:
//
//   - Every server has an adaptive concurrency limit in sequences
//     (LimitConfig: a gradient limit over per-token latency); a request
//     for n samples holds n of it. Requests beyond every server's limit
//     wait in the pool, first come first served.
//   - Affinity: a request carries a key (WithAffinity: generate passes
//     the tree id, so a tree's root group and its refinements share the
//     server's prefix cache). It goes to the server that rendezvous
//     (highest-random-weight) hashing of the key ranks first among the
//     healthy servers, unless that server is at its limit: then to the
//     healthy server with the most room. A waiting request is granted its
//     own server when that frees first; a server that frees while no
//     waiting request prefers it takes the oldest one. Adding or removing
//     a server moves only the keys that rank it first.
//   - Failures: 5xx, timeouts, connection failures and undecodable
//     answers shrink the server's limit (429 too) and are retried at once
//     on another server (on the same one, after the client's backoff, when
//     no other is healthy), up to Config.MaxRetries retries; only the
//     samples still missing are asked again. After
//     PoolConfig.UnhealthyAfter consecutive failures the server gets no
//     requests until a health check (PoolConfig.HealthPath) passes, checked
//     with exponential backoff; it then slow-starts from the initial limit.
//   - Servers are added and removed at run time (SetServers, or
//     PoolConfig.ServersFile, polled). A removed server's requests in
//     flight finish there.
//
// Every server has its own Client (Config with its BaseURL, no retries of
// its own). The pool's metrics (Collector) give per-server in-flight
// sequences, limit, health, latency, errors by kind and routing.
type Pool struct {
	pc   PoolConfig
	cc   Config
	opts []Option
	now  func() time.Time

	mu       sync.Mutex
	servers  map[string]*poolServer
	static   []string
	fromFile []string
	waiters  []*poolWaiter
	meanW    float64 // mean sequences per request (exponential)
	closed   bool
	fallback *Client

	capMu sync.Mutex
	onCap []func(seqs int, meanWeight float64)
	capCh chan struct{}

	done chan struct{}
	wg   sync.WaitGroup
}

// poolServer is one server of a Pool; its fields are guarded by Pool.mu.
type poolServer struct {
	url      string
	client   *Client
	lim      *gradientLimit
	inflight int
	healthy  bool
	removed  bool
	fails    int           // consecutive failures
	backoff  time.Duration // the wait before the next health check
	checking bool          // a health loop runs
	stats    serverStats
	latency  *latencyHistogram
}

// serverStats are a server's cumulative counts.
type serverStats struct {
	requests uint64
	errors   map[ErrorKind]uint64
	routed   map[string]uint64 // affinity, spill, any
}

type poolWaiter struct {
	key   string
	w     int
	tried map[*poolServer]bool
	ch    chan struct{}
	srv   *poolServer
	err   error
}

type affinityKey struct{}

// WithAffinity returns ctx carrying the affinity key of the Pool requests
// made with it: requests with one key go to one server while it has room.
func WithAffinity(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, affinityKey{}, key)
}

// Affinity is ctx's affinity key ("" = none).
func Affinity(ctx context.Context) string {
	k, _ := ctx.Value(affinityKey{}).(string)
	return k
}

// errNoServer is returned when no server of the pool is healthy.
var errNoServer = &Error{Kind: KindConnection, Message: "no healthy server in the pool"}

// NewPool validates the configurations and starts a pool over pc's
// servers; opts are passed to every server's Client (e.g. WithObserver).
// Close stops it.
func NewPool(pc PoolConfig, cc Config, opts ...Option) (*Pool, error) {
	if err := pc.Validate(); err != nil {
		return nil, err
	}
	if err := cc.Validate(); err != nil {
		return nil, err
	}
	if !pc.Enabled() {
		return nil, errors.New("openai pool: no servers and no servers_file")
	}
	p := &Pool{pc: pc, cc: cc, opts: opts, now: time.Now, servers: map[string]*poolServer{},
		static: pc.Servers, capCh: make(chan struct{}, 1), done: make(chan struct{})}
	fb, err := New(cc, opts...)
	if err != nil {
		return nil, err
	}
	p.fallback = fb
	var fileInfo os.FileInfo
	if pc.ServersFile != "" {
		if fileInfo, err = os.Stat(pc.ServersFile); err == nil {
			p.fromFile, err = readServersFile(pc.ServersFile)
		}
		if err != nil {
			return nil, fmt.Errorf("openai pool: servers_file: %w", err)
		}
	}
	if err := p.apply(); err != nil {
		return nil, err
	}
	p.wg.Add(1)
	go p.notifyLoop()
	if pc.ServersFile != "" {
		p.wg.Add(1)
		go p.watchFile(fileInfo)
	}
	return p, nil
}

// Close stops the pool's goroutines; requests in flight finish.
func (p *Pool) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	for _, w := range p.waiters {
		w.err = errors.New("openai pool: closed")
		close(w.ch)
	}
	p.waiters = nil
	p.mu.Unlock()
	close(p.done)
	p.wg.Wait()
}

// SetServers replaces the static server list (PoolConfig.Servers); the
// servers file's, if any, are kept.
func (p *Pool) SetServers(urls []string) error {
	for _, u := range urls {
		if err := checkServerURL(u); err != nil {
			return err
		}
	}
	p.mu.Lock()
	p.static = slices.Clone(urls)
	p.mu.Unlock()
	return p.apply()
}

// apply makes the pool's servers the union of the static and file lists.
func (p *Pool) apply() error {
	p.mu.Lock()
	want := map[string]bool{}
	for _, u := range append(slices.Clone(p.static), p.fromFile...) {
		want[normURL(u)] = true
	}
	for u := range want {
		if s, ok := p.servers[u]; ok {
			s.removed = false
			continue
		}
		cc := p.cc
		cc.BaseURL, cc.MaxRetries = u, 0
		cc.MaxInFlight = max(cc.MaxInFlight, p.pc.Limit.Max)
		c, err := New(cc, p.opts...)
		if err != nil {
			p.mu.Unlock()
			return fmt.Errorf("openai pool: server %s: %w", u, err)
		}
		p.servers[u] = &poolServer{url: u, client: c, lim: newGradientLimit(p.pc.Limit, p.now()), healthy: true,
			stats: serverStats{errors: map[ErrorKind]uint64{}, routed: map[string]uint64{}}, latency: newLatencyHistogram()}
	}
	for u, s := range p.servers {
		if !want[u] {
			s.removed = true
			p.dropIfIdleLocked(s)
		}
	}
	p.dispatchLocked()
	p.failWaitersIfNoneLocked()
	p.mu.Unlock()
	p.notifyCapacity()
	return nil
}

func normURL(u string) string { return strings.TrimRight(strings.TrimSpace(u), "/") }

func (p *Pool) dropIfIdleLocked(s *poolServer) {
	if s.removed && s.inflight == 0 && p.servers[s.url] == s {
		delete(p.servers, s.url)
		if t, ok := s.client.http.Transport.(interface{ CloseIdleConnections() }); ok {
			t.CloseIdleConnections()
		}
	}
}

// watchFile polls the servers file every ServersFileInterval and applies
// it when its modification time or size changed. A file that cannot be
// read keeps the servers as they are.
func (p *Pool) watchFile(last os.FileInfo) {
	defer p.wg.Done()
	t := time.NewTicker(p.pc.ServersFileInterval)
	defer t.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-t.C:
		}
		fi, err := os.Stat(p.pc.ServersFile)
		if err != nil {
			slog.Warn("openai pool: servers file", "path", p.pc.ServersFile, "err", err)
			continue
		}
		if last != nil && fi.ModTime().Equal(last.ModTime()) && fi.Size() == last.Size() {
			continue
		}
		urls, err := readServersFile(p.pc.ServersFile)
		if err != nil {
			slog.Warn("openai pool: servers file", "path", p.pc.ServersFile, "err", err)
			if urls == nil {
				continue
			}
		}
		last = fi
		p.mu.Lock()
		p.fromFile = urls
		p.mu.Unlock()
		if err := p.apply(); err != nil {
			slog.Warn("openai pool: servers file", "path", p.pc.ServersFile, "err", err)
		}
	}
}

// Chat samples req.N chat completions on the pool (see Client.Chat); the
// affinity key is ctx's (WithAffinity).
func (p *Pool) Chat(ctx context.Context, req ChatRequest) (*Result, error) {
	if len(req.Messages) == 0 {
		return nil, &Error{Kind: KindBadRequest, Message: "no messages"}
	}
	return p.sample(ctx, req.Sampling, func(ctx context.Context, c *Client, s Sampling) (*Result, error) {
		r := req
		r.Sampling = s
		return c.Chat(ctx, r)
	})
}

// Complete samples req.N completions on the pool (see Client.Complete).
func (p *Pool) Complete(ctx context.Context, req CompletionRequest) (*Result, error) {
	return p.sample(ctx, req.Sampling, func(ctx context.Context, c *Client, s Sampling) (*Result, error) {
		r := req
		r.Sampling = s
		return c.Complete(ctx, r)
	})
}

// Tokenize tokenizes text on the server of ctx's affinity key (it holds
// no share of the server's limit).
func (p *Pool) Tokenize(ctx context.Context, text string) ([]int32, error) {
	var ids []int32
	_, err := p.sample(ctx, Sampling{}, func(ctx context.Context, c *Client, _ Sampling) (*Result, error) {
		var err error
		ids, err = c.Tokenize(ctx, text)
		if err != nil {
			return nil, err
		}
		return &Result{}, nil
	}, withWeight(0))
	return ids, err
}

type sampleOpt func(*sampleOpts)

type sampleOpts struct{ weight int }

func withWeight(w int) sampleOpt { return func(o *sampleOpts) { o.weight = w } }

// sample runs op on the pool's servers until it has s.N choices, a
// non-retriable error, or its retries are spent.
func (p *Pool) sample(ctx context.Context, s Sampling, op func(context.Context, *Client, Sampling) (*Result, error), opts ...sampleOpt) (*Result, error) {
	o := sampleOpts{weight: -1}
	for _, f := range opts {
		f(&o)
	}
	n := max(s.N, 1)
	key := Affinity(ctx)
	out := &Result{}
	tried := map[*poolServer]bool{}
	var delays *backoff.ExponentialBackOff
	var lastErr error
	for attempt := 0; ; attempt++ {
		got := len(out.Choices)
		sub := s
		sub.N = n - got
		if s.Seed != nil && got > 0 {
			v := *s.Seed + int64(got)
			sub.Seed = &v
		}
		w := sub.N
		if o.weight >= 0 {
			w = o.weight
		}
		srv, err := p.acquire(ctx, key, w, tried)
		if err != nil {
			if ctx.Err() != nil || !errors.Is(err, errNoServer) {
				return out, err
			}
			lastErr = err
		} else {
			start := p.now()
			res, err := op(ctx, srv.client, sub)
			p.release(ctx, srv, w, start, res, err)
			merge(out, res, got)
			if err == nil && len(out.Choices) >= n || err == nil && o.weight == 0 {
				return out, nil
			}
			if err == nil {
				err = &Error{Kind: KindDecode, Message: "server returned no choices"}
			}
			var e *Error
			if ctx.Err() != nil || !errors.As(err, &e) || !e.Retriable() {
				return out, err
			}
			tried[srv] = true
			lastErr = err
		}
		if attempt >= p.cc.MaxRetries {
			return out, lastErr
		}
		if p.hasUntried(tried) {
			continue
		}
		if delays == nil {
			delays = newPoolBackOff(p.cc)
		}
		wait := delays.NextBackOff()
		var e *Error
		if errors.As(lastErr, &e) && e.RetryAfter > 0 {
			wait = min(e.RetryAfter, p.cc.MaxRetryAfter) + time.Millisecond
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return out, fmt.Errorf("openai pool: waiting to retry after %v: %w", lastErr, ctx.Err())
		case <-t.C:
		}
	}
}

func newPoolBackOff(cc Config) *backoff.ExponentialBackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxInterval = cc.BackoffInitial, cc.BackoffMax
	b.Multiplier, b.RandomizationFactor = 2, 0.5
	return b
}

// merge adds the choices of res (a request for the samples from index
// offset on) to out.
func merge(out, res *Result, offset int) {
	if res == nil {
		return
	}
	if out.Model == "" {
		out.Model = res.Model
	}
	if out.PromptTokenIDs == nil {
		out.PromptTokenIDs = res.PromptTokenIDs
	}
	out.Usage.PromptTokens += res.Usage.PromptTokens
	out.Usage.CompletionTokens += res.Usage.CompletionTokens
	out.Requests += max(res.Requests, 1)
	out.Attempts += res.Attempts
	for _, c := range res.Choices {
		c.Index = offset + c.Index
		out.Choices = append(out.Choices, c)
	}
	sortChoices(out.Choices)
	for i := range out.Choices {
		out.Choices[i].Index = i
	}
}

// hasUntried says whether a healthy server not in tried exists.
func (p *Pool) hasUntried(tried map[*poolServer]bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.servers {
		if s.routable() && !tried[s] {
			return true
		}
	}
	return false
}

func (s *poolServer) routable() bool { return s.healthy && !s.removed }

// fits says whether w more sequences fit s's limit (a request larger than
// the limit goes alone).
func (s *poolServer) fits(w int) bool { return s.inflight == 0 || s.inflight+w <= s.lim.Limit() }

// acquire waits for a server for a request of w sequences.
func (p *Pool) acquire(ctx context.Context, key string, w int, tried map[*poolServer]bool) (*poolServer, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errors.New("openai pool: closed")
	}
	if !p.anyRoutableLocked() {
		p.mu.Unlock()
		return nil, errNoServer
	}
	if w > 0 {
		if p.meanW == 0 {
			p.meanW = float64(w)
		} else {
			p.meanW += 0.05 * (float64(w) - p.meanW)
		}
	}
	wt := &poolWaiter{key: key, w: w, tried: tried, ch: make(chan struct{})}
	p.waiters = append(p.waiters, wt)
	p.dispatchLocked()
	p.mu.Unlock()
	select {
	case <-wt.ch:
		return wt.srv, wt.err
	case <-ctx.Done():
		p.mu.Lock()
		if i := slices.Index(p.waiters, wt); i >= 0 {
			p.waiters = slices.Delete(p.waiters, i, i+1)
			p.mu.Unlock()
			return nil, ctx.Err()
		}
		p.mu.Unlock()
		<-wt.ch
		if wt.srv != nil {
			p.release(ctx, wt.srv, w, p.now(), nil, ctx.Err())
		}
		return nil, ctx.Err()
	}
}

func (p *Pool) anyRoutableLocked() bool {
	for _, s := range p.servers {
		if s.routable() {
			return true
		}
	}
	return false
}

// candidatesLocked are the servers wt may go to: the healthy ones it has
// not tried, or every healthy one when it tried them all.
func (p *Pool) candidatesLocked(wt *poolWaiter) []*poolServer {
	var c, all []*poolServer
	for _, s := range p.servers {
		if !s.routable() {
			continue
		}
		all = append(all, s)
		if !wt.tried[s] {
			c = append(c, s)
		}
	}
	if len(c) == 0 {
		return all
	}
	return c
}

// rendezvous is the highest-random-weight score of server url for key.
func rendezvous(key, url string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	h.Write([]byte{0})
	h.Write([]byte(url))
	x := h.Sum64()
	// splitmix64's finaliser: FNV's low bits mix poorly.
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

func preferred(key string, cands []*poolServer) *poolServer {
	var best *poolServer
	var bestScore uint64
	for _, s := range cands {
		if sc := rendezvous(key, s.url); best == nil || sc > bestScore || sc == bestScore && s.url < best.url {
			best, bestScore = s, sc
		}
	}
	return best
}

func leastLoaded(w int, cands []*poolServer) *poolServer {
	var best *poolServer
	bestLoad := math.Inf(1)
	for _, s := range cands {
		if !s.fits(w) {
			continue
		}
		if l := float64(s.inflight+w) / float64(s.lim.Limit()); l < bestLoad || l == bestLoad && s.url < best.url {
			best, bestLoad = s, l
		}
	}
	return best
}

// dispatchLocked grants waiting requests what the servers' limits allow:
// each waiter its preferred server when that has room, else the oldest
// waiter the server with the most room.
func (p *Pool) dispatchLocked() {
	for len(p.waiters) > 0 {
		granted := false
		for i := 0; i < len(p.waiters); {
			wt := p.waiters[i]
			cands := p.candidatesLocked(wt)
			if wt.key != "" {
				if s := preferred(wt.key, cands); s != nil && s.fits(wt.w) {
					p.grantLocked(i, s, "affinity")
					granted = true
					continue
				}
			} else if s := leastLoaded(wt.w, cands); s != nil {
				p.grantLocked(i, s, "any")
				granted = true
				continue
			}
			i++
		}
		if len(p.waiters) > 0 {
			wt := p.waiters[0]
			if s := leastLoaded(wt.w, p.candidatesLocked(wt)); s != nil {
				p.grantLocked(0, s, "spill")
				granted = true
			}
		}
		if !granted {
			return
		}
	}
}

func (p *Pool) grantLocked(i int, s *poolServer, how string) {
	wt := p.waiters[i]
	p.waiters = slices.Delete(p.waiters, i, i+1)
	s.inflight += wt.w
	s.lim.inFlight(s.inflight)
	s.stats.routed[how]++
	wt.srv = s
	close(wt.ch)
}

// failWaitersIfNoneLocked fails the waiting requests when no server is
// healthy (they retry after a backoff, or fail).
func (p *Pool) failWaitersIfNoneLocked() {
	if len(p.waiters) == 0 || p.anyRoutableLocked() {
		return
	}
	for _, w := range p.waiters {
		w.err = errNoServer
		close(w.ch)
	}
	p.waiters = nil
}

// release returns a request's w sequences to s and learns from its
// outcome: latency, errors, health.
func (p *Pool) release(ctx context.Context, s *poolServer, w int, start time.Time, res *Result, err error) {
	now := p.now()
	d := now.Sub(start)
	changed := false
	p.mu.Lock()
	s.inflight -= w
	var e *Error
	isErr := errors.As(err, &e)
	switch {
	case err == nil:
		s.stats.requests++
		s.latency.observe(d.Seconds())
		s.fails, s.backoff = 0, 0
		if w > 0 {
			changed = s.lim.success(now, start, perToken(d, res), w)
		}
	case ctx.Err() != nil || !isErr:
		// Given up by the caller: nothing learned.
	default:
		s.stats.requests++
		s.stats.errors[e.Kind]++
		s.latency.observe(d.Seconds())
		switch e.Kind {
		case KindServer, KindConnection, KindTimeout, KindDecode:
			changed = s.lim.overload(now, start) || changed
			s.fails++
			if s.fails >= p.pc.UnhealthyAfter && s.healthy {
				p.markDownLocked(s)
				changed = true
			}
		case KindRateLimited:
			changed = s.lim.overload(now, start)
		default:
			s.fails = 0 // it answered
		}
	}
	p.dropIfIdleLocked(s)
	p.dispatchLocked()
	p.mu.Unlock()
	if changed {
		p.notifyCapacity()
	}
}

// perToken is a request's latency sample: seconds per token of its
// longest choice, or seconds without token counts.
func perToken(d time.Duration, res *Result) float64 {
	tokens := 0
	if res != nil {
		for _, c := range res.Choices {
			tokens = max(tokens, len(c.TokenIDs))
		}
		if tokens == 0 && len(res.Choices) > 0 && res.Usage.CompletionTokens > 0 {
			tokens = (res.Usage.CompletionTokens + len(res.Choices) - 1) / len(res.Choices)
		}
	}
	return d.Seconds() / float64(max(tokens, 1))
}

// markDownLocked takes s out of rotation and starts its health checks.
func (p *Pool) markDownLocked(s *poolServer) {
	s.healthy = false
	if s.backoff == 0 {
		s.backoff = p.pc.HealthBackoffInitial
	}
	if !s.checking && !p.closed {
		s.checking = true
		p.wg.Add(1)
		go p.healthLoop(s)
	}
	p.failWaitersIfNoneLocked()
}

// healthLoop checks an unhealthy server after its backoff, doubling the
// backoff per failed check, until it passes (or the server is removed).
func (p *Pool) healthLoop(s *poolServer) {
	defer p.wg.Done()
	for {
		p.mu.Lock()
		wait := s.backoff
		p.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-p.done:
			t.Stop()
			return
		case <-t.C:
		}
		p.mu.Lock()
		if s.removed {
			s.checking = false
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		err := p.check(s)
		p.mu.Lock()
		if err == nil {
			s.healthy, s.checking = true, false
			s.fails = 0
			if p.pc.HealthPath == "" {
				s.fails = p.pc.UnhealthyAfter - 1 // one more failure and it is out again
			}
			s.backoff = min(2*s.backoff, p.pc.HealthBackoffMax)
			s.lim.restart(p.now())
			p.dispatchLocked()
			p.mu.Unlock()
			p.notifyCapacity()
			return
		}
		s.backoff = min(2*s.backoff, p.pc.HealthBackoffMax)
		p.mu.Unlock()
	}
}

// check GETs s's health endpoint.
func (p *Pool) check(s *poolServer) error {
	if p.pc.HealthPath == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), min(p.cc.Timeout, 5*time.Second))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+p.pc.HealthPath, nil)
	if err != nil {
		return err
	}
	if p.cc.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+p.cc.APIKey)
	}
	for k, v := range p.cc.Headers {
		req.Header.Set(k, v)
	}
	resp, err := s.client.http.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("health check: HTTP %d", resp.StatusCode)
	}
	return nil
}

// OnCapacity registers f, called (from one goroutine, coalesced) after the
// pool's capacity may have changed, with Capacity and MeanWeight.
func (p *Pool) OnCapacity(f func(seqs int, meanWeight float64)) {
	p.capMu.Lock()
	p.onCap = append(p.onCap, f)
	p.capMu.Unlock()
	p.notifyCapacity()
}

func (p *Pool) notifyCapacity() {
	select {
	case p.capCh <- struct{}{}:
	default:
	}
}

func (p *Pool) notifyLoop() {
	defer p.wg.Done()
	for {
		select {
		case <-p.done:
			return
		case <-p.capCh:
		}
		seqs, mw := p.Capacity(), p.MeanWeight()
		p.capMu.Lock()
		fs := slices.Clone(p.onCap)
		p.capMu.Unlock()
		for _, f := range fs {
			f(seqs, mw)
		}
	}
}

// Capacity is the sum of the healthy servers' limits, in sequences.
func (p *Pool) Capacity() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, s := range p.servers {
		if s.routable() {
			n += s.lim.Limit()
		}
	}
	return n
}

// MeanWeight is the mean number of sequences per request so far (0 before
// the first).
func (p *Pool) MeanWeight() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.meanW
}

// Primary is one server's client (the first healthy one by URL; the client
// of Config.BaseURL when the pool has no server), for what does not go
// through the pool.
func (p *Pool) Primary() *Client {
	p.mu.Lock()
	defer p.mu.Unlock()
	var best *poolServer
	for _, s := range p.servers {
		if best == nil || s.routable() && !best.routable() || s.routable() == best.routable() && s.url < best.url {
			best = s
		}
	}
	if best == nil {
		return p.fallback
	}
	return best.client
}

// ServerStatus is one server's state.
type ServerStatus struct {
	URL      string
	Healthy  bool
	Removed  bool
	InFlight int
	Limit    int
	// Requests counts requests answered (errors included); Errors counts
	// them by kind.
	Requests uint64
	Errors   map[ErrorKind]uint64
	// Routed counts requests sent by how the server was chosen: affinity
	// (the key's server), spill (it had room, the key's server did not),
	// any (no key).
	Routed map[string]uint64
}

// Servers is the state of every server, by URL.
func (p *Pool) Servers() []ServerStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]ServerStatus, 0, len(p.servers))
	for _, s := range p.servers {
		out = append(out, s.status())
	}
	slices.SortFunc(out, func(a, b ServerStatus) int { return strings.Compare(a.URL, b.URL) })
	return out
}

func (s *poolServer) status() ServerStatus {
	st := ServerStatus{URL: s.url, Healthy: s.healthy, Removed: s.removed, InFlight: s.inflight, Limit: s.lim.Limit(),
		Requests: s.stats.requests, Errors: map[ErrorKind]uint64{}, Routed: map[string]uint64{}}
	for k, v := range s.stats.errors {
		st.Errors[k] = v
	}
	for k, v := range s.stats.routed {
		st.Routed[k] = v
	}
	return st
}
