package openai_test

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

	"github.com/murphy-rl/murphy/openai"
	"github.com/murphy-rl/murphy/openai/fakeserver"
	"github.com/prometheus/client_golang/prometheus"
)

func startFake(t *testing.T, name string, seqs int, perSeq time.Duration) *fakeserver.Server {
	t.Helper()
	const tokens = 10
	s, err := fakeserver.Start(fakeserver.Config{Name: name, MaxSeqs: seqs, Tokens: tokens,
		TokenRate: tokens / perSeq.Seconds()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func poolConfig(servers ...*fakeserver.Server) openai.PoolConfig {
	pc := openai.DefaultPoolConfig()
	for _, s := range servers {
		pc.Servers = append(pc.Servers, s.URL())
	}
	pc.HealthBackoffInitial, pc.HealthBackoffMax = 50*time.Millisecond, 200*time.Millisecond
	return pc
}

func clientConfig() openai.Config {
	cc := openai.DefaultConfig()
	cc.Model = "m"
	cc.Timeout = 10 * time.Second
	cc.BackoffInitial, cc.BackoffMax = 10*time.Millisecond, 50*time.Millisecond
	cc.ReturnTokenIDs = true
	return cc
}

func newPool(t *testing.T, pc openai.PoolConfig, cc openai.Config) *openai.Pool {
	t.Helper()
	p, err := openai.NewPool(pc, cc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func complete(ctx context.Context, p *openai.Pool, key string, n int) error {
	if key != "" {
		ctx = openai.WithAffinity(ctx, key)
	}
	res, err := p.Complete(ctx, openai.CompletionRequest{Prompt: key, Sampling: openai.Sampling{N: n, MaxTokens: 10}})
	if err == nil && len(res.Choices) != n {
		err = fmt.Errorf("%d choices, want %d", len(res.Choices), n)
	}
	return err
}

// drive keeps conc requests of one sample in flight on p for d.
func drive(t *testing.T, p *openai.Pool, conc int, d time.Duration) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var mu sync.Mutex
	done := 0
	var wg sync.WaitGroup
	for i := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if err := complete(ctx, p, "", 1); err != nil {
					if ctx.Err() == nil {
						t.Errorf("worker %d: %v", i, err)
					}
					return
				}
				mu.Lock()
				done++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return done
}

// TestPoolLimitConvergesToServer: the limit of a pool server settles just
// above the server's batch size, whatever it is, and the server runs full:
// from the server's metrics (vLLM's gauges, as the fake serves them), and
// from throughput when the server exposes none.
func TestPoolLimitConvergesToServer(t *testing.T) {
	for _, metrics := range []bool{true, false} {
		for _, n := range []int{4, 24} {
			t.Run(fmt.Sprintf("%d,metrics=%v", n, metrics), func(t *testing.T) {
				const perSeq = 100 * time.Millisecond
				srv, err := fakeserver.Start(fakeserver.Config{Name: "a", MaxSeqs: n, Tokens: 10, TokenRate: 10 / perSeq.Seconds(), NoMetrics: !metrics})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(srv.Close)
				p := newPool(t, poolConfig(srv), clientConfig())
				d := 3 * time.Second
				if !metrics {
					d = 8 * time.Second // the climb measures each step
				}
				done := drive(t, p, 3*n, d)
				st := p.Servers()[0]
				want := srv.MaxThroughput(10) * d.Seconds()
				t.Logf("server of %d sequences: limit %d (%s), %d done (max %.0f), server at most %d active, %d queued",
					n, st.Limit, st.LimitMode, done, want, srv.Stats().MaxActive, srv.Stats().MaxQueued)
				if mode := map[bool]string{true: "metrics", false: "throughput"}[metrics]; st.LimitMode != mode {
					t.Errorf("limit mode %q, want %q", st.LimitMode, mode)
				}
				if metrics && (st.Load == nil || st.Load.Running < 1) {
					t.Errorf("load %+v", st.Load)
				}
				if st.Limit < n || st.Limit > 2*n+8 {
					t.Errorf("limit %d for a server of %d sequences", st.Limit, n)
				}
				if float64(done) < 0.7*want {
					t.Errorf("%d requests done, the server can do %.0f", done, want)
				}
			})
		}
	}
}

// TestPoolLimitFollowsBatchingServer: on a server whose step time grows
// with its batch (openai/fakeserver.Engine), the limit from its metrics
// fills its KV cache and binds below the clients' demand, keeping a small
// queue. The server's steps (20 ms + 0.2 ms per sequence) are slow enough
// that it, not the clients' CPU, is the bottleneck on a loaded machine.
func TestPoolLimitFollowsBatchingServer(t *testing.T) {
	srv, err := fakeserver.Start(fakeserver.Config{Name: "a", Tokens: 10,
		Engine: fakeserver.Engine{Step: 20 * time.Millisecond, PerSeq: 200 * time.Microsecond, KVTokens: 1200}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	p := newPool(t, poolConfig(srv), clientConfig())
	// An empty prompt holds 1 token of the KV cache, + 10 answered: 109
	// sequences fill it.
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 300 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if err := complete(ctx, p, "", 1); err != nil && ctx.Err() == nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	// The limit fills the KV cache, binds below the 300 clients' demand and
	// keeps a small queue: at most the target (max(4, 5% of running)) and
	// a scrape's growth beyond the cache's 109 sequences.
	deadline := time.Now().Add(30 * time.Second)
	var st openai.ServerStatus
	for {
		st = p.Servers()[0]
		if st.Load != nil && st.Load.Running >= 100 && st.Load.Waiting > 0 && st.Limit <= 100+3*4+8 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("the limit did not settle on the KV cache with a small queue in 30s: limit %d (%s), load %+v", st.Limit, st.LimitMode, st.Load)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	t.Logf("limit %d (%s), server load %+v, at most %d decoding, %d waiting", st.Limit, st.LimitMode, st.Load, srv.Stats().MaxActive, srv.Stats().MaxQueued)
}

// TestPoolAffinity: requests with one key go to one server while it has
// room; when it is full they spill to the others; keys spread.
func TestPoolAffinity(t *testing.T) {
	a, b, c := startFake(t, "a", 64, 5*time.Millisecond), startFake(t, "b", 64, 5*time.Millisecond), startFake(t, "c", 64, 5*time.Millisecond)
	servers := []*fakeserver.Server{a, b, c}
	p := newPool(t, poolConfig(a, b, c), clientConfig())
	ctx := context.Background()
	for k := range 30 {
		for range 4 {
			if err := complete(ctx, p, fmt.Sprintf("tree-%d", k), 2); err != nil {
				t.Fatal(err)
			}
		}
	}
	used := map[string]int{}
	for k := range 30 {
		key := fmt.Sprintf("tree-%d", k)
		var on []string
		for _, s := range servers {
			if s.Stats().Prompts[key] > 0 {
				on = append(on, s.Config().Name)
			}
		}
		if len(on) != 1 {
			t.Fatalf("key %s went to servers %v", key, on)
		}
		used[on[0]]++
	}
	if len(used) != 3 {
		t.Fatalf("30 keys over servers %v", used)
	}

	// Spill: one key, more at once than its server's limit.
	pc := poolConfig(a, b, c)
	pc.Limit.Initial, pc.Limit.Max = 2, 2
	slow := []*fakeserver.Server{startFake(t, "x", 64, 500*time.Millisecond), startFake(t, "y", 64, 500*time.Millisecond)}
	pc.Servers = []string{slow[0].URL(), slow[1].URL()}
	p2 := newPool(t, pc, clientConfig())
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := complete(ctx, p2, "hot", 1); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	x, y := slow[0].Stats().Prompts["hot"], slow[1].Stats().Prompts["hot"]
	if x != 2 || y != 2 {
		t.Fatalf("4 requests of one key at once on servers of limit 2: %d and %d", x, y)
	}
	var affinity, spill uint64
	for _, st := range p2.Servers() {
		affinity += st.Routed["affinity"]
		spill += st.Routed["spill"]
	}
	if affinity != 2 || spill != 2 {
		t.Fatalf("routed %d by affinity, %d spilled", affinity, spill)
	}
}

// TestPoolServersFile: servers added to and removed from the servers file
// get requests and stop getting them without a restart.
func TestPoolServersFile(t *testing.T) {
	a, b := startFake(t, "a", 16, 2*time.Millisecond), startFake(t, "b", 16, 2*time.Millisecond)
	file := filepath.Join(t.TempDir(), "servers")
	write := func(urls ...string) {
		t.Helper()
		tmp := file + ".tmp"
		if err := os.WriteFile(tmp, []byte("# inference servers\n"+strings.Join(urls, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, file); err != nil {
			t.Fatal(err)
		}
	}
	write(a.URL())
	pc := openai.DefaultPoolConfig()
	pc.ServersFile, pc.ServersFileInterval = file, 20*time.Millisecond
	p := newPool(t, pc, clientConfig())
	waitServers := func(want ...string) {
		t.Helper()
		slices.Sort(want)
		deadline := time.Now().Add(5 * time.Second)
		for {
			var have []string
			for _, st := range p.Servers() {
				have = append(have, st.URL)
			}
			if strings.Join(have, " ") == strings.Join(want, " ") {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("servers %v, want %v", have, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	send := func() {
		t.Helper()
		for k := range 20 {
			if err := complete(context.Background(), p, fmt.Sprint("k", k), 1); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitServers(a.URL())
	send()
	if a.Stats().Requests != 20 || b.Stats().Requests != 0 {
		t.Fatalf("requests %d, %d", a.Stats().Requests, b.Stats().Requests)
	}
	write(a.URL(), b.URL())
	waitServers(a.URL(), b.URL())
	send()
	if b.Stats().Requests == 0 {
		t.Fatal("the added server got no request")
	}
	write(b.URL())
	waitServers(b.URL())
	before := a.Stats().Requests
	send()
	if a.Stats().Requests != before {
		t.Fatal("the removed server still got requests")
	}
}

// parallel runs f(0..n-1) at once and fails t on an error.
func parallel(t *testing.T, n int, f func(int) error) {
	t.Helper()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for k := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[k] = f(k)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func status(p *openai.Pool, s *fakeserver.Server) openai.ServerStatus {
	for _, st := range p.Servers() {
		if st.URL == s.URL() {
			return st
		}
	}
	return openai.ServerStatus{}
}

// TestPoolDeadServer: a server killed with requests in flight, and one
// answering 500: every request succeeds on the others; the dead server is
// taken out, checked, and back in once it is up again.
func TestPoolDeadServer(t *testing.T) {
	a, b := startFake(t, "a", 32, 100*time.Millisecond), startFake(t, "b", 32, 100*time.Millisecond)
	reg := prometheus.NewPedanticRegistry()
	p := newPool(t, poolConfig(a, b), clientConfig())
	reg.MustRegister(p)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for k := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- complete(ctx, p, fmt.Sprint("tree-", k), 2)
		}()
	}
	time.Sleep(50 * time.Millisecond)
	a.Stop()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a request failed: %v", err)
		}
	}
	// With a down, everything goes to b.
	parallel(t, 10, func(k int) error { return complete(ctx, p, fmt.Sprint("after-", k), 1) })
	if sa, sb := status(p, a), status(p, b); sa.Healthy || !sb.Healthy {
		t.Fatalf("after a's death: %+v, %+v", sa, sb)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	for _, n := range []string{"murphy_generate_server_errors_total", "murphy_generate_server_in_flight", "murphy_generate_server_limit",
		"murphy_generate_server_healthy", "murphy_generate_server_request_seconds", "murphy_generate_server_routed_total"} {
		if !names[n] {
			t.Errorf("no %s series", n)
		}
	}
	if err := a.Restart(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !status(p, a).Healthy {
		if time.Now().After(deadline) {
			t.Fatal("a is not healthy again after its restart")
		}
		time.Sleep(20 * time.Millisecond)
	}
	before := a.Stats().Requests
	parallel(t, 20, func(k int) error { return complete(ctx, p, fmt.Sprint("back-", k), 1) })
	if a.Stats().Requests == before {
		t.Fatal("the restarted server gets no requests")
	}

	// HTTP 500s: the same.
	b.SetFailing(true)
	parallel(t, 10, func(k int) error { return complete(ctx, p, fmt.Sprint("fail-", k), 1) })
	if st := status(p, b); st.Healthy || st.Errors[openai.KindServer] == 0 {
		t.Fatalf("b answering 500: %+v", st)
	}
	b.SetFailing(false)

	// Every server down: requests fail after the retries, they do not hang.
	a.Stop()
	b.Stop()
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := complete(cctx, p, "none", 1); err == nil || cctx.Err() != nil {
		t.Fatalf("with every server down: %v (ctx %v)", err, cctx.Err())
	}
}
