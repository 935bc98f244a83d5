package generate

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/stages/generate/policy"
	"github.com/murphy-rl/murphy/tasks"
	"github.com/murphy-rl/murphy/tasks/submit"
	"github.com/murphy-rl/murphy/topics"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

const refAdd = `def add(a, b):
    """Return a + b."""
    if a == 0:
        return b
    return a + b
`

func testTasks() []topics.Task {
	return []topics.Task{
		{SchemaVersion: topics.SchemaVersion, TaskID: "demo/add", Kind: topics.KindPythonFunction, EntryPoint: "add",
			Prompt: "def add(a, b):\n    \"\"\"Return a + b.\"\"\"\n", Reference: refAdd,
			Tests: []topics.TestCase{{Args: "1, 2", Expected: "3"}}},
		{SchemaVersion: topics.SchemaVersion, TaskID: "demo/sub", Kind: topics.KindPythonFunction, EntryPoint: "sub",
			Prompt: "def sub(a, b):\n", Reference: "def sub(a, b):\n    return a - b\n",
			Tests: []topics.TestCase{{Args: "3, 2", Expected: "1"}}},
	}
}

func testCatalog() topics.Catalog { return topics.Catalog{Prefix: "t.", Partitions: 4} }

func newSimStage(t *testing.T, mut func(*Config), seed int64) *Stage {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Policy.Simulated.Seed = seed
	cfg.InstanceID = "test"
	if mut != nil {
		mut(&cfg)
	}
	s, err := NewStage(cfg, tasks.NewMemory(testTasks()), testCatalog(), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func rootRecord(t *testing.T, cat topics.Catalog, task topics.Task, g, k int) (pipeline.Record, *topics.Prompt) {
	t.Helper()
	cfg := submit.DefaultConfig()
	cfg.GroupSize, cfg.TreesPerTask = g, k+1
	p := submit.RootPrompts(cfg, &task, time.Unix(1, 0))[k]
	b, err := topics.Encode(p)
	if err != nil {
		t.Fatal(err)
	}
	return pipeline.Record{Topic: cat.Topic(topics.Prompts), Key: []byte(p.TreeID), Value: b}, p
}

func decodeOuts(t *testing.T, outs []pipeline.Out) []topics.Candidate {
	t.Helper()
	cs := make([]topics.Candidate, len(outs))
	for i, o := range outs {
		if err := topics.Decode(o.Value, &cs[i]); err != nil {
			t.Fatal(err)
		}
		if o.Key != cs[i].TreeID || o.Topic != testCatalog().Topic(topics.Candidates) {
			t.Fatalf("out %d: key %q topic %q for tree %q", i, o.Key, o.Topic, cs[i].TreeID)
		}
	}
	return cs
}

func TestPromptYieldsExactGroupWithDeterministicIDs(t *testing.T) {
	s := newSimStage(t, nil, 7)
	rec, p := rootRecord(t, testCatalog(), testTasks()[0], 6, 0)
	outs, err := s.HandlePrompt(context.Background(), rec)
	if err != nil {
		t.Fatal(err)
	}
	cs := decodeOuts(t, outs)
	if len(cs) != 6 {
		t.Fatalf("%d candidates, want 6", len(cs))
	}
	for i, c := range cs {
		if c.Index != i || c.NodeID != topics.NodeID(p.TreeID, topics.RootID(p.TreeID), i) || c.ParentID != "" ||
			c.GroupID != p.GroupID || c.GroupSize != 6 || c.Turn != 1 || c.InfraCause != "" ||
			len(c.ResponseTokenIDs) == 0 || len(c.ResponseLogprobs) != len(c.ResponseTokenIDs) || len(c.PromptTokenIDs) == 0 ||
			c.Code == "" || c.FinishReason != "stop" || c.Policy != policy.SimulatedName || c.PolicyVersion != 1 {
			t.Fatalf("candidate %d: %+v", i, c)
		}
	}
	// Replay: same ids and same samples, in this stage and in another
	// process with the same seed.
	again, err := newSimStage(t, nil, 7).HandlePrompt(context.Background(), rec)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range decodeOuts(t, again) {
		if c.NodeID != cs[i].NodeID || c.ResponseText != cs[i].ResponseText {
			t.Fatalf("replay differs at %d", i)
		}
	}
	other, err := newSimStage(t, nil, 8).HandlePrompt(context.Background(), rec)
	if err != nil {
		t.Fatal(err)
	}
	same := 0
	for i, c := range decodeOuts(t, other) {
		if c.NodeID != cs[i].NodeID {
			t.Fatal("node ids depend on the seed")
		}
		if c.ResponseText == cs[i].ResponseText {
			same++
		}
	}
	if same == len(cs) {
		t.Fatal("another seed gives the same samples")
	}
	if got := metricValue(t, s.Metrics().Samples.WithLabelValues("ok")); got != 6 {
		t.Fatalf("samples metric %v", got)
	}
}

func TestRefinementPrompt(t *testing.T) {
	s := newSimStage(t, nil, 1)
	_, root := rootRecord(t, testCatalog(), testTasks()[0], 2, 0)
	parent := topics.NodeID(root.TreeID, root.GroupID, 1)
	p := *root
	p.ParentID, p.GroupID, p.Turn, p.GroupSize = parent, parent, 2, 3
	p.Feedback = "wrong_answer\ninput: add(0, 5)\nexpected: 5\nactual: 0"
	b, _ := topics.Encode(&p)
	outs, err := s.HandlePrompt(context.Background(), pipeline.Record{Topic: testCatalog().Topic(topics.Refinements), Value: b})
	if err != nil {
		t.Fatal(err)
	}
	cs := decodeOuts(t, outs)
	if len(cs) != 3 {
		t.Fatalf("%d candidates", len(cs))
	}
	for i, c := range cs {
		if c.ParentID != parent || c.GroupID != parent || c.Turn != 2 || c.NodeID != topics.NodeID(p.TreeID, parent, i) {
			t.Fatalf("refinement child %d: %+v", i, c)
		}
	}
	if s.TreesInFlight() != 1 {
		t.Fatalf("refinement of an unknown tree not counted: %d", s.TreesInFlight())
	}
}

func TestMalformedPromptIsPoison(t *testing.T) {
	s := newSimStage(t, nil, 1)
	_, p := rootRecord(t, testCatalog(), testTasks()[0], 2, 0)
	bad := *p
	bad.GroupID = "forged"
	b, _ := jsonNoValidate(&bad)
	for name, v := range map[string][]byte{"garbage": []byte("{nope"), "forged group": b, "empty": nil} {
		_, err := s.HandlePrompt(context.Background(), pipeline.Record{Value: v})
		if err == nil || !isPoison(err) {
			t.Errorf("%s: err %v, want poison", name, err)
		}
	}
}

// TestMissingTaskIsDeadLettered: a prompt whose task stays missing for
// TaskWait is dead-lettered (task_not_found), as in every stage
// (tasks.Await), and produces no children.
func TestMissingTaskIsDeadLettered(t *testing.T) {
	s := newSimStage(t, func(c *Config) { c.TaskWait = 300 * time.Millisecond }, 1)
	task := testTasks()[0]
	task.TaskID = "demo/unknown"
	rec, _ := rootRecord(t, testCatalog(), task, 3, 0)
	outs, err := s.HandlePrompt(context.Background(), rec)
	if outs != nil || !topics.IsPoison(err) || pipeline.Reason(err) != "task_not_found" || !errors.Is(err, tasks.ErrNotFound) {
		t.Fatalf("outs %d, err %v: want a task_not_found dead letter", len(outs), err)
	}
}

// TestDeadServerEmitsInfraChildren points the OpenAI policy at a port with
// nothing listening: every child is still emitted, marked infra.inference.
func TestDeadServerEmitsInfraChildren(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cfg := DefaultConfig()
	cfg.InstanceID = "test"
	cfg.Policy.Kind = PolicyOpenAI
	cfg.Policy.OpenAI.Client.BaseURL = "http://" + addr + "/v1"
	cfg.Policy.OpenAI.Client.MaxRetries = 2
	cfg.Policy.OpenAI.Client.BackoffInitial = time.Millisecond
	cfg.Policy.OpenAI.Client.BackoffMax = 2 * time.Millisecond
	s, err := NewStage(cfg, nil, testCatalog(), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	rec, p := rootRecord(t, testCatalog(), testTasks()[0], 4, 0)
	outs, err := s.HandlePrompt(context.Background(), rec)
	if err != nil {
		t.Fatal(err)
	}
	cs := decodeOuts(t, outs)
	if len(cs) != 4 {
		t.Fatalf("%d children", len(cs))
	}
	for i, c := range cs {
		if c.InfraCause != topics.InfraInference || c.InfraError == "" || c.NodeID != topics.NodeID(p.TreeID, p.GroupID, i) {
			t.Fatalf("child %d: cause %q err %q", i, c.InfraCause, c.InfraError)
		}
	}
	m := s.Metrics()
	if metricValue(t, m.Retries.WithLabelValues("connection")) != 2 || metricValue(t, m.Failures.WithLabelValues("http.connection")) != 1 ||
		metricValue(t, m.Samples.WithLabelValues(topics.InfraInference)) != 4 {
		t.Fatal("retry/failure metrics not recorded")
	}
}

func TestShutdownDoesNotMarkInfra(t *testing.T) {
	s := newSimStage(t, func(c *Config) { c.TaskWait = time.Minute }, 1)
	task := testTasks()[0]
	task.TaskID = "demo/later"
	rec, _ := rootRecord(t, testCatalog(), task, 3, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if outs, err := s.HandlePrompt(ctx, rec); !errors.Is(err, context.DeadlineExceeded) || !topics.IsTransient(err) || outs != nil {
		t.Fatalf("outs %d err %v: a stopping stage must leave the prompt for redelivery", len(outs), err)
	}
}

// TestTreeCapHoldsRootPrompts: with a cap of one tree, a second root prompt
// waits until the first tree's credited record arrives; a refinement and a
// replayed root prompt of an admitted tree never wait.
func TestTreeCapHoldsRootPrompts(t *testing.T) {
	s := newSimStage(t, func(c *Config) { c.MaxTreesInFlight = 1 }, 1)
	cat := testCatalog()
	recA, pA := rootRecord(t, cat, testTasks()[0], 2, 0)
	recB, _ := rootRecord(t, cat, testTasks()[1], 2, 0)
	ctx := context.Background()
	if _, err := s.HandlePrompt(ctx, recA); err != nil {
		t.Fatal(err)
	}
	var doneB atomic.Bool
	errB := make(chan error, 1)
	go func() {
		_, err := s.HandlePrompt(ctx, recB)
		doneB.Store(true)
		errB <- err
	}()
	// Replay of A and a refinement of A pass while B waits.
	if _, err := s.HandlePrompt(ctx, recA); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if doneB.Load() {
		t.Fatal("root prompt of a second tree was not held back")
	}
	if metricValue(t, s.Metrics().HeldBack) != 1 {
		t.Fatalf("held-back metric %v", metricValue(t, s.Metrics().HeldBack))
	}
	if _, err := s.HandleCompletion(ctx, pipeline.Record{Key: []byte("other/tree")}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if doneB.Load() {
		t.Fatal("completion of an unknown tree released a slot")
	}
	if _, err := s.HandleCompletion(ctx, pipeline.Record{Key: []byte(pA.TreeID)}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errB:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("second tree never admitted after the first completed")
	}
	specs := s.Specs()
	if len(specs) != 4 || specs[3].Inputs[0] != cat.Topic(topics.Completions) || specs[3].Name != "generate-completions-test" ||
		specs[2].Inputs[0] != cat.Topic(topics.Refinements) || specs[0].Inputs[0] != cat.Topic(topics.Prompts) ||
		specs[1].Inputs[0] != cat.Topic(topics.BackfillPrompts) || specs[1].Name != "generate-backfill" {
		t.Fatalf("specs %+v", specs)
	}
}

func TestAdmissionTTL(t *testing.T) {
	now := time.Unix(0, 0)
	clock := func() time.Time { return now }
	a := newAdmission(1, time.Minute, clock, func(int) {})
	ctx := context.Background()
	if err := a.admit(ctx, "a", streamLive, nil); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := a.admit(short, "b", streamLive, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("b admitted while a holds the only slot: %v", err)
	}
	now = now.Add(2 * time.Minute)
	if err := a.admit(ctx, "b", streamLive, nil); err != nil || a.size() != 1 {
		t.Fatalf("expired tree not released: %v size %d", err, a.size())
	}
}

// A refinement keeps its tree alive: only the trees without a prompt for
// the TTL expire, whatever order they started in; a completed tree is
// forgotten.
func TestAdmissionExpiresOnlyIdleTrees(t *testing.T) {
	now := time.Unix(0, 0)
	a := newAdmission(0, time.Minute, func() time.Time { return now }, func(int) {})
	ctx := context.Background()
	for _, tree := range []string{"a", "b", "c", "d"} {
		if err := a.admit(ctx, tree, streamLive, nil); err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Second)
	}
	now = now.Add(30 * time.Second)
	a.touch("a") // a's refinement
	if !a.done("c") || a.done("c") || a.done("unknown") {
		t.Fatal("done must release a tree in flight once, and ignore others")
	}
	now = now.Add(35 * time.Second) // b and d idle for 60+ s; a for 35 s
	a.mu.Lock()
	a.expireLocked(now)
	_, hasA := a.trees["a"]
	a.mu.Unlock()
	if a.size() != 1 || !hasA {
		t.Fatalf("after expiry %d trees in flight (a kept: %v), want only a", a.size(), hasA)
	}
	now = now.Add(time.Minute)
	a.touch("e") // a tree unknown to this process starts counting
	a.mu.Lock()
	a.expireLocked(now)
	a.mu.Unlock()
	if a.size() != 1 {
		t.Fatalf("%d trees in flight, want e alone", a.size())
	}
}

func TestRefinementsServedFirst(t *testing.T) {
	s := newSlots(1)
	ctx := context.Background()
	g, err := s.acquire(ctx, prioRoot)
	if err != nil {
		t.Fatal(err)
	}
	order := make(chan string, 3)
	for _, w := range []struct {
		name string
		prio int
	}{{"root1", prioRoot}, {"root2", prioRoot}} {
		go func() {
			if g, err := s.acquire(ctx, w.prio); err == nil {
				order <- w.name
				s.release(g)
			}
		}()
		time.Sleep(30 * time.Millisecond)
	}
	go func() {
		if g, err := s.acquire(ctx, prioRefinement); err == nil {
			order <- "refinement"
			s.release(g)
		}
	}()
	time.Sleep(30 * time.Millisecond)
	s.release(g)
	got := []string{<-order, <-order, <-order}
	if got[0] != "refinement" || got[1] != "root1" || got[2] != "root2" {
		t.Fatalf("served %v, want the refinement first, then roots in arrival order", got)
	}
	// A waiter that gives up does not leak its slot.
	if g, err = s.acquire(ctx, prioRoot); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := s.acquire(short, prioRefinement); err == nil {
		t.Fatal("acquired a taken slot")
	}
	s.release(g)
	if _, err := s.acquire(ctx, prioRoot); err != nil {
		t.Fatal(err)
	}
}

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		name string
		mut  func(*Config)
		ok   bool
	}{
		{"default", func(*Config) {}, true},
		{"unknown policy", func(c *Config) { c.Policy.Kind = "gpt" }, false},
		{"openai default", func(c *Config) { c.Policy.Kind = PolicyOpenAI }, true},
		{"openai bad api", func(c *Config) { c.Policy.Kind = PolicyOpenAI; c.Policy.OpenAI.API = "responses" }, false},
		{"zero concurrency", func(c *Config) { c.Concurrency = 0 }, false},
		{"negative cap", func(c *Config) { c.MaxTreesInFlight = -1 }, false},
		{"no ttl", func(c *Config) { c.TreeTTL = 0 }, false},
		{"backfill share above 1", func(c *Config) { c.BackfillShare = 1.5 }, false},
		{"negative backfill share", func(c *Config) { c.BackfillShare = -0.1 }, false},
		{"backfill share 0", func(c *Config) { c.BackfillShare = 0 }, true},
		{"backfill share 1", func(c *Config) { c.BackfillShare = 1 }, true},
		{"bad simulated", func(c *Config) { c.Policy.Simulated.PBroken = 2 }, false},
	}
	for _, tc := range cases {
		c := DefaultConfig()
		tc.mut(&c)
		if err := c.Validate(); (err == nil) != tc.ok {
			t.Errorf("%s: Validate() = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

func isPoison(err error) bool { return topics.IsPoison(err) }

func jsonNoValidate(p *topics.Prompt) ([]byte, error) { return json.Marshal(p) }

func metricValue(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		t.Fatal(err)
	}
	switch {
	case d.Counter != nil:
		return d.Counter.GetValue()
	case d.Gauge != nil:
		return d.Gauge.GetValue()
	}
	t.Fatal("not a counter or gauge")
	return 0
}
