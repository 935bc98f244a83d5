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
// an httptest server: the right path and body, retries on 5xx, a clear
// error once the attempts are spent, vLLM's "already loaded" as success,
// and SGLang's update inside pause and continue.
func TestLoadHookPresets(t *testing.T) {
	type call struct{ path, body string }
	var mu sync.Mutex
	var calls []call
	var fail atomic.Int32
	var already atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		calls = append(calls, call{r.URL.Path, string(b)})
		mu.Unlock()
		switch r.URL.Path {
		case "/v1/models":
			_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"base","object":"model"}]}`)
			return
		case "/pause_generation", "/continue_generation":
			_, _ = io.WriteString(w, `{"success":true}`)
			return
		}
		if already.Load() {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"object":"error","message":"The lora adapter 'run1-v7' has already been loaded.","type":"InvalidUserInput","param":null,"code":400}`)
			return
		}
		if fail.Add(-1) >= 0 {
			http.Error(w, "adapter dir missing", http.StatusInternalServerError)
			return
		}
		_, _ = io.WriteString(w, `{"success":true,"message":"ok"}`)
	}))
	defer srv.Close()
	v := &topics.PolicyVersion{Version: 7, Model: `run1-v7`, CheckpointURI: "/ckpt/v\"7"}
	noSleep := func(context.Context, time.Duration) error { return nil }
	for _, tc := range []struct {
		cfg      LoadConfig
		failures int32
		already  bool
		paths    []string // every call, in order
		field    string
		want     string
		err      string
	}{
		{cfg: LoadConfig{Preset: LoadVLLM}, paths: []string{"/v1/models", "/v1/load_lora_adapter"}, field: "lora_name", want: "run1-v7"},
		{cfg: LoadConfig{Preset: LoadVLLM}, already: true, paths: []string{"/v1/models", "/v1/load_lora_adapter"}, field: "lora_name", want: "run1-v7"},
		{cfg: LoadConfig{Preset: LoadSGLang}, failures: 2, field: "model_path", want: "/ckpt/v\"7",
			paths: []string{"/pause_generation", "/update_weights_from_disk", "/update_weights_from_disk", "/update_weights_from_disk", "/continue_generation"}},
		{cfg: LoadConfig{Preset: LoadHTTP, Path: "/reload", Body: `{"v": "{{.Version}}"}`}, paths: []string{"/reload"}, field: "v", want: "7"},
		{cfg: LoadConfig{Preset: LoadVLLM}, failures: 10,
			err: `loading policy version 7 (model "run1-v7") on ` + srv.URL + `/v1/load_lora_adapter failed after 3 attempts: HTTP 500: adapter dir missing`},
	} {
		mu.Lock()
		calls = nil
		mu.Unlock()
		fail.Store(tc.failures)
		already.Store(tc.already)
		cfg := tc.cfg
		cfg.Attempts, cfg.Backoff, cfg.Timeout = 3, time.Millisecond, 5*time.Second
		l, err := newLoader(cfg)
		if err != nil {
			t.Fatal(err)
		}
		l.sleep = noSleep
		err = l.ensure(context.Background(), srv.URL+"/v1", []*topics.PolicyVersion{v})
		if tc.err != "" {
			var le *LoadError
			if err == nil || !errors.As(err, &le) || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("%s: error %v, want %q", cfg.Preset, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", cfg.Preset, err)
		}
		var paths []string
		var body map[string]any
		for _, c := range calls {
			paths = append(paths, c.path)
			if c.path == tc.paths[len(tc.paths)-1] || strings.Contains(c.path, "load") || strings.Contains(c.path, "update") || c.path == "/reload" {
				_ = json.Unmarshal([]byte(c.body), &body)
			}
		}
		if strings.Join(paths, " ") != strings.Join(tc.paths, " ") || fmt.Sprint(body[tc.field]) != tc.want {
			t.Fatalf("%s: calls %v, body %v", cfg.Preset, paths, body)
		}
		// Loaded once: a second ensure calls nothing (sglang) or only lists.
		mu.Lock()
		calls = nil
		mu.Unlock()
		if err := l.ensure(context.Background(), srv.URL+"/v1", []*topics.PolicyVersion{v}); err != nil || len(calls) > 2 {
			t.Fatalf("%s: again: %v, calls %v", cfg.Preset, err, calls)
		}
	}
	if _, err := newLoader(LoadConfig{Preset: LoadHTTP, Attempts: 1, Timeout: time.Second}); err == nil {
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

// TestBoundWaitReleases: a root prompt held back by the bound starts once
// the trainer's progress says it consumed.
func TestBoundWaitReleases(t *testing.T) {
	s, _ := newVersionedStage(t, func(c *Config) { c.Staleness.Enabled = true; c.MaxTreesInFlight = 0 })
	s.bnd.landGrace = 0 // the end offsets below are read after the tree's credited record
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.SetCreditedEnds(map[int]int64{0: 0})
	s.ObserveProgress(&topics.TrainerProgress{TrainerID: "a", MaxStaleness: intp(0), TreesPerVersion: 1,
		Consumed: map[string]int64{}, UpdatedAt: time.Now()})
	task := testTasks()[0]
	rec, _ := rootRecord(t, testCatalog(), task, 2, 0)
	if _, err := s.HandlePrompt(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if !s.bnd.isGranted(string(rec.Key)) || s.alog.mem != 1 {
		t.Fatalf("first tree: granted %v, %d records on the admission log", s.bnd.isGranted(string(rec.Key)), s.alog.mem)
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
