package fakeserver

import (
	"container/list"
	"context"
	"strings"
	"time"
)

// Engine is a continuous-batching decode loop in the manner of vLLM's
// scheduler, used when Config.Engine.Step > 0 instead of the fixed
// per-sequence rate: every step decodes one token of every running
// sequence and takes Step + PerSeq × running (plus the prefill of the
// sequences admitted in it: PrefillPerToken × their prompt tokens not in
// the prefix cache). A waiting sequence is admitted, first come first
// served, while the KV cache holds its prompt and all its tokens
// (KVTokens); it leaves when its tokens are done. The prefix cache keeps
// the prompts' first messages (PrefixCacheTokens in all, least recently
// used out), so a refinement whose messages begin with its tree's root
// prompt skips that prefill on the server that saw the root. Its peak is
// not known in advance: it is measured, by driving the server.
type Engine struct {
	Step, PerSeq, PrefillPerToken time.Duration
	KVTokens                      int
	PrefixCacheTokens             int
}

// engineSeq is one sequence in the engine.
type engineSeq struct {
	need, tokens, gen int
	prefix            string
	prefixTokens      int
	promptTokens      int
	done              chan struct{}
}

// engineState is the engine's queue, batch and cache, guarded by Server.mu.
type engineState struct {
	waiting []*engineSeq
	running []*engineSeq
	kvUsed  int
	wake    chan struct{}
	cache   map[string]*list.Element // prefix → its entry in lru
	lru     *list.List               // of cacheEntry, least recent first
	cached  int
}

type cacheEntry struct {
	key    string
	tokens int
}

func wordTokens(s string) int { return len(strings.Fields(s)) + 1 }

// engineSubmit queues n sequences of prompt (its first message prefix)
// and waits until they are decoded, abort closes (they leave the engine;
// partial are the tokens each had decoded) or ctx ends.
func (s *Server) engineSubmit(ctx context.Context, n, tokens int, prefix, full string, abort chan struct{}) (partial []int, aborted bool, err error) {
	seqs := make([]*engineSeq, n)
	pt := wordTokens(full)
	s.mu.Lock()
	for i := range seqs {
		seqs[i] = &engineSeq{need: pt + tokens, tokens: tokens, prefix: prefix, prefixTokens: min(wordTokens(prefix), pt),
			promptTokens: pt, done: make(chan struct{})}
		s.eng.waiting = append(s.eng.waiting, seqs[i])
	}
	s.stats.MaxQueued = max(s.stats.MaxQueued, len(s.eng.waiting))
	select {
	case s.eng.wake <- struct{}{}:
	default:
	}
	s.mu.Unlock()
	for _, q := range seqs {
		select {
		case <-q.done:
		case <-abort:
			return s.engineAbort(seqs), true, nil
		case <-ctx.Done():
			s.engineAbort(seqs)
			return nil, false, ctx.Err()
		}
	}
	return nil, false, nil
}

// engineAbort takes seqs out of the engine (those not done) and returns
// the tokens each had decoded.
func (s *Server) engineAbort(seqs []*engineSeq) []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	gone := map[*engineSeq]bool{}
	partial := make([]int, len(seqs))
	for i, q := range seqs {
		partial[i] = q.gen
		gone[q] = true
	}
	keep := func(list []*engineSeq, running bool) []*engineSeq {
		out := list[:0]
		for _, q := range list {
			if !gone[q] {
				out = append(out, q)
			} else if running {
				s.eng.kvUsed -= q.need
			}
		}
		return out
	}
	s.eng.waiting = keep(s.eng.waiting, false)
	s.eng.running = keep(s.eng.running, true)
	s.active = len(s.eng.running)
	return partial
}

// engineLoop runs the decode steps until stop closes. A step ends its
// duration after the previous one ended, on the engine's own clock, when
// the loop woke late (the host's scheduling, not the modelled GPU): the
// next step makes up for it, by at most its own duration, so that steps
// never run back to back in a burst.
func (s *Server) engineLoop(stop chan struct{}) {
	e := s.cfg.Engine
	var end time.Time // when the last step ended, on the engine's clock
	for {
		s.mu.Lock()
		prefill := s.admitLocked()
		running := len(s.eng.running)
		wake := s.eng.wake
		s.mu.Unlock()
		if running == 0 {
			select {
			case <-wake:
				end = time.Time{}
				continue
			case <-stop:
				return
			}
		}
		d := e.Step + time.Duration(running)*e.PerSeq + time.Duration(prefill)*e.PrefillPerToken
		now := time.Now()
		if end.IsZero() || now.Sub(end) > d {
			end = now
		}
		end = end.Add(d)
		if wait := time.Until(end); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-stop:
				t.Stop()
				return
			}
		}
		s.mu.Lock()
		kept := s.eng.running[:0]
		for _, q := range s.eng.running {
			if q.gen++; q.gen < q.tokens {
				kept = append(kept, q)
				continue
			}
			s.eng.kvUsed -= q.need
			s.cacheLocked(q.prefix, q.prefixTokens)
			close(q.done)
		}
		s.eng.running = kept
		s.active = len(kept)
		s.mu.Unlock()
	}
}

// admitLocked admits waiting sequences while the KV cache holds them and
// returns the prompt tokens to prefill (those not in the prefix cache).
func (s *Server) admitLocked() int {
	kv := s.cfg.Engine.KVTokens
	prefill := 0
	for len(s.eng.waiting) > 0 {
		q := s.eng.waiting[0]
		if len(s.eng.running) > 0 && s.eng.kvUsed+q.need > kv {
			break
		}
		s.eng.waiting = s.eng.waiting[1:]
		s.eng.running = append(s.eng.running, q)
		s.eng.kvUsed += q.need
		s.stats.PrefixLookups++
		if el, ok := s.eng.cache[q.prefix]; ok && q.prefix != "" {
			s.eng.lru.MoveToBack(el)
			s.stats.PrefixHits++
			prefill += q.promptTokens - q.prefixTokens
		} else {
			prefill += q.promptTokens
		}
	}
	s.active = len(s.eng.running)
	s.stats.MaxActive = max(s.stats.MaxActive, s.active)
	return prefill
}

// cacheLocked keeps prefix (of tokens tokens) in the prefix cache.
func (s *Server) cacheLocked(prefix string, tokens int) {
	if prefix == "" || s.cfg.Engine.PrefixCacheTokens <= 0 {
		return
	}
	if el, ok := s.eng.cache[prefix]; ok {
		s.eng.lru.MoveToBack(el)
		return
	}
	s.eng.cache[prefix] = s.eng.lru.PushBack(cacheEntry{key: prefix, tokens: tokens})
	s.eng.cached += tokens
	for s.eng.cached > s.cfg.Engine.PrefixCacheTokens && s.eng.lru.Len() > 1 {
		el := s.eng.lru.Front()
		ce := el.Value.(cacheEntry)
		s.eng.lru.Remove(el)
		delete(s.eng.cache, ce.key)
		s.eng.cached -= ce.tokens
	}
}
