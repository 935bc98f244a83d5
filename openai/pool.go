package openai

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// Pool spreads requests over several OpenAI-compatible servers serving
// one model and keeps each as busy as it can take:
//
//   - Every server has an adaptive concurrency limit in sequences
//     (LimitConfig: it keeps a small queue waiting on the server, read
//     from the server's metrics, or climbs its throughput where it has
//     none); a request for n samples holds n of it. Requests beyond every server's limit
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
//   - Preparation (SetPrepare): a server added, recovered after a health
//     check, or that answered that it does not have the requested model
//     (KindModelNotFound: the request fails over to another server) gets
//     no requests until the PrepareFunc succeeded on it (loading the
//     models it must serve).
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

	// prepare, when set (SetPrepare), runs before a server takes traffic.
	prepare PrepareFunc

	capMu sync.Mutex
	onCap []func(seqs int, meanWeight float64)
	capCh chan struct{}

	done chan struct{}
	wg   sync.WaitGroup
}

// poolServer is one server of a Pool; its fields are guarded by Pool.mu.
type poolServer struct {
	url    string
	client *Client
	lim    *serverLimit
	// load is the server's last scrape of its metrics (loaded: one
	// succeeded since the last failure); scraping: its loop runs.
	load             ServerLoad
	loaded, scraping bool
	inflight         int
	healthy          bool
	removed          bool
	fails            int           // consecutive failures
	backoff          time.Duration // the wait before the next health check
	checking         bool          // a health loop runs
	// prepared: the pool's PrepareFunc succeeded since the server was
	// added, recovered or found without a model; preparing: it runs.
	prepared, preparing bool
	// missing are models the server answered it does not have, for the
	// next preparation.
	missing map[string]bool
	// holds counts Hold calls not released (no requests meanwhile); tag
	// is the server's tag (SetTag), copied to the choices it answers.
	holds   int
	tag     int64
	stats   serverStats
	latency *latencyHistogram
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
