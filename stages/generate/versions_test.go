package generate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/stages/generate/policy"
	"github.com/murphy-rl/murphy/tasks"
	"github.com/murphy-rl/murphy/topics"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func intp(v int) *int { return &v }

// TestLoadHookPresets calls the vLLM, SGLang and custom HTTP hooks against
// an httptest server: the right path and body, retries on 5xx, and a clear
// error once the attempts are spent.
func TestLoadHookPresets(t *testing.T) {
	type call struct{ path, body string }
	var mu sync.Mutex
	var calls []call
	var fail atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		calls = append(calls, call{r.URL.Path, string(b)})
		mu.Unlock()
		if fail.Add(-1) >= 0 {
			http.Error(w, "adapter dir missing", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	v := &topics.PolicyVersion{Version: 7, Model: `run1-v7`, CheckpointURI: "/ckpt/v\"7"}
	noSleep := func(context.Context, time.Duration) error { return nil }
	for _, tc := range []struct {
		cfg      LoadConfig
		failures int32
		path     string
		field    string
		want     string
		err      string
	}{
		{cfg: LoadConfig{Preset: LoadVLLM}, path: "/v1/load_lora_adapter", field: "lora_name", want: "run1-v7"},
		{cfg: LoadConfig{Preset: LoadSGLang}, failures: 2, path: "/update_weights_from_disk", field: "model_path", want: "/ckpt/v\"7"},
		{cfg: LoadConfig{Preset: LoadHTTP, Path: "/reload", Body: `{"v": "{{.Version}}"}`}, path: "/reload", field: "v", want: "7"},
		{cfg: LoadConfig{Preset: LoadVLLM}, failures: 10, path: "/v1/load_lora_adapter",
			err: `loading policy version 7 (model "run1-v7") on ` + srv.URL + `/v1/load_lora_adapter failed after 3 attempts: HTTP 500: adapter dir missing`},
	} {
		mu.Lock()
		calls = nil
		mu.Unlock()
		fail.Store(tc.failures)
		cfg := tc.cfg
		cfg.Attempts, cfg.Backoff, cfg.Timeout = 3, time.Millisecond, 5*time.Second
		l, err := newLoader(cfg, srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		l.sleep = noSleep
		err = l.load(context.Background(), v)
		if tc.err != "" {
			var le *LoadError
			if err == nil || !errors.As(err, &le) || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("%s: error %v, want %q", cfg.Preset, err, tc.err)
			}
			if len(calls) != 3 {
				t.Fatalf("%d calls, want 3", len(calls))
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", cfg.Preset, err)
		}
		if want := int(tc.failures) + 1; len(calls) != want {
			t.Fatalf("%s: %d calls, want %d", cfg.Preset, len(calls), want)
		}
		last := calls[len(calls)-1]
		var body map[string]string
		if err := json.Unmarshal([]byte(last.body), &body); err != nil {
			t.Fatalf("%s: body %q: %v", cfg.Preset, last.body, err)
		}
		if last.path != tc.path || body[tc.field] != tc.want {
			t.Fatalf("%s: %s %v", cfg.Preset, last.path, body)
		}
	}
	if _, err := newLoader(LoadConfig{Preset: LoadHTTP, Attempts: 1, Timeout: time.Second}, srv.URL); err == nil {
		t.Fatal("http preset without a path accepted")
	}
}

// recordingPolicy answers as the model it was built for and records it.
type recordingPolicy struct {
	model string
	calls *[]string
	mu    *sync.Mutex
}

func (p recordingPolicy) Name() string    { return "rec" }
func (p recordingPolicy) Version() int64  { return 0 }
func (p recordingPolicy) NeedsTask() bool { return false }
func (p recordingPolicy) Generate(_ context.Context, req policy.Request) ([]policy.Sample, error) {
	p.mu.Lock()
	*p.calls = append(*p.calls, p.model)
	p.mu.Unlock()
	out := make([]policy.Sample, len(req.NodeIDs))
	for i := range out {
		out[i] = policy.Sample{Text: "answer of " + p.model, FinishReason: "stop", TokenIDs: []int32{1}}
	}
	return out, nil
}

func newVersionedStage(t *testing.T, mut func(*Config)) (*Stage, *[]string) {
	t.Helper()
	var calls []string
	var mu sync.Mutex
	cfg := DefaultConfig()
	cfg.InstanceID = "test"
	cfg.Versions.Follow = true
	if mut != nil {
		mut(&cfg)
	}
	mk := func(model string) (policy.Policy, error) {
		return recordingPolicy{model: model, calls: &calls, mu: &mu}, nil
	}
	base, _ := mk("configured")
	s, err := NewStageWithPolicy(cfg, base, nil, testCatalog(), nil, WithModelPolicies(mk))
	if err != nil {
		t.Fatal(err)
	}
	return s, &calls
}

func candidatesOf(t *testing.T, outs []pipeline.Out) []topics.Candidate {
	t.Helper()
	var cs []topics.Candidate
	for _, o := range outs {
		if !strings.HasSuffix(o.Topic, string(topics.Candidates)) {
			continue
		}
		var c topics.Candidate
		if err := topics.Decode(o.Value, &c); err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	return cs
}

// TestFollowVersions: new trees go to the newest version's model and every
// candidate records it; a refinement finishes on its tree's version.
func TestFollowVersions(t *testing.T) {
	s, calls := newVersionedStage(t, nil)
	ctx := context.Background()
	task := testTasks()[0]
	rec, _ := rootRecord(t, testCatalog(), task, 2, 0)
	outs, err := s.HandlePrompt(ctx, rec)
	if err != nil {
		t.Fatal(err)
	}
	if cs := candidatesOf(t, outs); cs[0].PolicyVersion != 0 || (*calls)[0] != "configured" {
		t.Fatalf("before any version: version %d model %s", cs[0].PolicyVersion, (*calls)[0])
	}
	for v := int64(1); v <= 2; v++ {
		if err := s.ObserveVersion(ctx, &topics.PolicyVersion{Version: v, Model: "m-v" + topics.PolicyVersionKey(v)}); err != nil {
			t.Fatal(err)
		}
	}
	// An older version seen late changes nothing.
	_ = s.ObserveVersion(ctx, &topics.PolicyVersion{Version: 1, Model: "m-v1"})
	rec, _ = rootRecord(t, testCatalog(), task, 2, 1)
	outs, _ = s.HandlePrompt(ctx, rec)
	cs := candidatesOf(t, outs)
	if cs[0].PolicyVersion != 2 || cs[1].PolicyVersion != 2 || (*calls)[1] != "m-v2" {
		t.Fatalf("version %d, model %v", cs[0].PolicyVersion, *calls)
	}
	// A refinement of a v1 tree finishes on v1's model.
	ref := refinementOf(t, cs[0], 1)
	outs, _ = s.HandlePrompt(ctx, ref)
	if cs := candidatesOf(t, outs); cs[0].PolicyVersion != 1 || (*calls)[2] != "m-v1" {
		t.Fatalf("refinement: version %d model %v", cs[0].PolicyVersion, *calls)
	}
}

// refinementOf is a refinement prompt of candidate c's node, its tree at version v.
func refinementOf(t *testing.T, c topics.Candidate, v int64) pipeline.Record {
	t.Helper()
	p := &topics.Prompt{SchemaVersion: topics.SchemaVersion, TreeSpec: c.TreeSpec, TreeID: c.TreeID, TaskID: c.TaskID,
		ParentID: c.NodeID, GroupID: c.NodeID, Turn: c.Turn + 1, GroupSize: 2, Text: "fix it", PolicyVersion: v,
		CreatedAt: time.Unix(2, 0)}
	b, err := topics.Encode(p)
	if err != nil {
		t.Fatal(err)
	}
	return pipeline.Record{Topic: testCatalog().Topic(topics.Refinements), Key: []byte(c.TreeID), Value: b}
}

// TestInFlightRestart: with in_flight=restart a refinement of an older
// tree is closed with infra.stale_version children and its task starts
// again as a new tree.
func TestInFlightRestart(t *testing.T) {
	var calls []string
	var mu sync.Mutex
	cfg := DefaultConfig()
	cfg.InstanceID = "test"
	cfg.Versions.Follow = true
	cfg.Versions.InFlight = InFlightRestart
	mk := func(model string) (policy.Policy, error) {
		return recordingPolicy{model: model, calls: &calls, mu: &mu}, nil
	}
	base, _ := mk("configured")
	s, err := NewStageWithPolicy(cfg, base, memTasks(), testCatalog(), nil, WithModelPolicies(mk))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_ = s.ObserveVersion(ctx, &topics.PolicyVersion{Version: 3, Model: "m-v3"})
	rec, _ := rootRecord(t, testCatalog(), testTasks()[0], 2, 0)
	outs, _ := s.HandlePrompt(ctx, rec)
	c := candidatesOf(t, outs)[0]
	// Same version: generated.
	outs, _ = s.HandlePrompt(ctx, refinementOf(t, c, 3))
	if cs := candidatesOf(t, outs); cs[0].InfraCause != "" {
		t.Fatalf("current refinement closed: %s", cs[0].InfraCause)
	}
	_ = s.ObserveVersion(ctx, &topics.PolicyVersion{Version: 4, Model: "m-v4"})
	outs, err = s.HandlePrompt(ctx, refinementOf(t, c, 3))
	if err != nil {
		t.Fatal(err)
	}
	cs := candidatesOf(t, outs)
	if len(cs) != 2 || cs[0].InfraCause != InfraStaleVersion || cs[1].InfraCause != InfraStaleVersion {
		t.Fatalf("stale refinement: %+v", cs)
	}
	var root *topics.Prompt
	for _, o := range outs {
		if o.Topic == testCatalog().Topic(topics.Prompts) {
			root = &topics.Prompt{}
			if err := topics.Decode(o.Value, root); err != nil {
				t.Fatal(err)
			}
		}
	}
	if root == nil || root.TreeID != c.TreeID+"~v4" || root.ParentID != "" || root.TaskID != c.TaskID {
		t.Fatalf("restarted root %+v", root)
	}
}

// TestBoundStateMachine checks the admission rule backlog+1 <= (η+1)·k on
// positions of the credited topic, merged ranks, stale progress and trees
// in flight of other processes.
func TestBoundStateMachine(t *testing.T) {
	now := time.Unix(1000, 0)
	b := newBound(time.Minute, time.Hour, func() time.Time { return now })
	allow := func() bool { ok, _ := b.allowLocked(now); return ok }
	if !allow() {
		t.Fatal("no trainer: held back")
	}
	// Trainer a: η=1, 2 trees per version → at most 4 trees of backlog.
	b.setProgress(&topics.TrainerProgress{TrainerID: "a", MaxStaleness: intp(1), TreesPerVersion: 2,
		Consumed: map[string]int64{"0": 0}, UpdatedAt: now})
	if allow() {
		t.Fatal("bounded trainer, ends unknown: admitted")
	}
	b.setEnds(map[int]int64{0: 0, 1: 0}, now)
	for i := 0; i < 4; i++ {
		if !allow() {
			t.Fatalf("tree %d held back", i)
		}
		b.admitted("t"+string(rune('0'+i)), 1)
	}
	if allow() {
		t.Fatal("5th tree admitted with η=1, k=2")
	}
	// Two trees complete (credited on partitions 0 and 1): backlog still 4.
	b.completed("t0")
	b.completed("t1")
	b.setEnds(map[int]int64{0: 1, 1: 1}, now)
	if allow() {
		t.Fatal("credited but unconsumed trees are backlog")
	}
	// Rank 1 of trainer a consumed partition 1; rank 0 partition 0.
	b.setProgress(&topics.TrainerProgress{TrainerID: "a", Rank: 1, MaxStaleness: intp(1), TreesPerVersion: 2,
		Consumed: map[string]int64{"1": 1}, UpdatedAt: now})
	if !allow() {
		t.Fatalf("after consumption: held back: %+v", b.standings())
	}
	st := b.standings()
	if len(st) != 1 || st[0].Backlog != 3 || st[0].Behind != 1 || st[0].Ahead != 1.5 {
		t.Fatalf("standings %+v", st)
	}
	// Trainer b: η=0, k=1, consumed everything: the stricter bound wins.
	b.setProgress(&topics.TrainerProgress{TrainerID: "b", MaxStaleness: intp(0), TreesPerVersion: 1,
		Consumed: map[string]int64{"0": 1, "1": 1}, UpdatedAt: now})
	if allow() {
		t.Fatal("trainer b (η=0) has 2 trees in flight: admitted")
	}
	// A completion read before its admission does not count the tree.
	b.completed("late")
	b.admitted("late", 1)
	if n, _, _ := b.inFlight(); n != 2 {
		t.Fatalf("%d in flight, want 2", n)
	}
	// Trainer b goes silent: after the TTL only a bounds.
	now = now.Add(2 * time.Minute)
	b.setProgress(&topics.TrainerProgress{TrainerID: "a", MaxStaleness: intp(1), TreesPerVersion: 2,
		Consumed: map[string]int64{"0": 1}, UpdatedAt: now})
	b.setProgress(&topics.TrainerProgress{TrainerID: "a", Rank: 1, MaxStaleness: intp(1), TreesPerVersion: 2,
		Consumed: map[string]int64{"1": 1}, UpdatedAt: now})
	if !allow() || len(b.standings()) != 1 {
		t.Fatalf("stale trainer b still bounds: %+v", b.standings())
	}
	// An unbounded trainer never holds back.
	b.setProgress(&topics.TrainerProgress{TrainerID: "c", UpdatedAt: now})
	if len(b.standings()) != 1 {
		t.Fatal("unbounded trainer counted")
	}
}

// TestBoundWaitReleases: a root prompt held back by the bound starts once
// the trainer's progress says it consumed.
func TestBoundWaitReleases(t *testing.T) {
	s, _ := newVersionedStage(t, func(c *Config) { c.Staleness.Enabled = true; c.MaxTreesInFlight = 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.SetCreditedEnds(map[int]int64{0: 0})
	s.ObserveProgress(&topics.TrainerProgress{TrainerID: "a", MaxStaleness: intp(0), TreesPerVersion: 1,
		Consumed: map[string]int64{}, UpdatedAt: time.Now()})
	task := testTasks()[0]
	rec, _ := rootRecord(t, testCatalog(), task, 2, 0)
	outs, err := s.HandlePrompt(ctx, rec)
	if err != nil {
		t.Fatal(err)
	}
	var adm int
	for _, o := range outs {
		if o.Topic == testCatalog().Topic(topics.Admissions) {
			adm++
		}
	}
	if adm != 1 {
		t.Fatalf("%d admission records", adm)
	}
	rec2, _ := rootRecord(t, testCatalog(), task, 2, 1)
	done := make(chan error, 1)
	go func() { _, err := s.HandlePrompt(ctx, rec2); done <- err }()
	select {
	case err := <-done:
		t.Fatalf("second tree admitted with η=0, k=1: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	// The first tree completes, is credited at offset 0 and consumed.
	s.TreeDone(string(rec.Key))
	s.SetCreditedEnds(map[int]int64{0: 1})
	select {
	case err := <-done:
		t.Fatalf("admitted before the trainer consumed: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	s.ObserveProgress(&topics.TrainerProgress{TrainerID: "a", MaxStaleness: intp(0), TreesPerVersion: 1,
		Consumed: map[string]int64{"0": 1}, UpdatedAt: time.Now()})
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("never admitted")
	}
	if got := testutilValue(s.m.HeldBackStale); got != 1 {
		t.Fatalf("held back %v", got)
	}
}

func memTasks() TaskLookup { return tasks.NewMemory(testTasks()) }

func testutilValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return -1
	}
	return m.GetCounter().GetValue()
}

// TestBoundCountsFromVersionStart: a trainer partway through its version
// (k=4, η=1, 2 trees consumed since the version began) leaves room for 6
// more trees, not 8: the 8th would reach it η+1 versions later.
func TestBoundCountsFromVersionStart(t *testing.T) {
	now := time.Unix(1000, 0)
	admit := func(p *topics.TrainerProgress) int {
		b := newBound(time.Minute, time.Hour, func() time.Time { return now })
		b.setProgress(p)
		b.setEnds(map[int]int64{0: 2}, now)
		n := 0
		for ; n < 100; n++ {
			if ok, _ := b.allowLocked(now); !ok {
				break
			}
			b.admitted(fmt.Sprintf("t%d", n), 0)
		}
		return n
	}
	p := &topics.TrainerProgress{TrainerID: "a", MaxStaleness: intp(1), TreesPerVersion: 4,
		Consumed: map[string]int64{"0": 2}, VersionStart: map[string]int64{"0": 0}, UpdatedAt: now}
	if n := admit(p); n != 6 {
		t.Errorf("from the version's start: %d trees admitted, want 6", n)
	}
	p.VersionStart = nil
	if n := admit(p); n != 8 {
		t.Errorf("without version_start (from consumed): %d trees admitted, want 8", n)
	}
	// A step that consumed whole batches past k (6 trees into a version of
	// 4) counts k-1 of them: generation goes on until the next version.
	p.Consumed, p.VersionStart = map[string]int64{"0": 6}, map[string]int64{"0": 0}
	if n := admit(p); n != 5 {
		t.Errorf("past k into the version: %d trees admitted, want 5", n)
	}
}

// TestBoundRecovering: while the trees in flight before a restart are
// being counted, no tree starts under a bound; recovered admissions count
// from when they were admitted and expire a tree TTL after that; a tree
// whose completion was read first is not counted.
func TestBoundRecovering(t *testing.T) {
	now := time.Unix(10000, 0)
	b := newBound(time.Minute, time.Hour, func() time.Time { return now })
	allow := func() bool { ok, _ := b.allowLocked(now); return ok }
	b.setProgress(&topics.TrainerProgress{TrainerID: "a", MaxStaleness: intp(1), TreesPerVersion: 2,
		Consumed: map[string]int64{"0": 0}, UpdatedAt: now})
	b.setEnds(map[int]int64{0: 0}, now)
	b.setRecovering(true)
	if allow() {
		t.Fatal("admitted while recovering")
	}
	b.completed("done")
	b.admittedAt("done", 1, now.Add(-time.Minute))
	b.admittedAt("old", 1, now.Add(-2*time.Hour))
	b.admittedAt("a", 1, now.Add(-time.Minute))
	b.admittedAt("b", 2, time.Time{})
	b.setRecovering(false)
	if trees, _, _ := b.inFlight(); trees != 3 {
		t.Fatalf("%d trees in flight, want 3 (old, a, b) before expiry", trees)
	}
	if st := b.standings(); len(st) != 1 || st[0].Backlog != 2 { // expires "old"
		t.Fatalf("standings %+v, want a backlog of 2 (a, b)", st)
	}
	if !allow() {
		t.Fatal("held back at a backlog of 2 of 4")
	}
	now = now.Add(59*time.Minute + 30*time.Second)
	b.standings()
	if trees, _, _ := b.inFlight(); trees != 1 {
		t.Fatalf("%d trees in flight a tree TTL after a's admission, want 1 (b)", trees)
	}
}
