package openai

import (
	"slices"
	"strings"
)

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
	// LimitMode is what the limit follows: "metrics" (the server's
	// running and waiting sequences, Load) or "throughput".
	LimitMode string
	Load      *ServerLoad
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
	st := ServerStatus{URL: s.url, Healthy: s.healthy, Removed: s.removed, InFlight: s.inflight, Limit: s.lim.Limit(), LimitMode: s.lim.Mode(),
		Requests: s.stats.requests, Errors: map[ErrorKind]uint64{}, Routed: map[string]uint64{}}
	if s.loaded {
		load := s.load
		st.Load = &load
	}
	for k, v := range s.stats.errors {
		st.Errors[k] = v
	}
	for k, v := range s.stats.routed {
		st.Routed[k] = v
	}
	return st
}
