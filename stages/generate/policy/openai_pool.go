package policy

import (
	"context"
	"math"

	"github.com/murphy-rl/murphy/openai"
	"github.com/murphy-rl/murphy/topics"
	"github.com/prometheus/client_golang/prometheus"
)

// sampler is what the OpenAI policy sends its requests to: one server's
// openai.Client or an openai.Pool.
type sampler interface {
	Chat(ctx context.Context, req openai.ChatRequest) (*openai.Result, error)
	Complete(ctx context.Context, req openai.CompletionRequest) (*openai.Result, error)
	Tokenize(ctx context.Context, text string) ([]int32, error)
}

// AffinityKey is the server-affinity key of a prompt's request: its tree
// id, for the root group and every refinement of the tree alike, so that a
// refinement (whose messages begin with the root prompt) finds the prompt
// in the server's prefix cache. The samples of one group are one request
// (n = group size), split chunks included, and so go to one server.
func AffinityKey(p *topics.Prompt) string {
	if p.TreeID != "" {
		return p.TreeID
	}
	return p.GroupID
}

// Pool is the policy's server pool (nil with one server).
func (o *OpenAI) Pool() *openai.Pool { return o.pool }

// Close stops the server pool's goroutines (nothing to do with one server,
// or for a ForModel policy: its pool is its base's).
func (o *OpenAI) Close() {
	if o.pool != nil && o.base == nil {
		o.pool.Close()
	}
}

// RegisterMetrics registers the pool's per-server metrics on reg
// (nothing with one server).
func (o *OpenAI) RegisterMetrics(reg prometheus.Registerer) error {
	if o.pool == nil || reg == nil {
		return nil
	}
	return reg.Register(o.pool)
}

// CapacityHeadroom is how many more prompts than the servers' limits hold
// WatchCapacity asks for: the extra quarter waits in the pool, so that a
// server that frees a sequence gets the next request at once instead of
// after the caller's own turnaround.
const CapacityHeadroom = 1.25

// WatchCapacity calls f (from one goroutine) whenever the number of
// prompts the server pool can take at once may have changed: its capacity
// in sequences (the healthy servers' limits) over the mean sequences per
// request, times CapacityHeadroom, plus one. The generate stage sizes its
// generation slots by it (capped by its concurrency). Without a pool f is
// never called.
func (o *OpenAI) WatchCapacity(f func(prompts int)) {
	if o.pool == nil {
		return
	}
	last := -1
	o.pool.OnCapacity(func(seqs int, meanWeight float64) {
		n := PromptCapacity(seqs, meanWeight)
		if n != last {
			last = n
			f(n)
		}
	})
}

// PromptCapacity is WatchCapacity's number of prompts for a capacity of
// seqs sequences and meanWeight sequences per request (0: unknown, 1).
func PromptCapacity(seqs int, meanWeight float64) int {
	if meanWeight < 1 {
		meanWeight = 1
	}
	return int(math.Ceil(CapacityHeadroom*float64(seqs)/meanWeight)) + 1
}
