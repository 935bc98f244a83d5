// Package fakeserver is an OpenAI-compatible inference server with a fixed
// capacity, for tests and benchmarks (it is not a model): it answers
// /v1/chat/completions, /v1/completions and /v1/models like a
// continuous-batching server (vLLM, SGLang).
//
// Capacity model: at most MaxSeqs sequences are decoded at once; a request
// for n samples is n sequences. Each sequence, once admitted, produces
// Tokens tokens (max_tokens when smaller) at TokenRate tokens/s, a rate of
// its own that does not depend on how many others run (the decode step of
// a batch below its size costs the same). Sequences beyond MaxSeqs wait in
// one first-come-first-served queue, as a server's waiting requests do. The
// server's greatest throughput is therefore MaxSeqs × TokenRate / Tokens
// sequences per second, reached with exactly MaxSeqs sequences in flight;
// more only queue (latency grows as in-flight / MaxSeqs).
//
// The text of every sample is the same small Python program (finish_reason
// "stop"); token ids are
// 1..T (returned with return_token_ids, as vLLM does), logprobs -0.5. A
// server can be stopped (its listener and connections closed at once, as a
// killed process) and restarted on the same address, or made to answer
// HTTP 500.
package fakeserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Config configures a Server.
type Config struct {
	// Name is answered as the model name.
	Name string
	// MaxSeqs is the number of sequences decoded at once.
	MaxSeqs int
	// TokenRate is each sequence's tokens per second.
	TokenRate float64
	// Tokens is the length of every response (max_tokens when smaller).
	Tokens int
}

// Stats are a server's counts since it started (kept across restarts).
type Stats struct {
	// Requests answered with samples; Sequences decoded to the end.
	Requests, Sequences int
	// MaxActive is the most sequences decoded at once; MaxQueued the most
	// waiting at once.
	MaxActive, MaxQueued int
	// Active and Queued are the sequences decoding and waiting now.
	Active, Queued int
	// Prompts counts requests by prompt (a completion's prompt, a chat's
	// last message).
	Prompts map[string]int
}

// Server is a running fake server.
type Server struct {
	cfg  Config
	addr string

	mu      sync.Mutex
	srv     *http.Server
	active  int
	queue   []chan struct{}
	failing bool
	stats   Stats
}

// Start starts a server on a free loopback port.
func Start(cfg Config) (*Server, error) {
	if cfg.MaxSeqs < 1 || cfg.TokenRate <= 0 || cfg.Tokens < 1 {
		return nil, fmt.Errorf("fakeserver: need max_seqs >= 1, token_rate > 0, tokens >= 1, got %+v", cfg)
	}
	if cfg.Name == "" {
		cfg.Name = "fake"
	}
	s := &Server{cfg: cfg, stats: Stats{Prompts: map[string]int{}}}
	if err := s.listen("127.0.0.1:0"); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Server) listen(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("fakeserver: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", s.models)
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) { s.sample(w, r, false) })
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { s.sample(w, r, true) })
	srv := &http.Server{Handler: mux}
	s.mu.Lock()
	s.addr, s.srv = ln.Addr().String(), srv
	s.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
	return nil
}

// URL is the server's API root, http://127.0.0.1:PORT/v1.
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return "http://" + s.addr + "/v1"
}

// Config is the server's configuration.
func (s *Server) Config() Config { return s.cfg }

// MaxThroughput is the server's greatest throughput in sequences per
// second for responses of tokens tokens (its own Tokens when 0).
func (s *Server) MaxThroughput(tokens int) float64 {
	if tokens <= 0 || tokens > s.cfg.Tokens {
		tokens = s.cfg.Tokens
	}
	return float64(s.cfg.MaxSeqs) * s.cfg.TokenRate / float64(tokens)
}

// Stop kills the server: the listener and every connection close at once,
// requests in flight get no answer, and it accepts nothing until Restart.
func (s *Server) Stop() {
	s.mu.Lock()
	srv := s.srv
	s.srv = nil
	s.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
}

// Restart starts a stopped server again on its address.
func (s *Server) Restart() error {
	s.mu.Lock()
	running, addr := s.srv != nil, s.addr
	s.mu.Unlock()
	if running {
		return nil
	}
	var err error
	for range 50 { // the port may take a moment to be free again
		if err = s.listen(addr); err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return err
}

// Close stops the server for good.
func (s *Server) Close() { s.Stop() }

// SetFailing makes every request (health checks included) answer HTTP 500
// while on.
func (s *Server) SetFailing(on bool) {
	s.mu.Lock()
	s.failing = on
	s.mu.Unlock()
}

// Stats returns the server's counts.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Active, st.Queued = s.active, len(s.queue)
	st.Prompts = make(map[string]int, len(s.stats.Prompts))
	for k, v := range s.stats.Prompts {
		st.Prompts[k] = v
	}
	return st
}

func (s *Server) isFailing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failing
}

func (s *Server) models(w http.ResponseWriter, _ *http.Request) {
	if s.isFailing() {
		http.Error(w, `{"error":{"message":"failing"}}`, http.StatusInternalServerError)
		return
	}
	writeJSON(w, map[string]any{"object": "list", "data": []any{map[string]any{"id": s.cfg.Name, "object": "model"}}})
}

type request struct {
	N              int    `json:"n"`
	MaxTokens      int    `json:"max_tokens"`
	Prompt         string `json:"prompt"`
	ReturnTokenIDs bool   `json:"return_token_ids"`
	Logprobs       any    `json:"logprobs"`
	Messages       []struct {
		Content string `json:"content"`
	} `json:"messages"`
}

// acquire waits for a decode slot (first come, first served).
func (s *Server) acquire(ctx context.Context) error {
	s.mu.Lock()
	if s.active < s.cfg.MaxSeqs && len(s.queue) == 0 {
		s.active++
		s.stats.MaxActive = max(s.stats.MaxActive, s.active)
		s.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	s.queue = append(s.queue, ch)
	s.stats.MaxQueued = max(s.stats.MaxQueued, len(s.queue))
	s.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		for i, c := range s.queue {
			if c == ch {
				s.queue = append(s.queue[:i], s.queue[i+1:]...)
				s.mu.Unlock()
				return ctx.Err()
			}
		}
		s.mu.Unlock()
		s.release() // granted meanwhile
		return ctx.Err()
	}
}

// release frees a slot: the next waiting sequence takes it.
func (s *Server) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) > 0 {
		ch := s.queue[0]
		s.queue = s.queue[1:]
		close(ch) // the slot passes on: active unchanged
		return
	}
	s.active--
}

func (s *Server) sample(w http.ResponseWriter, r *http.Request, chat bool) {
	var req request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	if s.isFailing() {
		http.Error(w, `{"error":{"message":"failing"}}`, http.StatusInternalServerError)
		return
	}
	n := max(req.N, 1)
	tokens := s.cfg.Tokens
	if req.MaxTokens > 0 {
		tokens = min(tokens, req.MaxTokens)
	}
	prompt := req.Prompt
	if chat && len(req.Messages) > 0 {
		prompt = req.Messages[len(req.Messages)-1].Content
	}
	ctx := r.Context()
	d := time.Duration(float64(tokens) / s.cfg.TokenRate * float64(time.Second))
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = s.acquire(ctx); errs[i] != nil {
				return
			}
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				errs[i] = ctx.Err()
			}
			s.release()
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return // the client went away (or the server was stopped)
		}
	}
	s.mu.Lock()
	s.stats.Requests++
	s.stats.Sequences += n
	s.stats.Prompts[prompt]++
	s.mu.Unlock()
	writeJSON(w, s.response(req, chat, n, tokens, prompt))
}

const program = "```python\ndef solve(*args):\n    return None\n```"

func (s *Server) response(req request, chat bool, n, tokens int, prompt string) map[string]any {
	ids := make([]int, tokens)
	for i := range ids {
		ids[i] = i + 1
	}
	promptIDs := make([]int, len(strings.Fields(prompt))+1)
	for i := range promptIDs {
		promptIDs[i] = 1000 + i
	}
	choices := make([]any, n)
	for i := range choices {
		c := map[string]any{"index": i, "finish_reason": "stop"}
		if req.ReturnTokenIDs {
			c["token_ids"] = ids
		}
		logprobs := req.Logprobs != nil && req.Logprobs != false
		if chat {
			c["message"] = map[string]any{"role": "assistant", "content": program}
			if logprobs {
				content := make([]any, tokens)
				for j := range content {
					content[j] = map[string]any{"token": fmt.Sprintf("token_id:%d", ids[j]), "logprob": -0.5}
				}
				c["logprobs"] = map[string]any{"content": content}
			}
		} else {
			c["text"] = program
			if logprobs {
				toks, lps := make([]string, tokens), make([]float64, tokens)
				for j := range toks {
					toks[j], lps[j] = fmt.Sprintf("token_id:%d", ids[j]), -0.5
				}
				c["logprobs"] = map[string]any{"tokens": toks, "token_logprobs": lps}
			}
		}
		choices[i] = c
	}
	out := map[string]any{"object": "text_completion", "model": s.cfg.Name, "choices": choices,
		"usage": map[string]any{"prompt_tokens": len(promptIDs), "completion_tokens": n * tokens}}
	if chat {
		out["object"] = "chat.completion"
	}
	if req.ReturnTokenIDs {
		out["prompt_token_ids"] = promptIDs
	}
	return out
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
