package openai

import (
	"context"
	"errors"
	"hash/fnv"
	"math"
	"slices"
)

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

func (s *poolServer) routable() bool { return s.healthy && !s.removed && s.prepared && s.holds == 0 }

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
	s.lim.inFlight(p.now(), s.inflight)
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
