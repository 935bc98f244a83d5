package openai

import (
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"
)

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
			p.startScrapeLocked(s)
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
		srv := &poolServer{url: u, client: c, lim: newServerLimit(p.pc.Limit, p.now()), healthy: true, prepared: p.prepare == nil, tag: NoTag,
			stats: serverStats{errors: map[ErrorKind]uint64{}, routed: map[string]uint64{}}, latency: newLatencyHistogram()}
		p.servers[u] = srv
		p.startPrepareLocked(srv)
		p.startScrapeLocked(srv)
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
