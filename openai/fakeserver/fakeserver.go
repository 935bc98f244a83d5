// Package fakeserver is an OpenAI-compatible inference server with a fixed
// capacity, for tests and benchmarks (it is not a model): it answers
// /v1/chat/completions, /v1/completions and /v1/models like a
// continuous-batching server (vLLM, SGLang), and GET /metrics with vLLM's
// scheduler gauges (metrics.go).
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
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
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
	// LoRA serves LoRA adapters loaded at run time as vLLM does
	// (adapters.go): only the base model (Name) and the adapters loaded
	// answer; others get vLLM's 404.
	LoRA bool
	// Weights serves full weights updated at run time as SGLang does
	// (weights.go): pause and continue generation, update weights from
	// disk; every name answers with the weights loaded.
	Weights bool
	// CheckAdapter, when set, checks a LoRA adapter's or weights' path
	// before it is loaded (the fake does not load weights): an error is
	// answered as vLLM or SGLang answers a path it cannot load.
	CheckAdapter func(path string) error
	// Answer, when set, is the text of sample i for a request naming
	// model (with Weights: the weights' version label) whose messages
	// (concatenated) or prompt is prompt; default: a small Python program.
	Answer func(model, prompt string, i int) string
	// Tokenize, when set, gives the token ids of the answers and prompts
	// (default: 1..n for an answer, 1000.. per word for a prompt).
	Tokenize func(text string) []int
	// Record, when set, is called with the path and body of every
	// completion request (e.g. to replay a workload's requests).
	Record func(path string, body []byte)
	// NoMetrics turns off GET /metrics (metrics.go: vLLM's scheduler
	// gauges), as a server that exposes none.
	NoMetrics bool
	// Engine, when its Step is set, decodes in continuous batches whose
	// step time grows with the batch, within a KV cache, with a prefix
	// cache (engine.go); MaxSeqs and TokenRate are then not used.
	Engine Engine
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
	// Models counts requests answered by the model they named (with
	// Weights: by the weights' version label); Unknown those refused
	// because the model is not served (LoRA).
	Models, Unknown map[string]int
	// Loads and Unloads are the adapters (or weights) loaded and unloaded,
	// in order; Loaded those loaded now and MaxLoaded the most at once
	// (LoRA).
	Loads, Unloads []string
	Loaded         []string
	MaxLoaded      int
	// Aborted counts samples aborted by pause_generation; Straddled those
	// answered by other weights than they started with (Weights).
	Aborted, Straddled int
	// PrefixLookups counts sequences admitted by the engine, PrefixHits
	// those whose first message was in its prefix cache.
	PrefixLookups, PrefixHits int
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
	// adapters: LoRA name → path (LoRA); weights: the weights' version
	// label (Weights); paused: new requests wait (pause modes retract and
	// in_place); abort: closed to abort the requests in flight.
	adapters map[string]string
	weights  string
	paused   chan struct{}
	abort    chan struct{}
	// eng is the engine's state (Config.Engine); stop ends its loop.
	eng  engineState
	stop chan struct{}
}

// Start starts a server on a free loopback port.
func Start(cfg Config) (*Server, error) {
	engine := cfg.Engine.Step > 0
	if !engine && (cfg.MaxSeqs < 1 || cfg.TokenRate <= 0) || cfg.Tokens < 1 || engine && cfg.Engine.KVTokens < 1 {
		return nil, fmt.Errorf("fakeserver: need max_seqs >= 1 and token_rate > 0 (or an engine with kv_tokens >= 1), tokens >= 1, got %+v", cfg)
	}
	if cfg.Name == "" {
		cfg.Name = "fake"
	}
	s := &Server{cfg: cfg, stats: Stats{Prompts: map[string]int{}, Models: map[string]int{}, Unknown: map[string]int{}},
		adapters: map[string]string{}, abort: make(chan struct{}), stop: make(chan struct{}),
		eng: engineState{wake: make(chan struct{}, 1), cache: map[string]*list.Element{}, lru: list.New()}}
	if engine {
		go s.engineLoop(s.stop)
	}
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
	if !s.cfg.NoMetrics {
		mux.HandleFunc("GET /metrics", s.metrics)
	}
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) { s.sample(w, r, false) })
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { s.sample(w, r, true) })
	if s.cfg.LoRA {
		mux.HandleFunc("POST /v1/load_lora_adapter", s.loadAdapter)
		mux.HandleFunc("POST /v1/unload_lora_adapter", s.unloadAdapter)
	}
	if s.cfg.Weights {
		mux.HandleFunc("POST /pause_generation", s.pauseGeneration)
		mux.HandleFunc("POST /continue_generation", s.continueGeneration)
		mux.HandleFunc("POST /update_weights_from_disk", s.updateWeights)
	}
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
	if s.cfg.Engine.Step > 0 {
		return 0 // not known in advance: measure it
	}
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

// Crash stops the server as Stop does and forgets what was loaded at run
// time (a restarted vLLM has none of its runtime adapters, a restarted
// SGLang its startup weights): Restart brings it back without them.
func (s *Server) Crash() {
	s.Stop()
	s.mu.Lock()
	s.adapters = map[string]string{}
	s.weights = ""
	s.paused = nil
	s.mu.Unlock()
}

// Close stops the server for good.
func (s *Server) Close() {
	s.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
}

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
	st.Active, st.Queued = s.active, len(s.queue)+len(s.eng.waiting)
	st.Prompts, st.Models, st.Unknown = maps.Clone(s.stats.Prompts), maps.Clone(s.stats.Models), maps.Clone(s.stats.Unknown)
	st.Loads, st.Unloads = slices.Clone(s.stats.Loads), slices.Clone(s.stats.Unloads)
	st.Loaded = slices.Sorted(maps.Keys(s.adapters))
	return st
}

func (s *Server) isFailing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failing
}

// models answers GET /v1/models as vLLM does: the base model, then every
// LoRA adapter loaded, with its path as root and the base as parent.
func (s *Server) models(w http.ResponseWriter, _ *http.Request) {
	if s.isFailing() {
		http.Error(w, `{"error":{"message":"failing"}}`, http.StatusInternalServerError)
		return
	}
	s.mu.Lock()
	data := []any{map[string]any{"id": s.cfg.Name, "object": "model", "owned_by": "vllm", "root": s.cfg.Name}}
	for _, name := range slices.Sorted(maps.Keys(s.adapters)) {
		data = append(data, map[string]any{"id": name, "object": "model", "owned_by": "vllm", "root": s.adapters[name], "parent": s.cfg.Name})
	}
	s.mu.Unlock()
	writeJSON(w, map[string]any{"object": "list", "data": data})
}

type request struct {
	Model          string `json:"model"`
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
	body, err := io.ReadAll(r.Body)
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	if s.cfg.Record != nil {
		s.cfg.Record(r.URL.Path, body)
	}
	if s.isFailing() {
		http.Error(w, `{"error":{"message":"failing"}}`, http.StatusInternalServerError)
		return
	}
	if !s.serves(req.Model) {
		s.mu.Lock()
		s.stats.Unknown[req.Model]++
		s.mu.Unlock()
		vllmError(w, http.StatusNotFound, "NotFoundError", "The model `"+req.Model+"` does not exist.")
		return
	}
	ctx := r.Context()
	if err := s.waitUnpaused(ctx); err != nil {
		return
	}
	n := max(req.N, 1)
	tokens := s.cfg.Tokens
	if req.MaxTokens > 0 {
		tokens = min(tokens, req.MaxTokens)
	}
	prompt, full := req.Prompt, req.Prompt
	if chat && len(req.Messages) > 0 {
		prompt = req.Messages[len(req.Messages)-1].Content
		var b strings.Builder
		for _, m := range req.Messages {
			b.WriteString(m.Content)
		}
		full = b.String()
	}
	s.mu.Lock()
	startWeights, abort := s.weights, s.abort
	s.mu.Unlock()
	var partial []int
	var aborted bool
	if s.cfg.Engine.Step > 0 {
		first := ""
		if chat && len(req.Messages) > 0 {
			first = req.Messages[0].Content
		}
		partial, aborted, err = s.engineSubmit(ctx, n, tokens, first, full, abort)
	} else {
		partial, aborted, err = s.decode(ctx, n, tokens, abort)
	}
	if err != nil {
		return // the client went away (or the server was stopped)
	}
	s.mu.Lock()
	answeredBy := req.Model
	if s.cfg.Weights {
		answeredBy = s.weights
		if s.weights != startWeights && !aborted {
			s.stats.Straddled += n
		}
	}
	if aborted {
		s.stats.Aborted += n
	} else {
		s.stats.Requests++
		s.stats.Sequences += n
		s.stats.Prompts[prompt]++
		s.stats.Models[answeredBy]++
	}
	s.mu.Unlock()
	writeJSON(w, s.response(req, chat, n, tokens, full, answeredBy, partial, aborted))
}

// decode runs n sequences of tokens tokens each through the decode slots;
// aborted when abort closed first (partial: the tokens each had decoded).
func (s *Server) decode(ctx context.Context, n, tokens int, abort chan struct{}) (partial []int, aborted bool, err error) {
	d := time.Duration(float64(tokens) / s.cfg.TokenRate * float64(time.Second))
	var wg sync.WaitGroup
	errs := make([]error, n)
	var ab sync.Once
	partial = make([]int, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = s.acquire(ctx); errs[i] != nil {
				return
			}
			t := time.NewTimer(d)
			began := time.Now()
			select {
			case <-t.C:
			case <-abort:
				t.Stop()
				partial[i] = min(tokens, int(time.Since(began).Seconds()*s.cfg.TokenRate))
				ab.Do(func() { aborted = true })
			case <-ctx.Done():
				t.Stop()
				errs[i] = ctx.Err()
			}
			s.release()
		}()
	}
	wg.Wait()
	return partial, aborted, errors.Join(errs...)
}

const program = "```python\ndef solve(*args):\n    return None\n```"

func (s *Server) tokenize(text string, answer bool) []int {
	if s.cfg.Tokenize != nil {
		return s.cfg.Tokenize(text)
	}
	if answer {
		return nil
	}
	ids := make([]int, len(strings.Fields(text))+1)
	for i := range ids {
		ids[i] = 1000 + i
	}
	return ids
}

// response is the answer to req. Aborted samples are answered as SGLang's
// OpenAI-compatible API answers a request aborted by pause_generation
// (python/sglang/srt/entrypoints/openai/protocol.py: finish_reason is one
// of "stop", "length", "tool_calls", "content_filter", "function_call",
// "abort", the type of the request's meta_info.finish_reason; the choice
// keeps what was decoded before the abort, matched_stop null).
func (s *Server) response(req request, chat bool, n, tokens int, prompt, answeredBy string, partial []int, aborted bool) map[string]any {
	promptIDs := s.tokenize(prompt, false)
	choices := make([]any, n)
	completion := 0
	for i := range choices {
		text := program
		if s.cfg.Answer != nil {
			text = s.cfg.Answer(answeredBy, prompt, i)
		}
		ids := s.tokenize(text, true)
		if ids == nil {
			ids = make([]int, tokens)
			for j := range ids {
				ids[j] = j + 1
			}
		}
		finish := "stop"
		if aborted {
			k := 0
			if i < len(partial) {
				k = min(partial[i], len(ids))
			}
			text, ids, finish = text[:len(text)*k/max(len(ids), 1)], ids[:k], "abort"
		}
		completion += len(ids)
		choices[i] = choice(req, chat, i, text, ids, finish)
		if aborted {
			choices[i].(map[string]any)["matched_stop"] = nil
		}
	}
	out := map[string]any{"object": "text_completion", "model": req.Model, "choices": choices,
		"usage": map[string]any{"prompt_tokens": len(promptIDs), "completion_tokens": completion}}
	if out["model"] == "" {
		out["model"] = s.cfg.Name
	}
	if chat {
		out["object"] = "chat.completion"
	}
	if req.ReturnTokenIDs {
		out["prompt_token_ids"] = promptIDs
	}
	return out
}

func choice(req request, chat bool, i int, text string, ids []int, finish string) map[string]any {
	c := map[string]any{"index": i, "finish_reason": finish}
	if req.ReturnTokenIDs {
		c["token_ids"] = ids
	}
	logprobs := req.Logprobs != nil && req.Logprobs != false
	if chat {
		c["message"] = map[string]any{"role": "assistant", "content": text}
		if logprobs {
			content := make([]any, len(ids))
			for j := range content {
				content[j] = map[string]any{"token": fmt.Sprintf("token_id:%d", ids[j]), "logprob": -0.5}
			}
			c["logprobs"] = map[string]any{"content": content}
		}
		return c
	}
	c["text"] = text
	if logprobs {
		toks, lps := make([]string, len(ids)), make([]float64, len(ids))
		for j := range toks {
			toks[j], lps[j] = fmt.Sprintf("token_id:%d", ids[j]), -0.5
		}
		c["logprobs"] = map[string]any{"tokens": toks, "token_logprobs": lps}
	}
	return c
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
