package openai

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"
)

// PrepareFunc readies the server at API root root before it takes
// traffic: the generate stage loads the policy versions it serves (and
// missing, the models the server answered it does not have). An error
// keeps the server out of rotation; it is tried again with the health
// backoff.
type PrepareFunc func(ctx context.Context, root string, missing []string) error

// SetPrepare sets the pool's PrepareFunc: every server, those there now
// included, gets requests only once it succeeded on it (nil: none).
func (p *Pool) SetPrepare(f PrepareFunc) {
	p.mu.Lock()
	p.prepare = f
	for _, s := range p.servers {
		s.prepared = f == nil
		p.startPrepareLocked(s)
	}
	p.failWaitersIfNoneLocked()
	p.dispatchLocked()
	p.mu.Unlock()
	p.notifyCapacity()
}

// Prepare runs the PrepareFunc on every server again (the generate stage
// calls it before it serves a new version) and returns the errors by
// server and the number of servers tried. The servers stay in rotation
// meanwhile; when some succeeded, those that failed are taken out until
// their preparation succeeds (when all failed, none is: they serve what
// they were prepared with).
func (p *Pool) Prepare(ctx context.Context) (map[string]error, int) {
	p.mu.Lock()
	f := p.prepare
	var servers []*poolServer
	for _, s := range p.servers {
		if !s.removed {
			servers = append(servers, s)
		}
	}
	p.mu.Unlock()
	out := map[string]error{}
	if f == nil {
		return out, len(servers)
	}
	var failed []*poolServer
	for _, s := range servers {
		if err := f(ctx, s.url, nil); err != nil {
			out[s.url] = err
			failed = append(failed, s)
		}
	}
	if len(failed) == 0 || len(failed) == len(servers) || ctx.Err() != nil {
		return out, len(servers)
	}
	p.mu.Lock()
	for _, s := range failed {
		if s.prepared {
			s.prepared = false
			p.startPrepareLocked(s)
		}
	}
	p.failWaitersIfNoneLocked()
	p.mu.Unlock()
	p.notifyCapacity()
	return out, len(servers)
}

// modelMissing takes s out of rotation after it answered that it does not
// have model, and prepares it again with that model.
func (p *Pool) modelMissing(s *poolServer, model string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.prepare == nil {
		return
	}
	if s.missing == nil {
		s.missing = map[string]bool{}
	}
	if model != "" {
		s.missing[model] = true
	}
	if s.prepared {
		s.prepared = false
		p.startPrepareLocked(s)
		p.failWaitersIfNoneLocked()
	}
}

// startPrepareLocked starts the preparation of s unless it is prepared or
// being prepared.
func (p *Pool) startPrepareLocked(s *poolServer) {
	if s.prepared || s.preparing || p.prepare == nil || p.closed {
		return
	}
	s.preparing = true
	p.wg.Add(1)
	go p.prepareLoop(s)
}

// prepareLoop runs the PrepareFunc on s until it succeeds (or s is
// removed, or the pool closes), waiting the health backoff between tries.
func (p *Pool) prepareLoop(s *poolServer) {
	defer p.wg.Done()
	wait := p.pc.HealthBackoffInitial
	for {
		p.mu.Lock()
		f, missing := p.prepare, slices.Sorted(maps.Keys(s.missing))
		if s.removed || f == nil {
			s.preparing = false
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		go func() {
			select {
			case <-p.done:
				cancel()
			case <-ctx.Done():
			}
		}()
		err := f(ctx, s.url, missing)
		cancel()
		p.mu.Lock()
		if err == nil {
			s.prepared, s.preparing = true, false
			for _, m := range missing {
				delete(s.missing, m)
			}
			p.dispatchLocked()
			p.mu.Unlock()
			p.notifyCapacity()
			return
		}
		p.mu.Unlock()
		slog.Warn("openai pool: server not prepared; retrying", "server", s.url, "err", err, "in", wait)
		t := time.NewTimer(wait)
		select {
		case <-p.done:
			t.Stop()
			p.mu.Lock()
			s.preparing = false
			p.mu.Unlock()
			return
		case <-t.C:
		}
		wait = min(2*wait, p.pc.HealthBackoffMax)
	}
}

// NoTag is the tag of a server that has none (Pool.SetTag).
const NoTag int64 = -1

// SetTag sets server root's tag, copied to every choice it answers from
// now on: the generate stage tags a server with the version of the full
// weights it loaded (SGLang), while the server is held.
func (p *Pool) SetTag(root string, tag int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s := p.servers[normURL(root)]; s != nil {
		s.tag = tag
	}
}

func (p *Pool) tagOf(s *poolServer) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return s.tag
}

// Hold takes server root out of rotation until the returned release is
// called (holds nest); requests already sent there go on.
func (p *Pool) Hold(root string) (release func()) {
	p.mu.Lock()
	s := p.servers[normURL(root)]
	if s != nil {
		s.holds++
		p.failWaitersIfNoneLocked()
	}
	p.mu.Unlock()
	p.notifyCapacity()
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			if s != nil {
				s.holds--
				p.dispatchLocked()
			}
			p.mu.Unlock()
			p.notifyCapacity()
		})
	}
}

// WaitIdle waits until server root has no request in flight (or ctx ends).
func (p *Pool) WaitIdle(ctx context.Context, root string) error {
	for {
		p.mu.Lock()
		s := p.servers[normURL(root)]
		idle := s == nil || s.inflight == 0
		p.mu.Unlock()
		if idle {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}
