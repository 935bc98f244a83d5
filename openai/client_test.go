package openai

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func testConfig(url string) Config {
	c := DefaultConfig()
	c.BaseURL = url + "/v1"
	c.Model = "m"
	c.Timeout = 2 * time.Second
	c.BackoffInitial = time.Millisecond
	c.BackoffMax = 4 * time.Millisecond
	c.MaxRetries = 3
	return c
}

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		name string
		mut  func(*Config)
		ok   bool
	}{
		{"default", func(*Config) {}, true},
		{"no base", func(c *Config) { c.BaseURL = "" }, false},
		{"bad scheme", func(c *Config) { c.BaseURL = "ftp://x/v1" }, false},
		{"no host", func(c *Config) { c.BaseURL = "http:///v1" }, false},
		{"no model", func(c *Config) { c.Model = "" }, false},
		{"zero timeout", func(c *Config) { c.Timeout = 0 }, false},
		{"zero in flight", func(c *Config) { c.MaxInFlight = 0 }, false},
		{"negative retries", func(c *Config) { c.MaxRetries = -1 }, false},
		{"backoff inverted", func(c *Config) { c.BackoffMax = time.Millisecond }, false},
		{"negative max n", func(c *Config) { c.MaxN = -2 }, false},
		{"relative tokenize path", func(c *Config) { c.TokenizePath = "tokenize" }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.mut(&c)
			if err := c.Validate(); (err == nil) != tc.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"3", 3 * time.Second},
		{"0.25", 250 * time.Millisecond},
		{"-1", 0},
		{"soon", 0},
		{now.Add(7 * time.Second).Format(http.TimeFormat), 7 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
	}
	for _, tc := range cases {
		if got := parseRetryAfter(tc.in, now); got != tc.want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestStatusClassification(t *testing.T) {
	cases := []struct {
		status    int
		body      string
		kind      ErrorKind
		retriable bool
	}{
		{429, `{"error":{"message":"slow down"}}`, KindRateLimited, true},
		{500, `{"error":{"message":"boom"}}`, KindServer, true},
		{503, `upstream unavailable`, KindServer, true},
		{401, `{"error":"bad key"}`, KindAuth, false},
		{400, `{"error":{"message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens"}}`, KindContextOverflow, false},
		{400, `{"error":{"message":"Requested tokens (300) exceed context window of 256","code":"context_length_exceeded"}}`, KindContextOverflow, false},
		{400, `{"object":"error","message":"bad temperature"}`, KindBadRequest, false},
		{422, `{"detail":"field required"}`, KindBadRequest, false},
		{408, ``, KindTimeout, true},
	}
	for _, tc := range cases {
		e := statusError(tc.status, []byte(tc.body))
		if e.Kind != tc.kind || e.Retriable() != tc.retriable {
			t.Errorf("%d %s: kind %s retriable %v, want %s %v", tc.status, tc.body, e.Kind, e.Retriable(), tc.kind, tc.retriable)
		}
	}
	if m := errorMessage([]byte(`{"detail":"field required"}`)); m != "field required" {
		t.Errorf("detail message = %q", m)
	}
}

func TestBackoffBounds(t *testing.T) {
	c := &Client{cfg: Config{BackoffInitial: 100 * time.Millisecond, BackoffMax: time.Second, MaxRetryAfter: 5 * time.Second}}
	for i := 0; i < 50; i++ {
		delays := c.newBackOff()
		for attempt := 0; attempt < 8; attempt++ {
			d := min(100*time.Millisecond<<attempt, time.Second)
			if w := c.wait(delays, 0); w < d/2 || w > d*3/2 {
				t.Fatalf("attempt %d: wait %v outside [%v, %v]", attempt, w, d/2, d*3/2)
			}
		}
	}
	if w := c.wait(c.newBackOff(), 2*time.Second); w < 2*time.Second || w > 2*time.Second+10*time.Millisecond {
		t.Fatalf("Retry-After not honoured: %v", w)
	}
	if w := c.wait(c.newBackOff(), time.Hour); w > 5*time.Second+10*time.Millisecond {
		t.Fatalf("Retry-After not capped: %v", w)
	}
}

// TestDecodeServerExtensions checks the vLLM/SGLang response extensions on
// recorded response shapes: token_ids, prompt_token_ids and logprob tokens
// spelled "token_id:N".
func TestDecodeServerExtensions(t *testing.T) {
	t.Run("completions token_ids", func(t *testing.T) {
		r, err := decodeCompletion([]byte(`{"model":"m","choices":[
			{"index":1,"text":"b","finish_reason":"length","logprobs":{"tokens":["x","y"],"token_logprobs":[-0.5,null]},"token_ids":[7,8],"prompt_token_ids":[1,2,3]},
			{"index":0,"text":"a","finish_reason":"stop","token_ids":[5]}],
			"usage":{"prompt_tokens":3,"completion_tokens":3}}`))
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Choices) != 2 || r.Choices[0].Text != "a" || r.Choices[1].FinishReason != "length" {
			t.Fatalf("choices %+v", r.Choices)
		}
		if got := r.Choices[1]; len(got.TokenIDs) != 2 || got.TokenIDs[1] != 8 || got.Logprobs[0] != -0.5 || got.Logprobs[1] != 0 {
			t.Fatalf("choice 1 %+v", got)
		}
		if len(r.PromptTokenIDs) != 3 || r.Usage.CompletionTokens != 3 {
			t.Fatalf("prompt ids %v usage %+v", r.PromptTokenIDs, r.Usage)
		}
	})
	t.Run("chat token_id strings", func(t *testing.T) {
		r, err := decodeChat([]byte(`{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop",
			"logprobs":{"content":[{"token":"token_id:42","logprob":-1.25},{"token":"token_id:9","logprob":-0.1}]}}],
			"prompt_token_ids":[4,5]}`))
		if err != nil {
			t.Fatal(err)
		}
		c := r.Choices[0]
		if c.Text != "hi" || len(c.TokenIDs) != 2 || c.TokenIDs[0] != 42 || c.Logprobs[0] != -1.25 || len(r.PromptTokenIDs) != 2 {
			t.Fatalf("%+v %v", c, r.PromptTokenIDs)
		}
	})
	t.Run("plain tokens give no ids", func(t *testing.T) {
		r, err := decodeChat([]byte(`{"choices":[{"index":0,"message":{"content":"hi"},"finish_reason":"stop","logprobs":{"content":[{"token":"hi","logprob":-1}]}}]}`))
		if err != nil {
			t.Fatal(err)
		}
		if r.Choices[0].TokenIDs != nil || len(r.Choices[0].Tokens) != 1 {
			t.Fatalf("%+v", r.Choices[0])
		}
	})
	t.Run("no choices", func(t *testing.T) {
		if _, err := decodeChat([]byte(`{"choices":[]}`)); err == nil {
			t.Fatal("want error")
		}
	})
}

// TestRequestBody checks what goes on the wire: auth header, extensions,
// seeds offset per split request, extra fields.
func TestRequestBody(t *testing.T) {
	var mu sync.Mutex
	var bodies []map[string]any
	var auth atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization"))
		b, _ := io.ReadAll(r.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		mu.Lock()
		bodies = append(bodies, m)
		mu.Unlock()
		_, _ = w.Write([]byte(`{"choices":[{"index":0,"text":"x","finish_reason":"stop"}]}`))
	}))
	defer srv.Close()
	cfg := testConfig(srv.URL)
	cfg.APIKey = "sekrit"
	cfg.ReturnTokenIDs = true
	cfg.MaxInFlight = 1 // serialise so bodies are appended in order
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	seed := int64(100)
	res, err := c.Complete(context.Background(), CompletionRequest{Prompt: "p", Sampling: Sampling{
		N: 2, Temperature: 0.7, MaxTokens: 5, Stop: []string{"\n"}, Seed: &seed, Logprobs: true,
		Extra: map[string]any{"top_k": 20}}})
	if err != nil {
		t.Fatal(err)
	}
	if auth.Load() != "Bearer sekrit" {
		t.Fatalf("auth header %v", auth.Load())
	}
	// The server returns one choice for n=2: the client asks again for the
	// second sample with the next seed and remembers the cap.
	if len(res.Choices) != 2 || res.Requests != 2 || len(bodies) != 2 {
		t.Fatalf("choices %d requests %d bodies %d", len(res.Choices), res.Requests, len(bodies))
	}
	first, second := bodies[0], bodies[1]
	if first["n"] != float64(2) || first["seed"] != float64(100) || second["seed"] != float64(101) || second["n"] != nil {
		t.Fatalf("bodies %v / %v", first, second)
	}
	if first["return_token_ids"] != true || first["return_tokens_as_token_ids"] != true || first["top_k"] != float64(20) ||
		first["max_tokens"] != float64(5) || first["model"] != "m" || first["prompt"] != "p" {
		t.Fatalf("body %v", first)
	}
	if c.capN() != 1 {
		t.Fatalf("learned cap %d, want 1", c.capN())
	}
}

// TestRetryExhaustion uses a server that always fails: the call ends with a
// typed error after MaxRetries+1 attempts, and the observer sees each.
func TestRetryExhaustion(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusBadGateway)
	}))
	defer srv.Close()
	var mu sync.Mutex
	var observed []Attempt
	c, err := New(testConfig(srv.URL), WithObserver(func(a Attempt) { mu.Lock(); observed = append(observed, a); mu.Unlock() }))
	if err != nil {
		t.Fatal(err)
	}
	c.cfg.MaxInFlight = 1
	_, err = c.Chat(context.Background(), ChatRequest{Messages: []Message{{Role: "user", Content: "x"}}})
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindServer || e.Attempts != 4 || e.StatusCode != 502 {
		t.Fatalf("err = %v", err)
	}
	if hits.Load() != 4 || len(observed) != 4 || observed[3].Wait != 0 || observed[0].Wait == 0 {
		t.Fatalf("hits %d observed %+v", hits.Load(), observed)
	}
}

func TestContextCancelStopsRetrying(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	c, err := New(testConfig(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = c.Complete(ctx, CompletionRequest{Prompt: "x"})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Fatalf("err %v after %v", err, time.Since(start))
	}
	if !strings.Contains(err.Error(), "rate_limited") {
		t.Fatalf("error does not say what it waited for: %v", err)
	}
}
