package generate

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/openai/openaitest"
	"github.com/murphy-rl/murphy/topics"
	"github.com/prometheus/client_golang/prometheus"
)

// TestOpenAIPolicyOutageMidRun runs the stage with the OpenAI policy against
// a real CPU inference server behind a fault proxy. The server goes away in
// the middle of the run and mid-group; every expected child still exists,
// real or marked infra.inference, and a prompt too long for the model gives
// infra.context_overflow.
func TestOpenAIPolicyOutageMidRun(t *testing.T) {
	srv := openaitest.StartLlama(t)
	proxy := openaitest.NewFaultProxy(t, srv.BaseURL)
	cfg := DefaultConfig()
	cfg.InstanceID = "test"
	cfg.Policy.Kind = PolicyOpenAI
	oc := &cfg.Policy.OpenAI
	oc.API = "completions"
	oc.MaxTokens = 6
	oc.Seed = 11
	oc.TokenizeFallback = true
	oc.Client.BaseURL, oc.Client.Model = proxy.URL+"/v1", srv.Model
	oc.Client.TokenizePath = srv.TokenizePath
	oc.Client.MaxRetries = 2
	oc.Client.BackoffInitial, oc.Client.BackoffMax = 10*time.Millisecond, 20*time.Millisecond
	oc.Client.Timeout = 20 * time.Second
	s, err := NewStage(cfg, nil, testCatalog(), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const g = 3
	task := testTasks()[0]
	run := func(k int) []topics.Candidate {
		t.Helper()
		rec, _ := rootRecord(t, testCatalog(), task, g, k)
		outs, err := s.HandlePrompt(ctx, rec)
		if err != nil {
			t.Fatal(err)
		}
		cs := decodeOuts(t, outs)
		if len(cs) != g {
			t.Fatalf("prompt %d: %d children, want %d", k, len(cs), g)
		}
		for i, c := range cs {
			if c.Index != i || c.NodeID != topics.NodeID(c.TreeID, c.GroupID, i) {
				t.Fatalf("prompt %d child %d: index %d node %s", k, i, c.Index, c.NodeID)
			}
		}
		return cs
	}
	infra := func(cs []topics.Candidate) int {
		n := 0
		for _, c := range cs {
			if c.InfraCause == topics.InfraInference && c.InfraError != "" {
				n++
			} else if c.InfraCause != "" {
				t.Fatalf("unexpected cause %q", c.InfraCause)
			}
		}
		return n
	}

	// Healthy: real samples with token ids (re-tokenised: llama.cpp
	// returns none) and the server's finish reasons.
	healthy := run(0)
	if infra(healthy) != 0 {
		t.Fatal("infra failures with a healthy server")
	}
	for _, c := range healthy {
		if len(c.ResponseTokenIDs) == 0 && c.ResponseText != "" || len(c.PromptTokenIDs) == 0 || !validFinish(c.FinishReason) ||
			c.Policy != "openai:"+srv.Model {
			t.Fatalf("real candidate: %d ids for %q, %d prompt ids, finish %q", len(c.ResponseTokenIDs), c.ResponseText, len(c.PromptTokenIDs), c.FinishReason)
		}
	}

	// Outage: the whole group fails after retries.
	proxy.SetDown(true)
	if n := infra(run(1)); n != g {
		t.Fatalf("%d of %d children marked infra during the outage", n, g)
	}
	// The server dies mid-group. llama.cpp answers one choice per request,
	// so after the first group the client sends one request per child: the
	// first to arrive is answered, the other two fail on every attempt.
	proxy.SetDown(false)
	faults := []openaitest.Fault{{Kind: openaitest.Pass}}
	for i := 0; i < 2*(oc.Client.MaxRetries+1); i++ {
		faults = append(faults, openaitest.Fault{Kind: openaitest.Reset})
	}
	proxy.Inject(faults...)
	mid := run(2)
	if n := infra(mid); n != g-1 || mid[0].InfraCause != "" || proxy.Pending() != 0 {
		t.Fatalf("mid-group outage: %d infra children, first %q", n, mid[0].InfraCause)
	}
	// Recovery.
	if infra(run(3)) != 0 {
		t.Fatal("infra failures after recovery")
	}

	// A prompt that does not fit the 256-token context.
	long := task
	long.Prompt = strings.Repeat("alpha beta gamma delta ", 200)
	rec, _ := rootRecord(t, testCatalog(), long, g, 4)
	outs, err := s.HandlePrompt(ctx, rec)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range decodeOuts(t, outs) {
		if c.InfraCause != topics.InfraContextOverflow {
			t.Fatalf("overflow child cause %q (%s)", c.InfraCause, c.InfraError)
		}
	}
	m := s.Metrics()
	if metricValue(t, m.Failures.WithLabelValues(topics.InfraInference)) < float64(g+1) ||
		metricValue(t, m.Failures.WithLabelValues(topics.InfraContextOverflow)) != g ||
		metricValue(t, m.Retries.WithLabelValues("connection")) == 0 {
		t.Fatal("failure and retry metrics not recorded")
	}
}

func validFinish(r string) bool { return r == "stop" || r == "length" }

// TestVersionsOnRealServer runs the vllm load hook against llama.cpp's
// server (llama-cpp-python), as far as its API goes: it has no runtime
// adapters, so a version whose model the server lists already (its model
// alias) is served without a load call, and one it does not list is
// refused by the server (404 on /v1/load_lora_adapter): that version is
// not served, the previous one stays, and generation goes on with it.
func TestVersionsOnRealServer(t *testing.T) {
	srv := openaitest.StartLlama(t)
	cfg := DefaultConfig()
	cfg.InstanceID = "test"
	cfg.Policy.Kind = PolicyOpenAI
	oc := &cfg.Policy.OpenAI
	oc.API, oc.MaxTokens, oc.Seed, oc.TokenizeFallback = "completions", 4, 3, true
	oc.Client.BaseURL, oc.Client.Model, oc.Client.TokenizePath = srv.BaseURL, srv.Model, srv.TokenizePath
	oc.Client.Timeout = 20 * time.Second
	cfg.Versions.Follow = true
	cfg.Versions.Load.Preset = LoadVLLM
	cfg.Versions.Load.Attempts, cfg.Versions.Load.Backoff = 1, time.Millisecond
	s, err := NewStage(cfg, nil, testCatalog(), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	dir := t.TempDir()
	listed := &topics.PolicyVersion{SchemaVersion: topics.SchemaVersion, Version: 1, Model: srv.Model, CheckpointURI: dir}
	if err := s.ObserveVersion(ctx, listed); err != nil {
		t.Fatalf("a version the server lists: %v", err)
	}
	unknown := &topics.PolicyVersion{SchemaVersion: topics.SchemaVersion, Version: 2, Model: srv.Model + "-v2", CheckpointURI: dir}
	err = s.ObserveVersion(ctx, unknown)
	var le *LoadError
	if !errors.As(err, &le) || le.Status != http.StatusNotFound || le.Version != 2 {
		t.Fatalf("a version the server cannot load: %v", err)
	}
	if v := s.servedVersion(); v != 1 {
		t.Fatalf("serving version %d, want 1", v)
	}
	rec, _ := rootRecord(t, testCatalog(), testTasks()[0], 2, 0)
	outs, err := s.HandlePrompt(ctx, rec)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range decodeOuts(t, outs) {
		if c.InfraCause != "" || c.PolicyVersion != 1 || c.Policy != "openai:"+srv.Model {
			t.Fatalf("candidate: %s %s, version %d, policy %s", c.InfraCause, c.InfraError, c.PolicyVersion, c.Policy)
		}
	}
}
