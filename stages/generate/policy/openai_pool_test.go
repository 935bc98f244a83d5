package policy

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/openai/fakeserver"
	"github.com/murphy-rl/murphy/topics"
	"github.com/prometheus/client_golang/prometheus"
)

// TestOpenAIPoolPolicy: the OpenAI policy over a pool of two servers
// samples every child, sends a tree's root group and refinements to one
// server, reports the pool's capacity and registers its metrics.
func TestOpenAIPoolPolicy(t *testing.T) {
	var servers []*fakeserver.Server
	cfg := DefaultOpenAIConfig()
	for _, name := range []string{"a", "b"} {
		s, err := fakeserver.Start(fakeserver.Config{Name: name, MaxSeqs: 16, TokenRate: 2000, Tokens: 8})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		servers = append(servers, s)
		cfg.Pool.Servers = append(cfg.Pool.Servers, s.URL())
	}
	cfg.Client.Model, cfg.Client.ReturnTokenIDs, cfg.MaxTokens = "m", true, 8
	o, err := NewOpenAI(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.Close)
	if err := o.RegisterMetrics(prometheus.NewRegistry()); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	capacity := 0
	o.WatchCapacity(func(n int) {
		mu.Lock()
		capacity = n
		mu.Unlock()
	})
	ctx := context.Background()
	for k := range 12 {
		tree := topics.TreeID("run", "task", k)
		root := &topics.Prompt{TreeID: tree, GroupID: topics.RootID(tree), Text: "root " + tree, GroupSize: 3}
		refine := &topics.Prompt{TreeID: tree, GroupID: "n1", ParentID: "n1", Turn: 1, GroupSize: 2,
			Messages: []topics.Message{{Role: "user", Content: "root " + tree}, {Role: "assistant", Content: "x"}, {Role: "user", Content: "refine " + tree}}}
		for _, p := range []*topics.Prompt{root, refine} {
			ids := make([]string, p.GroupSize)
			for i := range ids {
				ids[i] = topics.NodeID(p.TreeID, p.GroupID, i)
			}
			smp, err := o.Generate(ctx, Request{Prompt: p, NodeIDs: ids})
			if err != nil || len(smp) != p.GroupSize || len(smp[0].TokenIDs) != 8 {
				t.Fatalf("%s: %d samples, %v", tree, len(smp), err)
			}
		}
		var on []string
		for _, s := range servers {
			st := s.Stats()
			if st.Prompts["root "+tree] > 0 && st.Prompts["refine "+tree] > 0 {
				on = append(on, s.Config().Name)
			}
		}
		if len(on) != 1 {
			t.Fatalf("tree %s: root and refinement together on %v", tree, on)
		}
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		mu.Lock()
		c := capacity
		mu.Unlock()
		if c >= PromptCapacity(2*cfg.Pool.Limit.Min, 3) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("capacity %d", c)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if o.Client() == nil || o.Pool() == nil {
		t.Fatal("no client")
	}
}

// TestOpenAIForModel: a policy for another model name shares its base's
// server pool (one set of limits for every version), names its model in
// every request, and closing it leaves the base's pool running.
func TestOpenAIForModel(t *testing.T) {
	var mu sync.Mutex
	models := map[string]int{}
	cfg := DefaultOpenAIConfig()
	for range 2 {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var body struct {
				Model string `json:"model"`
				N     int    `json:"n"`
			}
			if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			mu.Lock()
			models[body.Model]++
			mu.Unlock()
			choices := []map[string]any{}
			for i := range max(body.N, 1) {
				choices = append(choices, map[string]any{"index": i, "text": "def f():\n    return 1\n", "finish_reason": "stop"})
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"object": "text_completion", "model": body.Model, "choices": choices})
		}))
		t.Cleanup(srv.Close)
		cfg.Pool.Servers = append(cfg.Pool.Servers, srv.URL)
	}
	cfg.Client.Model = "run-v1"
	base, err := NewOpenAI(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(base.Close)
	v2 := base.ForModel("run-v2")
	v3 := v2.ForModel("run-v3")
	if v2.Pool() != base.Pool() || v3.Pool() != base.Pool() {
		t.Fatal("a policy for another model runs its own pool")
	}
	if v3.Name() != "openai:run-v3" || v3.Version() != base.Version() {
		t.Fatalf("ForModel: name %s version %d", v3.Name(), v3.Version())
	}
	gen := func(p *OpenAI) {
		t.Helper()
		tree := topics.TreeID("run", "task", 0)
		pr := &topics.Prompt{TreeID: tree, GroupID: topics.RootID(tree), Text: "x", GroupSize: 2}
		ids := []string{topics.NodeID(tree, pr.GroupID, 0), topics.NodeID(tree, pr.GroupID, 1)}
		if smp, err := p.Generate(context.Background(), Request{Prompt: pr, NodeIDs: ids}); err != nil || len(smp) != 2 {
			t.Fatalf("%s: %d samples, %v", p.Name(), len(smp), err)
		}
	}
	gen(base)
	gen(v2)
	v2.Close()
	gen(v3)
	gen(base)
	mu.Lock()
	defer mu.Unlock()
	if models["run-v1"] != 2 || models["run-v2"] != 1 || models["run-v3"] != 1 || len(models) != 3 {
		t.Fatalf("requests by model %v, want run-v1 2, run-v2 1, run-v3 1", models)
	}
}
