package generate

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/openai/fakeserver"
	"github.com/murphy-rl/murphy/topics"
	"github.com/prometheus/client_golang/prometheus"
)

// adapterDir writes a directory that passes a server's check of a PEFT
// LoRA adapter (the fake checks the files, it loads no weights).
func adapterDir(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for f, body := range map[string]string{"adapter_config.json": `{"peft_type": "LORA", "r": 8}`, "adapter_model.safetensors": "x"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func answeredBy(model, _ string, i int) string {
	return fmt.Sprintf("```python\n# answered by %s\ndef f():\n    return %d\n```", model, i)
}

func startServers(t *testing.T, n int, lora, weights bool) []*fakeserver.Server {
	t.Helper()
	var out []*fakeserver.Server
	for range n {
		s, err := fakeserver.Start(fakeserver.Config{Name: "base", MaxSeqs: 16, TokenRate: 2000, Tokens: 8,
			LoRA: lora, Weights: weights, Answer: answeredBy})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		out = append(out, s)
	}
	return out
}

func poolStage(t *testing.T, servers []*fakeserver.Server, mut func(*Config)) *Stage {
	t.Helper()
	cfg := DefaultConfig()
	cfg.InstanceID = "test"
	cfg.Policy.Kind = PolicyOpenAI
	oc := &cfg.Policy.OpenAI
	oc.MaxTokens, oc.Logprobs = 8, false
	oc.Client.Model = "base"
	oc.Client.ReturnTokenIDs = true
	oc.Client.MaxRetries = 6
	oc.Client.BackoffInitial, oc.Client.BackoffMax = 20*time.Millisecond, 200*time.Millisecond
	oc.Pool.HealthBackoffInitial, oc.Pool.HealthBackoffMax = 20*time.Millisecond, 200*time.Millisecond
	for _, s := range servers {
		oc.Pool.Servers = append(oc.Pool.Servers, s.URL())
	}
	cfg.Versions.Follow = true
	cfg.Versions.Load.Preset = LoadVLLM
	cfg.Versions.Load.Attempts, cfg.Versions.Load.Backoff = 2, 10*time.Millisecond
	cfg.Versions.Load.Keep = 2
	if mut != nil {
		mut(&cfg)
	}
	s, err := NewStage(cfg, nil, testCatalog(), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// generateRoot generates root prompt k and checks that every child was
// written by the model of the version it records.
func generateRoot(t *testing.T, s *Stage, k int, name func(int64) string) []topics.Candidate {
	t.Helper()
	rec, _ := rootRecord(t, testCatalog(), testTasks()[0], 2, k)
	outs, err := s.HandlePrompt(context.Background(), rec)
	if err != nil {
		t.Fatal(err)
	}
	cs := decodeOuts(t, outs)
	for _, c := range cs {
		if c.InfraCause != "" {
			t.Fatalf("prompt %d: %s: %s", k, c.InfraCause, c.InfraError)
		}
		if want := "# answered by " + name(c.PolicyVersion); !strings.Contains(c.ResponseText, want) {
			t.Fatalf("prompt %d: stamped version %d, answer %q", k, c.PolicyVersion, c.ResponseText)
		}
	}
	return cs
}

// TestVersionsOnVLLMPool: versions are loaded on every member of a pool of
// vLLM-like servers (openai/fakeserver answers as vLLM 0.8 does) before
// they are used; a second generate process finds them listed or "already
// loaded"; a server that lost its adapters in a restart answers "model
// not found", its requests fail over and it loads them again; a server
// added later loads them before it gets a request; versions no tree can
// use any more are unloaded, the count staying within keep.
func TestVersionsOnVLLMPool(t *testing.T) {
	servers := startServers(t, 2, true, false)
	name := func(v int64) string {
		if v == 0 {
			return "base"
		}
		return fmt.Sprintf("run-v%d", v)
	}
	version := func(v int64) *topics.PolicyVersion {
		return &topics.PolicyVersion{SchemaVersion: topics.SchemaVersion, Version: v, Model: name(v), CheckpointURI: adapterDir(t, name(v))}
	}
	a := poolStage(t, servers, nil)
	b := poolStage(t, servers, nil)
	ctx := context.Background()
	generateRoot(t, a, 0, name) // version 0: the base model, nothing to load
	for _, s := range []*Stage{a, b} {
		if err := s.ObserveVersion(ctx, version(1)); err != nil {
			t.Fatal(err)
		}
	}
	for i, srv := range servers {
		if st := srv.Stats(); !slices.Equal(st.Loads, []string{"run-v1"}) {
			t.Fatalf("server %d loads %v, want run-v1 once (the second process found it listed)", i, st.Loads)
		}
	}
	for k := 1; k <= 4; k++ {
		if cs := generateRoot(t, b, k, name); cs[0].PolicyVersion != 1 {
			t.Fatalf("prompt %d at version %d, want 1", k, cs[0].PolicyVersion)
		}
	}

	// Server 0 restarts and loses its adapters: its requests for run-v1
	// fail over, and it loads run-v1 again.
	servers[0].Crash()
	if err := servers[0].Restart(); err != nil {
		t.Fatal(err)
	}
	for k := 5; k < 25; k++ {
		generateRoot(t, a, k, name)
	}
	waitFor(t, func() bool { return slices.Contains(servers[0].Stats().Loaded, "run-v1") })
	if st := servers[0].Stats(); st.Unknown["run-v1"] == 0 || st.Models["run-v1"] == 0 {
		t.Fatalf("the restarted server: %v refused, %v answered (want run-v1 refused, then loaded and answered)", st.Unknown, st.Models)
	}

	// A third server joins: it loads run-v1 before any request reaches it.
	third := startServers(t, 1, true, false)[0]
	pool := a.vers.where.pool
	if err := pool.SetServers([]string{servers[0].URL(), servers[1].URL(), third.URL()}); err != nil {
		t.Fatal(err)
	}
	for k := 25; k < 45; k++ {
		generateRoot(t, a, k, name)
	}
	if st := third.Stats(); len(st.Unknown) > 0 || !slices.Equal(st.Loads, []string{"run-v1"}) {
		t.Fatalf("the added server: loads %v, refused %v", st.Loads, st.Unknown)
	}

	// Versions 2..5: each loaded everywhere before it is used; the older
	// ones unloaded, at most keep (2) plus the one loading at once.
	for v := int64(2); v <= 5; v++ {
		if err := a.ObserveVersion(ctx, version(v)); err != nil {
			t.Fatal(err)
		}
		if cs := generateRoot(t, a, int(100+v), name); cs[0].PolicyVersion != v {
			t.Fatalf("after version %d: prompt at %d", v, cs[0].PolicyVersion)
		}
	}
	waitFor(t, func() bool {
		for _, srv := range []*fakeserver.Server{servers[1], third} {
			if !slices.Equal(srv.Stats().Loaded, []string{"run-v4", "run-v5"}) {
				return false
			}
		}
		return true
	})
	for i, srv := range append(servers, third) {
		if st := srv.Stats(); st.MaxLoaded > 3 {
			t.Errorf("server %d: %d adapters at once, keep is 2", i, st.MaxLoaded)
		}
	}
}

// TestVersionsOnSGLang: full weights are updated with generation paused on
// each server (openai/fakeserver answers as SGLang's pause_generation,
// update_weights_from_disk and continue_generation), while prompts are
// generated; no request straddles an update, and every candidate records
// the version of the weights that answered it.
func TestVersionsOnSGLang(t *testing.T) {
	servers := startServers(t, 2, false, true)
	s := poolStage(t, servers, func(c *Config) {
		c.Versions.Load.Preset = LoadSGLang
		c.Versions.InFlight = InFlightRestart
	})
	name := func(v int64) string {
		if v == 0 {
			return "" // the startup weights have no label
		}
		return fmt.Sprint(v)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; ctx.Err() == nil; k++ {
				rec, _ := rootRecord(t, testCatalog(), testTasks()[0], 2, w*1000+k)
				outs, err := s.HandlePrompt(ctx, rec)
				if err != nil {
					return
				}
				for _, c := range decodeOuts(t, outs) {
					if c.InfraCause == "" && !strings.Contains(c.ResponseText, "# answered by "+name(c.PolicyVersion)+"\n") {
						select {
						case errs <- fmt.Errorf("stamped %d, answer %q", c.PolicyVersion, c.ResponseText):
						default:
						}
					}
				}
			}
		}()
	}
	for v := int64(1); v <= 4; v++ {
		time.Sleep(50 * time.Millisecond) // requests in flight at every update
		pv := &topics.PolicyVersion{SchemaVersion: topics.SchemaVersion, Version: v, Model: "base", CheckpointURI: adapterDir(t, fmt.Sprint("w", v))}
		if err := s.ObserveVersion(ctx, pv); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(50 * time.Millisecond)
	cancel()
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	for i, srv := range servers {
		st := srv.Stats()
		t.Logf("server %d: %d samples aborted by a pause, answers by weights %v", i, st.Aborted, st.Models)
		if st.Straddled != 0 || srv.WeightsVersion() != "4" || st.Models["4"] == 0 {
			t.Fatalf("server %d: %d samples straddled an update, weights %q, answers by weights %v", i, st.Straddled, srv.WeightsVersion(), st.Models)
		}
	}
}
