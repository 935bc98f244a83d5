package openaitest

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"
)

// FaultKind is a failure the proxy injects instead of forwarding a request.
type FaultKind int

const (
	// Status500 answers HTTP 500 with an OpenAI-style error body.
	Status500 FaultKind = iota + 1
	// Status429 answers HTTP 429 with the fault's Retry-After.
	Status429
	// Reset closes the client connection with a TCP reset.
	Reset
	// Stall holds the request without answering for the fault's Delay (or
	// until the client gives up), then resets the connection.
	Stall
	// Pass forwards the request: a queue entry that lets one through.
	Pass
)

// Fault is one injected failure.
type Fault struct {
	Kind FaultKind
	// RetryAfter is sent with Status429 as delay-seconds.
	RetryAfter time.Duration
	// Delay is how long Stall holds the request.
	Delay time.Duration
}

// FaultProxy is a reverse proxy in front of a real server. Queued faults
// are applied to the next requests in order; while the proxy is down every
// request is reset. Requests reaching the proxy are counted.
type FaultProxy struct {
	// URL is the proxy's root; append the target's path (e.g. "/v1").
	URL string

	mu        sync.Mutex
	queue     []Fault
	down      bool
	requests  int
	forwarded int
	active    int
	maxActive int
	srv       *httptest.Server
	closing   chan struct{}
}

// NewFaultProxy starts a proxy to target (scheme://host:port); it is closed
// when the test ends.
func NewFaultProxy(t testing.TB, target string) *FaultProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = ""
	p := &FaultProxy{closing: make(chan struct{})}
	rp := httputil.NewSingleHostReverseProxy(u)
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer p.leave()
		f, ok := p.next()
		if !ok || f.Kind == Pass {
			p.mu.Lock()
			p.forwarded++
			p.mu.Unlock()
			rp.ServeHTTP(w, r)
			return
		}
		switch f.Kind {
		case Status500:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`{"error":{"message":"injected internal error","type":"server_error"}}`))
		case Status429:
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", strconv.FormatFloat(f.RetryAfter.Seconds(), 'f', -1, 64))
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"error":{"message":"injected rate limit","type":"rate_limit_error"}}`))
		case Stall:
			select {
			case <-r.Context().Done():
			case <-time.After(f.Delay):
			case <-p.closing:
			}
			reset(w)
		default:
			reset(w)
		}
	}))
	t.Cleanup(func() {
		close(p.closing)
		p.srv.Close()
	})
	p.URL = p.srv.URL
	return p
}

func (p *FaultProxy) next() (Fault, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests++
	p.active++
	p.maxActive = max(p.maxActive, p.active)
	if p.down {
		return Fault{Kind: Reset}, true
	}
	if len(p.queue) == 0 {
		return Fault{}, false
	}
	f := p.queue[0]
	p.queue = p.queue[1:]
	return f, true
}

func (p *FaultProxy) leave() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.active--
}

// MaxConcurrent is the largest number of requests the proxy held at once.
func (p *FaultProxy) MaxConcurrent() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.maxActive
}

// Inject queues faults for the next requests.
func (p *FaultProxy) Inject(fs ...Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.queue = append(p.queue, fs...)
}

// SetDown starts (true) or ends (false) an outage: every request is reset.
func (p *FaultProxy) SetDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
}

// Requests is the number of requests that reached the proxy.
func (p *FaultProxy) Requests() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.requests
}

// Forwarded is the number of requests passed to the server.
func (p *FaultProxy) Forwarded() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.forwarded
}

// Pending is the number of queued faults not yet applied.
func (p *FaultProxy) Pending() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.queue)
}

// reset aborts the connection with a TCP RST.
func reset(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}
