package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v5"
)

// maxBodyBytes bounds a response body read into memory.
const maxBodyBytes = 64 << 20

// Client calls one OpenAI-compatible server. It is safe for concurrent use.
type Client struct {
	cfg      Config
	base     *url.URL
	http     *http.Client
	sem      chan struct{}
	observe  func(Attempt)
	learnedN atomic.Int64 // smallest number of choices a server returned for a larger n; 0 = unknown
}

// Option customises a Client.
type Option func(*Client)

// WithHTTPClient replaces the HTTP client (its Timeout should be 0: the
// client bounds each attempt with Config.Timeout).
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.http = h } }

// WithObserver registers a function called after every HTTP attempt.
func WithObserver(f func(Attempt)) Option { return func(c *Client) { c.observe = f } }

// New validates cfg and returns a Client.
func New(cfg Config, opts ...Option) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	base, err := url.Parse(strings.TrimRight(cfg.BaseURL, "/"))
	if err != nil {
		return nil, fmt.Errorf("openai: base_url: %w", err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = cfg.MaxInFlight
	c := &Client{
		cfg:     cfg,
		base:    base,
		http:    &http.Client{Transport: tr},
		sem:     make(chan struct{}, cfg.MaxInFlight),
		observe: func(Attempt) {},
	}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// Config returns the client's configuration.
func (c *Client) Config() Config { return c.cfg }

// InFlight is the number of HTTP requests open now.
func (c *Client) InFlight() int { return len(c.sem) }

// Chat samples req.N chat completions.
// On error the Result still holds the choices that did arrive.
func (c *Client) Chat(ctx context.Context, req ChatRequest) (*Result, error) {
	if len(req.Messages) == 0 {
		return nil, &Error{Kind: KindBadRequest, Message: "no messages"}
	}
	if err := validateTools(req); err != nil {
		return nil, err
	}
	return c.sample(ctx, "/chat/completions", req.Sampling, func(body map[string]any) {
		body["messages"] = req.Messages
		fillTools(body, req)
		if req.Logprobs {
			// top_logprobs is sent even when 0: llama-cpp-python returns
			// no logprobs without it.
			body["logprobs"] = true
			body["top_logprobs"] = req.TopLogprobs
		}
	}, decodeChat)
}

// Complete samples req.N completions of a raw prompt.
// On error the Result still holds the choices that did arrive.
func (c *Client) Complete(ctx context.Context, req CompletionRequest) (*Result, error) {
	return c.sample(ctx, "/completions", req.Sampling, func(body map[string]any) {
		body["prompt"] = req.Prompt
		if req.Logprobs {
			// The completions API takes the number of alternatives; the
			// sampled token's logprob comes with any value.
			body["logprobs"] = req.TopLogprobs
		}
	}, decodeCompletion)
}

// chunk is one logical request of a split call.
type chunk struct {
	offset, n int
	res       *Result
	err       error
}

func (c *Client) capN() int {
	capN := c.cfg.MaxN
	if l := int(c.learnedN.Load()); l > 0 && (capN == 0 || l < capN) {
		capN = l
	}
	return capN
}

func (c *Client) learnCap(n int) {
	for {
		cur := c.learnedN.Load()
		if cur != 0 && cur <= int64(n) {
			return
		}
		if c.learnedN.CompareAndSwap(cur, int64(n)) {
			return
		}
	}
}

func (c *Client) sample(ctx context.Context, endpoint string, s Sampling, fill func(map[string]any),
	decode func([]byte) (*Result, error)) (*Result, error) {
	n := max(s.N, 1)
	out := &Result{}
	for len(out.Choices) < n {
		remaining := n - len(out.Choices)
		size := remaining
		if cp := c.capN(); cp > 0 {
			size = min(size, cp)
		}
		var chunks []*chunk
		for off := len(out.Choices); off < n; off += size {
			chunks = append(chunks, &chunk{offset: off, n: min(size, n-off)})
		}
		var wg sync.WaitGroup
		for _, ch := range chunks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				body := c.body(s, ch.n, ch.offset)
				fill(body)
				for k, v := range s.Extra {
					body[k] = v
				}
				ch.res, ch.err = c.call(ctx, endpoint, body, decode)
			}()
		}
		wg.Wait()
		var firstErr error
		got := 0
		for _, ch := range chunks {
			out.Requests++
			if ch.res != nil {
				out.Attempts += ch.res.Attempts
			}
			if ch.err != nil {
				var e *Error
				if errors.As(ch.err, &e) {
					out.Attempts += e.Attempts
				}
				if firstErr == nil {
					firstErr = ch.err
				}
				continue
			}
			r := ch.res
			if out.Model == "" {
				out.Model = r.Model
			}
			if out.PromptTokenIDs == nil {
				out.PromptTokenIDs = r.PromptTokenIDs
			}
			out.Usage.PromptTokens += r.Usage.PromptTokens
			out.Usage.CompletionTokens += r.Usage.CompletionTokens
			if len(r.Choices) < ch.n && len(r.Choices) > 0 {
				c.learnCap(len(r.Choices))
			}
			aborted := 0
			for i, choice := range r.Choices {
				if i >= ch.n || len(out.Choices) >= n {
					break
				}
				if choice.FinishReason == "abort" {
					// SGLang's answer to a request aborted by
					// pause_generation (its OpenAI protocol's finish_reason
					// "abort"): what it decoded before is not a sample.
					aborted++
					continue
				}
				choice.Index = len(out.Choices)
				out.Choices = append(out.Choices, choice)
				got++
			}
			if aborted > 0 && firstErr == nil {
				firstErr = &Error{Kind: KindServer, StatusCode: 200, Message: fmt.Sprintf("%d samples aborted by the server (finish_reason abort: generation paused)", aborted)}
			}
		}
		if firstErr != nil {
			return out, firstErr
		}
		if got == 0 {
			return out, &Error{Kind: KindDecode, Message: "server returned no choices"}
		}
	}
	return out, nil
}

func (c *Client) body(s Sampling, n, offset int) map[string]any {
	model := c.cfg.Model
	if s.Model != "" {
		model = s.Model
	}
	b := map[string]any{
		"model":       model,
		"temperature": s.Temperature,
		"stream":      false,
	}
	if n > 1 {
		b["n"] = n
	}
	if s.TopP > 0 {
		b["top_p"] = s.TopP
	}
	if s.MaxTokens > 0 {
		b["max_tokens"] = s.MaxTokens
	}
	if len(s.Stop) > 0 {
		b["stop"] = s.Stop
	}
	if s.Seed != nil {
		b["seed"] = *s.Seed + int64(offset)
	}
	if c.cfg.ReturnTokenIDs {
		b["return_token_ids"] = true
		if s.Logprobs {
			b["return_tokens_as_token_ids"] = true
		}
	}
	return b
}

// call runs one logical request with retries and decodes its body.
func (c *Client) call(ctx context.Context, endpoint string, body map[string]any,
	decode func([]byte) (*Result, error)) (*Result, error) {
	payload, err := json.Marshal(body)
	if err != nil {
		return nil, &Error{Kind: KindBadRequest, Err: fmt.Errorf("encode request: %w", err)}
	}
	var res *Result
	attempts, err := c.do(ctx, c.base.String()+endpoint, endpoint, payload, func(b []byte) error {
		r, err := decode(b)
		if err != nil {
			return err
		}
		res = r
		return nil
	})
	if err != nil {
		return nil, err
	}
	res.Attempts = attempts
	return res, nil
}

// do posts payload with retries; accept parses a 2xx body (its error counts
// as a retriable decode error). It returns the number of attempts.
func (c *Client) do(ctx context.Context, target, endpoint string, payload []byte, accept func([]byte) error) (int, error) {
	var delays *backoff.ExponentialBackOff // built at the first retry: the happy path is one request
	for attempt := 0; ; attempt++ {
		start := time.Now()
		status, body, retryAfter, err := c.attempt(ctx, target, payload)
		if err == nil {
			if derr := accept(body); derr != nil {
				err = &Error{Kind: KindDecode, StatusCode: status, Err: derr}
			}
		}
		if err == nil {
			c.observe(Attempt{Endpoint: endpoint, Status: status, Duration: time.Since(start)})
			return attempt + 1, nil
		}
		if ctx.Err() != nil {
			c.observe(Attempt{Endpoint: endpoint, Status: status, Duration: time.Since(start),
				Err: &Error{Kind: KindConnection, Err: ctx.Err()}})
			return attempt + 1, fmt.Errorf("openai: %s: %w", endpoint, ctx.Err())
		}
		var e *Error
		if !errors.As(err, &e) {
			e = &Error{Kind: KindConnection, Err: err}
		}
		e.Attempts = attempt + 1
		e.RetryAfter = retryAfter
		var wait time.Duration
		if e.Retriable() && attempt < c.cfg.MaxRetries {
			if delays == nil {
				delays = c.newBackOff()
			}
			wait = c.wait(delays, retryAfter)
		}
		c.observe(Attempt{Endpoint: endpoint, Status: status, Duration: time.Since(start), Err: e, Wait: wait})
		if wait == 0 {
			return attempt + 1, e
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return attempt + 1, fmt.Errorf("openai: %s: waiting to retry after %v: %w", endpoint, e, ctx.Err())
		case <-t.C:
		}
	}
}

// newBackOff is one request's retry delays (cenkalti/backoff): d starts at
// BackoffInitial and doubles up to BackoffMax; each wait is drawn from
// [d/2, 3d/2].
func (c *Client) newBackOff() *backoff.ExponentialBackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxInterval = c.cfg.BackoffInitial, c.cfg.BackoffMax
	b.Multiplier, b.RandomizationFactor = 2, 0.5
	return b
}

// wait returns the wait before the next retry: the server's Retry-After
// (capped by MaxRetryAfter) when it sent one, else the next of delays.
func (c *Client) wait(delays *backoff.ExponentialBackOff, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return min(retryAfter, c.cfg.MaxRetryAfter) + time.Millisecond
	}
	return delays.NextBackOff()
}

// attempt makes one HTTP request while holding a slot of the in-flight bound.
func (c *Client) attempt(ctx context.Context, target string, payload []byte) (status int, body []byte, retryAfter time.Duration, err error) {
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return 0, nil, 0, ctx.Err()
	}
	defer func() { <-c.sem }()
	actx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, target, bytes.NewReader(payload))
	if err != nil {
		return 0, nil, 0, &Error{Kind: KindBadRequest, Err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if c.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	for k, v := range c.cfg.Headers {
		req.Header.Set(k, v)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, 0, c.transportError(ctx, actx, err)
	}
	defer resp.Body.Close()
	retryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	body, err = io.ReadAll(io.LimitReader(resp.Body, maxBodyBytes+1))
	if err != nil {
		return resp.StatusCode, nil, retryAfter, c.transportError(ctx, actx, fmt.Errorf("read body: %w", err))
	}
	if len(body) > maxBodyBytes {
		return resp.StatusCode, nil, retryAfter, &Error{Kind: KindDecode, StatusCode: resp.StatusCode,
			Message: fmt.Sprintf("response body over %d bytes", maxBodyBytes)}
	}
	if resp.StatusCode/100 == 2 {
		return resp.StatusCode, body, retryAfter, nil
	}
	return resp.StatusCode, body, retryAfter, statusError(resp.StatusCode, body)
}

func (c *Client) transportError(ctx, actx context.Context, err error) error {
	if ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded) {
		return &Error{Kind: KindTimeout, Message: fmt.Sprintf("no complete response within %s", c.cfg.Timeout), Err: err}
	}
	return &Error{Kind: KindConnection, Err: err}
}

// statusError classifies a non-2xx answer.
func statusError(status int, body []byte) *Error {
	msg := errorMessage(body)
	e := &Error{StatusCode: status, Message: msg}
	switch {
	case status == http.StatusTooManyRequests:
		e.Kind = KindRateLimited
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		e.Kind = KindAuth
	case status == http.StatusRequestTimeout:
		e.Kind = KindTimeout
	case looksLikeOverflow(msg) && (status/100 == 4 || status/100 == 5):
		e.Kind = KindContextOverflow
	case status == http.StatusNotFound && looksLikeModelNotFound(msg):
		e.Kind = KindModelNotFound
	case status/100 == 5:
		e.Kind = KindServer
	default:
		e.Kind = KindBadRequest
	}
	return e
}

// errorMessage pulls the message out of the error bodies servers send:
// {"error":{"message":...}}, {"error":"..."}, {"message":...},
// {"detail":...}, or plain text.
func errorMessage(body []byte) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &v) == nil {
		var inner struct {
			Message string `json:"message"`
			Code    any    `json:"code"`
		}
		var s string
		switch {
		case len(v.Error) > 0 && json.Unmarshal(v.Error, &inner) == nil && inner.Message != "":
			if code, ok := inner.Code.(string); ok && code != "" && !strings.Contains(inner.Message, code) {
				return inner.Message + " (" + code + ")"
			}
			return inner.Message
		case len(v.Error) > 0 && json.Unmarshal(v.Error, &s) == nil && s != "":
			return s
		case v.Message != "":
			return v.Message
		case len(v.Detail) > 0:
			if json.Unmarshal(v.Detail, &s) == nil {
				return s
			}
			return truncate(string(v.Detail), 512)
		}
	}
	return truncate(strings.TrimSpace(string(body)), 512)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// parseRetryAfter reads delay-seconds (fractions accepted) or an HTTP date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		if f <= 0 {
			return 0
		}
		return time.Duration(f * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// Tokenize returns the server's token ids of text through the endpoint at
// Config.TokenizePath. The body carries the text under the names vLLM
// ("prompt"), llama.cpp ("content") and llama-cpp-python ("input") read; all
// three answer {"tokens": [...]}.
func (c *Client) Tokenize(ctx context.Context, text string) ([]int32, error) {
	if c.cfg.TokenizePath == "" {
		return nil, &Error{Kind: KindBadRequest, Message: "tokenize_path is not configured"}
	}
	payload, err := json.Marshal(map[string]any{"model": c.cfg.Model, "prompt": text, "content": text, "input": text})
	if err != nil {
		return nil, err
	}
	root := *c.base
	root.Path = ""
	var ids []int32
	_, err = c.do(ctx, root.String()+c.cfg.TokenizePath, c.cfg.TokenizePath, payload, func(b []byte) error {
		var v struct {
			Tokens []int64 `json:"tokens"`
		}
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		if v.Tokens == nil {
			return errors.New("no tokens in tokenize response")
		}
		ids = toInt32(v.Tokens)
		return nil
	})
	return ids, err
}
