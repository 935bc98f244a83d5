package generate

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
)

// watchPolicy connects a policy backed by a pool of servers
// (policy.OpenAI with policy.openai.pool): its per-server metrics are
// registered on reg with the stage's label, and the generation slots
// follow the pool's capacity. The pool's servers bound the work, through
// their adaptive limits; the slots are where refinements go first and
// backfill gets its share, so they are kept a little above what the
// servers take (policy.PromptCapacity: a quarter more) and no higher, and
// Config.Concurrency is then only their upper bound (set it above what the
// servers can ever take, e.g. 1024). A policy without a pool keeps
// Concurrency slots.
func (s *Stage) watchPolicy(reg prometheus.Registerer) {
	if r, ok := s.pol.(interface {
		RegisterMetrics(prometheus.Registerer) error
	}); ok && reg != nil {
		if err := r.RegisterMetrics(prometheus.WrapRegistererWith(prometheus.Labels{"stage": "generate"}, reg)); err != nil {
			slog.Warn("generate: server pool metrics not registered", "err", err)
		}
	}
	if w, ok := s.pol.(interface{ WatchCapacity(func(int)) }); ok {
		w.WatchCapacity(func(n int) { s.slots.resize(min(max(n, 1), s.cfg.Concurrency)) })
	}
}

// resize makes n slots: grants are made at once when it grows; when it
// shrinks, the slots held above n are not taken back but not handed on
// when released.
func (s *slots) resize(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	held := 0
	for _, h := range s.held {
		held += h
	}
	s.free = n - held
	s.dispatchLocked()
}
