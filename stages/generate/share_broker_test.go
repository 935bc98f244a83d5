package generate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/pipeline/pipelinetest"
	"github.com/murphy-rl/murphy/stages/generate/policy"
	"github.com/murphy-rl/murphy/tasks"
	"github.com/murphy-rl/murphy/tasks/submit"
	"github.com/murphy-rl/murphy/topics"
	"github.com/prometheus/client_golang/prometheus"
)

// slowPolicy is a policy whose every call takes delay (an inference
// server's latency), recording which tree each call was for.
type slowPolicy struct {
	policy.Policy
	delay time.Duration
	mu    sync.Mutex
	calls []string
}

func (p *slowPolicy) Generate(ctx context.Context, req policy.Request) ([]policy.Sample, error) {
	p.mu.Lock()
	p.calls = append(p.calls, req.Prompt.TreeID)
	p.mu.Unlock()
	select {
	case <-time.After(p.delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return p.Policy.Generate(ctx, req)
}

func (p *slowPolicy) Calls() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.calls...)
}

// TestBackfillShareOnBroker runs the generate stage on the real broker with
// a backlog of live root prompts (topic prompts) and one of backfill root
// prompts (topic backfill-prompts), and measures the fraction of prompts
// generated for backfill while both streams were backlogged: it is the
// configured share.
func TestBackfillShareOnBroker(t *testing.T) {
	brokers := pipelinetest.Brokers(t)
	const (
		g, conc, perStream = 2, 8, 600
		share              = 0.25
		tolerance          = 0.05
	)
	cat := pipelinetest.Catalog(t, brokers, 4)
	kcfg := pipelinetest.Kafka(brokers)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var live, bf []topics.Task
	for i := range perStream {
		a, b := testTasks()[0], testTasks()[1]
		a.TaskID, b.TaskID = fmt.Sprintf("live/%d", i), fmt.Sprintf("bf/%d", i)
		live, bf = append(live, a), append(bf, b)
	}

	sim, err := policy.NewSimulated(policy.DefaultSimulatedConfig())
	if err != nil {
		t.Fatal(err)
	}
	pol := &slowPolicy{Policy: sim, delay: 20 * time.Millisecond}
	cfg := DefaultConfig()
	cfg.InstanceID, cfg.Concurrency, cfg.MaxTreesInFlight, cfg.BackfillShare = "test", conc, 0, share
	reg := prometheus.NewRegistry()
	rt, err := pipeline.NewRuntime(pipeline.RuntimeConfig{Kafka: kcfg, Catalog: cat, Name: "generate-share-test",
		Registry: reg, GroupPrefix: cat.Prefix})
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewStageWithPolicy(cfg, pol, tasks.NewMemory(append(append([]topics.Task{}, live...), bf...)), cat, reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range s.Specs() {
		if err := rt.AddStage(spec); err != nil {
			t.Fatal(err)
		}
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- rt.Run(runCtx) }()
	defer func() {
		stop()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("runtime: %v", err)
		}
	}()
	for !rt.Ready() {
		if ctx.Err() != nil {
			t.Fatal("stage never ready")
		}
		time.Sleep(20 * time.Millisecond)
	}

	// Both backlogs at once.
	prod := pipeline.NewProducer(kcfg)
	defer prod.Close()
	sc := submit.DefaultConfig()
	sc.GroupSize = g
	var wg sync.WaitGroup
	for _, st := range []struct {
		run   string
		ts    []topics.Task
		topic topics.Name
	}{{"live", live, topics.Prompts}, {"bf", bf, topics.BackfillPrompts}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := sc
			c.RunID = st.run
			if _, err := submit.Publish(ctx, prod, cat, c, st.ts, 0, submit.PromptsTo(st.topic)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	pipelinetest.ReadN(t, brokers, cat.Topic(topics.Candidates), 2*perStream*g, 2*time.Minute)

	calls := pol.Calls()
	if len(calls) != 2*perStream {
		t.Fatalf("%d policy calls, want %d", len(calls), 2*perStream)
	}
	// The window where both streams were backlogged: from the first call
	// after both had started to the last call of the stream that ran out
	// first.
	first, last := map[string]int{}, map[string]int{}
	for i, tree := range calls {
		st, _, _ := strings.Cut(tree, "/")
		if _, ok := first[st]; !ok {
			first[st] = i
		}
		last[st] = i
	}
	from, to := max(first["live"], first["bf"]), min(last["live"], last["bf"])
	n, nb := 0, 0
	for _, tree := range calls[from : to+1] {
		n++
		if strings.HasPrefix(tree, "bf/") {
			nb++
		}
	}
	frac := float64(nb) / float64(n)
	started := func(stream string) float64 { return metricValue(t, s.Metrics().Started.WithLabelValues(stream)) }
	t.Logf("both backlogged for calls %d..%d: %d live, %d backfill prompts generated: backfill %.3f of capacity (configured %.2f); started live %.0f, backfill %.0f",
		from, to, n-nb, nb, frac, share, started("live"), started("backfill"))
	if n < perStream/2 {
		t.Fatalf("both streams were backlogged for only %d calls", n)
	}
	if math.Abs(frac-share) > tolerance {
		t.Fatalf("backfill got %.3f of the prompts while both waited, want %.2f ± %.2f", frac, share, tolerance)
	}
}
