package openai

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// release returns a request's w sequences to s and learns from its
// outcome: latency, errors, health.
func (p *Pool) release(ctx context.Context, s *poolServer, w int, start time.Time, res *Result, err error) {
	now := p.now()
	d := now.Sub(start)
	changed := false
	p.mu.Lock()
	s.inflight -= w
	s.lim.inFlight(now, s.inflight)
	var e *Error
	isErr := errors.As(err, &e)
	switch {
	case err == nil:
		s.stats.requests++
		s.latency.observe(d.Seconds())
		s.fails, s.backoff = 0, 0
		if w > 0 {
			changed = s.lim.success(now, start, w, s.inflight)
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
			if p.prepare != nil {
				// Back from the dead: it may have lost what it was
				// prepared with (a restarted server's adapters).
				s.prepared = false
				p.startPrepareLocked(s)
			}
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
