package openai

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v5"
)

// Chat samples req.N chat completions on the pool (see Client.Chat); the
// affinity key is ctx's (WithAffinity).
func (p *Pool) Chat(ctx context.Context, req ChatRequest) (*Result, error) {
	if len(req.Messages) == 0 {
		return nil, &Error{Kind: KindBadRequest, Message: "no messages"}
	}
	return p.sample(ctx, req.Sampling, func(ctx context.Context, c *Client, s Sampling) (*Result, error) {
		r := req
		r.Sampling = s
		return c.Chat(ctx, r)
	})
}

// Complete samples req.N completions on the pool (see Client.Complete).
func (p *Pool) Complete(ctx context.Context, req CompletionRequest) (*Result, error) {
	return p.sample(ctx, req.Sampling, func(ctx context.Context, c *Client, s Sampling) (*Result, error) {
		r := req
		r.Sampling = s
		return c.Complete(ctx, r)
	})
}

// Tokenize tokenizes text on the server of ctx's affinity key (it holds
// no share of the server's limit).
func (p *Pool) Tokenize(ctx context.Context, text string) ([]int32, error) {
	var ids []int32
	_, err := p.sample(ctx, Sampling{}, func(ctx context.Context, c *Client, _ Sampling) (*Result, error) {
		var err error
		ids, err = c.Tokenize(ctx, text)
		if err != nil {
			return nil, err
		}
		return &Result{}, nil
	}, withWeight(0))
	return ids, err
}

type sampleOpt func(*sampleOpts)

type sampleOpts struct{ weight int }

func withWeight(w int) sampleOpt { return func(o *sampleOpts) { o.weight = w } }

// sample runs op on the pool's servers until it has s.N choices, a
// non-retriable error, or its retries are spent.
func (p *Pool) sample(ctx context.Context, s Sampling, op func(context.Context, *Client, Sampling) (*Result, error), opts ...sampleOpt) (*Result, error) {
	o := sampleOpts{weight: -1}
	for _, f := range opts {
		f(&o)
	}
	n := max(s.N, 1)
	key := Affinity(ctx)
	if !p.pc.Affinity {
		key = ""
	}
	out := &Result{}
	tried := map[*poolServer]bool{}
	var delays *backoff.ExponentialBackOff
	var lastErr error
	for attempt := 0; ; attempt++ {
		got := len(out.Choices)
		sub := s
		sub.N = n - got
		if s.Seed != nil && got > 0 {
			v := *s.Seed + int64(got)
			sub.Seed = &v
		}
		w := sub.N
		if o.weight >= 0 {
			w = o.weight
		}
		srv, err := p.acquire(ctx, key, w, tried)
		if err != nil {
			if ctx.Err() != nil || !errors.Is(err, errNoServer) {
				return out, err
			}
			lastErr = err
		} else {
			start := p.now()
			res, err := op(ctx, srv.client, sub)
			tag := p.tagOf(srv) // before the request is released: no update of its server went between
			p.release(ctx, srv, w, start, res, err)
			if res != nil {
				for i := range res.Choices {
					res.Choices[i].Server, res.Choices[i].Tag = srv.url, tag
				}
			}
			merge(out, res, got)
			if err == nil && len(out.Choices) >= n || err == nil && o.weight == 0 {
				return out, nil
			}
			if err == nil {
				err = &Error{Kind: KindDecode, Message: "server returned no choices"}
			}
			var e *Error
			if ctx.Err() == nil && errors.As(err, &e) && e.Kind == KindModelNotFound {
				// Another server may have it; this one is prepared again.
				p.modelMissing(srv, sub.Model)
			} else if ctx.Err() != nil || e == nil || !e.Retriable() {
				return out, err
			}
			tried[srv] = true
			lastErr = err
		}
		if attempt >= p.cc.MaxRetries {
			return out, lastErr
		}
		if p.hasUntried(tried) {
			continue
		}
		if delays == nil {
			delays = newPoolBackOff(p.cc)
		}
		wait := delays.NextBackOff()
		var e *Error
		if errors.As(lastErr, &e) && e.RetryAfter > 0 {
			wait = min(e.RetryAfter, p.cc.MaxRetryAfter) + time.Millisecond
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return out, fmt.Errorf("openai pool: waiting to retry after %v: %w", lastErr, ctx.Err())
		case <-t.C:
		}
	}
}

func newPoolBackOff(cc Config) *backoff.ExponentialBackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxInterval = cc.BackoffInitial, cc.BackoffMax
	b.Multiplier, b.RandomizationFactor = 2, 0.5
	return b
}

// merge adds the choices of res (a request for the samples from index
// offset on) to out.
func merge(out, res *Result, offset int) {
	if res == nil {
		return
	}
	if out.Model == "" {
		out.Model = res.Model
	}
	if out.PromptTokenIDs == nil {
		out.PromptTokenIDs = res.PromptTokenIDs
	}
	out.Usage.PromptTokens += res.Usage.PromptTokens
	out.Usage.CompletionTokens += res.Usage.CompletionTokens
	out.Requests += max(res.Requests, 1)
	out.Attempts += res.Attempts
	for _, c := range res.Choices {
		c.Index = offset + c.Index
		out.Choices = append(out.Choices, c)
	}
	sortChoices(out.Choices)
	for i := range out.Choices {
		out.Choices[i].Index = i
	}
}
