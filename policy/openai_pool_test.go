package policy

import (
	"context"
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
