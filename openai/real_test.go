package openai

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/openai/openaitest"
)

// eosBan keeps the tiny model from ending early (</s> is token 2).
var eosBan = map[string]any{"logit_bias": map[string]float64{"2": -100}}

func realClient(t *testing.T, base, model string, mut func(*Config)) *Client {
	t.Helper()
	cfg := DefaultConfig()
	cfg.BaseURL, cfg.Model = base, model
	cfg.Timeout = 20 * time.Second
	cfg.MaxRetries = 3
	cfg.BackoffInitial, cfg.BackoffMax = 50*time.Millisecond, 400*time.Millisecond
	cfg.TokenizePath = "/extras/tokenize"
	if mut != nil {
		mut(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func validFinish(r string) bool { return r == "stop" || r == "length" }

// TestRealServer runs the client against llama.cpp's OpenAI-compatible
// server (llama-cpp-python) on the CPU, serving a tiny random-weight model,
// directly and through a fault-injecting proxy.
func TestRealServer(t *testing.T) {
	srv := openaitest.StartLlama(t)
	ctx := context.Background()
	direct := realClient(t, srv.BaseURL, srv.Model, nil)
	seed := int64(7)

	t.Run("completions n samples with logprobs", func(t *testing.T) {
		c := realClient(t, srv.BaseURL, srv.Model, nil)
		res, err := c.Complete(ctx, CompletionRequest{Prompt: "def f(x):", Sampling: Sampling{
			N: 3, Temperature: 1, MaxTokens: 8, Seed: &seed, Logprobs: true}})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Choices) != 3 {
			t.Fatalf("%d choices, want 3", len(res.Choices))
		}
		texts := map[string]bool{}
		for i, ch := range res.Choices {
			if ch.Index != i || !validFinish(ch.FinishReason) || len(ch.Logprobs) == 0 || len(ch.Logprobs) != len(ch.Tokens) {
				t.Fatalf("choice %d: index %d finish %q %d logprobs %d tokens", i, ch.Index, ch.FinishReason, len(ch.Logprobs), len(ch.Tokens))
			}
			for _, lp := range ch.Logprobs {
				if lp > 0 {
					t.Fatalf("logprob %v > 0", lp)
				}
			}
			texts[ch.Text] = true
		}
		if len(texts) < 2 {
			t.Fatal("three samples with distinct seeds are identical")
		}
		// llama-cpp-python answers one choice whatever n is: the client
		// learns the cap and fetches the rest concurrently.
		if res.Requests != 1 && !(res.Requests == 3 && c.capN() == 1) {
			t.Fatalf("%d requests, learned cap %d", res.Requests, c.capN())
		}
		t.Logf("server returned n via %d requests; learned cap %d", res.Requests, c.capN())
	})

	t.Run("max_tokens gives finish_reason length", func(t *testing.T) {
		res, err := direct.Complete(ctx, CompletionRequest{Prompt: "x = ", Sampling: Sampling{
			Temperature: 1, MaxTokens: 5, Seed: &seed, Logprobs: true, Extra: eosBan}})
		if err != nil {
			t.Fatal(err)
		}
		ch := res.Choices[0]
		if ch.FinishReason != "length" || res.Usage.CompletionTokens != 5 || len(ch.Logprobs) != 5 {
			t.Fatalf("finish %q, %d completion tokens, %d logprobs", ch.FinishReason, res.Usage.CompletionTokens, len(ch.Logprobs))
		}
	})

	t.Run("stop sequence gives finish_reason stop", func(t *testing.T) {
		greedy := Sampling{Temperature: 0, MaxTokens: 16, Extra: eosBan}
		res, err := direct.Complete(ctx, CompletionRequest{Prompt: "def g():", Sampling: greedy})
		if err != nil {
			t.Fatal(err)
		}
		full := res.Choices[0].Text
		k := -1
		for i := 2; i+2 <= len(full); i++ {
			if s := full[i : i+2]; strings.Index(full, s) == i && strings.TrimSpace(s) == s && s != "" {
				k = i
				break
			}
		}
		if k < 0 {
			t.Skipf("greedy text %q has no usable stop sequence", full)
		}
		greedy.Stop = []string{full[k : k+2]}
		res, err = direct.Complete(ctx, CompletionRequest{Prompt: "def g():", Sampling: greedy})
		if err != nil {
			t.Fatal(err)
		}
		if ch := res.Choices[0]; ch.FinishReason != "stop" || ch.Text != full[:k] {
			t.Fatalf("stop %q: finish %q text %q, want %q", greedy.Stop[0], ch.FinishReason, ch.Text, full[:k])
		}
	})

	t.Run("chat n samples with logprobs", func(t *testing.T) {
		res, err := direct.Chat(ctx, ChatRequest{Messages: []Message{{Role: "user", Content: "write f"}},
			Sampling: Sampling{N: 2, Temperature: 1, MaxTokens: 6, Seed: &seed, Logprobs: true}})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Choices) != 2 {
			t.Fatalf("%d choices", len(res.Choices))
		}
		for _, ch := range res.Choices {
			if !validFinish(ch.FinishReason) || len(ch.Logprobs) == 0 || len(ch.Tokens) != len(ch.Logprobs) {
				t.Fatalf("chat choice: finish %q, %d logprobs, %d tokens", ch.FinishReason, len(ch.Logprobs), len(ch.Tokens))
			}
		}
	})

	t.Run("same seed same sample", func(t *testing.T) {
		req := CompletionRequest{Prompt: "return", Sampling: Sampling{Temperature: 1, MaxTokens: 8, Seed: &seed, Extra: eosBan}}
		a, err := direct.Complete(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := direct.Complete(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if a.Choices[0].Text != b.Choices[0].Text {
			t.Fatalf("seeded samples differ: %q vs %q", a.Choices[0].Text, b.Choices[0].Text)
		}
	})

	t.Run("token ids", func(t *testing.T) {
		ids, err := direct.Tokenize(ctx, "def f(x): return x")
		if err != nil {
			t.Fatal(err)
		}
		again, _ := direct.Tokenize(ctx, "def f(x): return x")
		if len(ids) < 3 || len(ids) != len(again) {
			t.Fatalf("tokenize: %v / %v", ids, again)
		}
		for _, id := range ids {
			if id < 0 || id > 512 {
				t.Fatalf("token id %d outside the tiny vocabulary", id)
			}
		}
	})

	t.Run("context overflow is typed and not retried", func(t *testing.T) {
		long := strings.Repeat("alpha beta gamma delta ", 200)
		_, err := direct.Complete(ctx, CompletionRequest{Prompt: long, Sampling: Sampling{MaxTokens: 8}})
		var e *Error
		if !IsContextOverflow(err) || !errors.As(err, &e) || e.Attempts != 1 || e.StatusCode/100 != 4 {
			t.Fatalf("err = %v", err)
		}
	})

	// Faults injected by a proxy in front of the real server.
	proxy := openaitest.NewFaultProxy(t, srv.BaseURL)
	via := func(mut func(*Config)) *Client { return realClient(t, proxy.URL+"/v1", srv.Model, mut) }
	small := CompletionRequest{Prompt: "x", Sampling: Sampling{Temperature: 1, MaxTokens: 4, Seed: &seed, Logprobs: true}}
	cases := []struct {
		name     string
		faults   []openaitest.Fault
		mut      func(*Config)
		attempts int
		minTime  time.Duration
	}{
		{"http 500 is retried", []openaitest.Fault{{Kind: openaitest.Status500}}, nil, 2, 0},
		{"429 honours Retry-After", []openaitest.Fault{{Kind: openaitest.Status429, RetryAfter: time.Second}}, nil, 2, time.Second},
		{"connection resets are retried", []openaitest.Fault{{Kind: openaitest.Reset}, {Kind: openaitest.Reset}}, nil, 3, 0},
		{"a stalled server times out and is retried", []openaitest.Fault{{Kind: openaitest.Stall, Delay: 5 * time.Second}},
			func(c *Config) { c.Timeout = 700 * time.Millisecond }, 2, 700 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var kinds []ErrorKind
			cfg := func(c *Config) {
				if tc.mut != nil {
					tc.mut(c)
				}
			}
			c := via(cfg)
			c.observe = func(a Attempt) {
				mu.Lock()
				defer mu.Unlock()
				if a.Err != nil {
					kinds = append(kinds, a.Err.Kind)
				}
			}
			proxy.Inject(tc.faults...)
			start := time.Now()
			res, err := c.Complete(ctx, small)
			if err != nil {
				t.Fatalf("err after faults: %v (observed %v)", err, kinds)
			}
			if res.Attempts != tc.attempts || len(res.Choices) != 1 || len(res.Choices[0].Logprobs) == 0 {
				t.Fatalf("attempts %d (want %d), %d choices", res.Attempts, tc.attempts, len(res.Choices))
			}
			if el := time.Since(start); el < tc.minTime {
				t.Fatalf("done after %v, before %v", el, tc.minTime)
			}
			if proxy.Pending() != 0 {
				t.Fatal("faults left unused")
			}
			t.Logf("observed failures %v", kinds)
		})
	}

	t.Run("retries exhausted gives a typed error", func(t *testing.T) {
		c := via(func(c *Config) { c.MaxRetries = 2 })
		for i := 0; i < 3; i++ {
			proxy.Inject(openaitest.Fault{Kind: openaitest.Status500})
		}
		_, err := c.Complete(ctx, small)
		var e *Error
		if !errors.As(err, &e) || e.Kind != KindServer || e.Attempts != 3 || !e.Retriable() || !strings.Contains(e.Message, "injected") {
			t.Fatalf("err = %v", err)
		}
	})

	t.Run("outage then recovery", func(t *testing.T) {
		c := via(func(c *Config) { c.MaxRetries = 20; c.BackoffMax = 300 * time.Millisecond })
		proxy.SetDown(true)
		before := proxy.Forwarded()
		go func() {
			time.Sleep(1500 * time.Millisecond)
			proxy.SetDown(false)
		}()
		res, err := c.Complete(ctx, small)
		if err != nil {
			t.Fatal(err)
		}
		if res.Attempts < 3 || proxy.Forwarded() != before+1 {
			t.Fatalf("attempts %d, forwarded %d", res.Attempts, proxy.Forwarded()-before)
		}
	})

	t.Run("in-flight requests are bounded", func(t *testing.T) {
		p2 := openaitest.NewFaultProxy(t, srv.BaseURL)
		c := realClient(t, p2.URL+"/v1", srv.Model, func(c *Config) { c.MaxInFlight = 2 })
		var wg sync.WaitGroup
		errs := make(chan error, 6)
		for i := 0; i < 6; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := c.Complete(ctx, small)
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if p2.Requests() != 6 || p2.MaxConcurrent() > 2 {
			t.Fatalf("%d requests, %d at once (bound 2)", p2.Requests(), p2.MaxConcurrent())
		}
	})
}
