package pipeline_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	json "github.com/goccy/go-json"
	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/pipeline/pipelinetest"
	"github.com/murphy-rl/murphy/topics"
)

func prompt(tree string) *topics.Prompt {
	return &topics.Prompt{
		SchemaVersion: topics.SchemaVersion,
		TreeSpec:      topics.TreeSpec{MaxTurns: 2, GroupSizes: []int{2}},
		TreeID:        tree, TaskID: "t", GroupID: topics.RootID(tree), Turn: 1, GroupSize: 2, Text: "solve",
	}
}

func mustEncode(t testing.TB, r topics.Record) []byte {
	b, err := topics.Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// passThrough decodes prompts and forwards them: the smallest honest stage.
func passThrough(out string) pipeline.Handler {
	return func(ctx context.Context, rec pipeline.Record) ([]pipeline.Out, error) {
		var p topics.Prompt
		if err := topics.Decode(rec.Value, &p); err != nil {
			return nil, err
		}
		return []pipeline.Out{{Topic: out, Key: p.TreeID, Value: rec.Value}}, nil
	}
}

func startRuntime(t *testing.T, brokers []string, cat topics.Catalog, addr string, add func(rt *pipeline.Runtime)) (stop func() error) {
	t.Helper()
	rt, err := pipeline.NewRuntime(pipeline.RuntimeConfig{
		Kafka: pipelinetest.Kafka(brokers), Catalog: cat, Name: "test", HTTPAddr: addr,
		GroupPrefix: cat.Prefix,
		Retry:       pipeline.RetryConfig{MaxRetries: 2, InitialInterval: 10 * time.Millisecond, MaxInterval: 50 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	add(rt)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rt.Run(ctx) }()
	return func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(60 * time.Second):
			return errors.New("runtime did not stop")
		}
	}
}

// TestBadInputGoesToDLQ sends garbage, an unknown schema_version, a record
// missing required fields, an oversized record and a panicking record among
// good ones: each bad one lands in the DLQ with a reason and the original
// bytes; every good one is processed.
func TestBadInputGoesToDLQ(t *testing.T) {
	pipelinetest.OnEachBroker(t, func(t *testing.T, brokers []string) {
		cat := pipelinetest.Catalog(t, brokers, 3)
		in, out := cat.Topic(topics.Prompts), cat.Topic(topics.Candidates)
		var panicked atomic.Bool
		h := passThrough(out)
		stop := startRuntime(t, brokers, cat, "", func(rt *pipeline.Runtime) {
			if err := rt.AddStage(pipeline.Stage{Name: "pass", Inputs: []string{in}, Concurrency: 4,
				Handler: func(ctx context.Context, rec pipeline.Record) ([]pipeline.Out, error) {
					if string(rec.Key) == "boom" {
						panicked.Store(true)
						panic("handler bug")
					}
					return h(ctx, rec)
				}}); err != nil {
				t.Fatal(err)
			}
		})
		unknownVersion := prompt("tree-v")
		unknownVersion.SchemaVersion = 42
		uv, _ := json.Marshal(unknownVersion)
		missing := prompt("tree-m")
		missing.TaskID = ""
		mf, _ := json.Marshal(missing)
		oversized := bytes.Repeat([]byte("x"), topics.MaxRecordBytes+1)
		bad := map[string][]byte{
			"garbage":  []byte("\x00\x01not a record"),
			"version":  uv,
			"missing":  mf,
			"oversize": oversized,
			"boom":     mustEncode(t, prompt("boom")),
		}
		var outs []pipeline.Out
		for i := 0; i < 20; i++ {
			tree := "good-" + string(rune('a'+i))
			outs = append(outs, pipeline.Out{Topic: in, Key: tree, Value: mustEncode(t, prompt(tree))})
		}
		for k, v := range bad {
			outs = append(outs, pipeline.Out{Topic: in, Key: k, Value: v})
		}
		pipelinetest.Produce(t, brokers, outs...)

		good := pipelinetest.ReadN(t, brokers, out, 20, 90*time.Second)
		dlq := pipelinetest.ReadN(t, brokers, cat.Topic(topics.DLQ), len(bad), 90*time.Second)
		if err := stop(); err != nil {
			t.Fatalf("shutdown: %v", err)
		}
		if len(good) != 20 {
			t.Errorf("good records out = %d, want 20", len(good))
		}
		wantReason := map[string]string{"garbage": "malformed", "version": "unknown_schema_version",
			"missing": "missing_field", "oversize": "oversized", "boom": "panic"}
		for _, r := range dlq {
			var dl topics.DeadLetter
			if err := topics.Decode(r.Value, &dl); err != nil {
				t.Fatalf("DLQ record does not decode: %v", err)
			}
			key := string(dl.Key)
			if !strings.HasPrefix(dl.Reason, wantReason[key]) {
				t.Errorf("%s: reason %q, want prefix %q", key, dl.Reason, wantReason[key])
			}
			if dl.SourceTopic != in || dl.Stage != "pass" || dl.Offset < 0 {
				t.Errorf("%s: coordinates %+v", key, dl)
			}
			if key != "oversize" && !bytes.Equal(dl.Value, bad[key]) {
				t.Errorf("%s: original bytes not kept", key)
			}
			delete(wantReason, key)
		}
		if len(wantReason) != 0 {
			t.Errorf("not dead-lettered: %v", wantReason)
		}
		if !panicked.Load() {
			t.Error("panic path not exercised")
		}
	})
}

// TestHealthAndMetrics checks /healthz, /readyz and /metrics.
func TestHealthAndMetrics(t *testing.T) {
	brokers := pipelinetest.Embedded(t)
	cat := pipelinetest.Catalog(t, brokers, 1)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	stop := startRuntime(t, brokers, cat, addr, func(rt *pipeline.Runtime) {
		_ = rt.AddStage(pipeline.Stage{Name: "pass", Inputs: []string{cat.Topic(topics.Prompts)}, Handler: passThrough(cat.Topic(topics.Candidates))})
	})
	defer func() { _ = stop() }() // the test's verdict is in the HTTP answers
	pipelinetest.Produce(t, brokers, pipeline.Out{Topic: cat.Topic(topics.Prompts), Key: "a", Value: mustEncode(t, prompt("a"))})
	pipelinetest.ReadN(t, brokers, cat.Topic(topics.Candidates), 1, 60*time.Second)
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, _ := get("/readyz")
		if code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz = %d", code)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Fatalf("/healthz = %d", code)
	}
	// The output is counted once the producer has its acknowledgement,
	// which may come after a reader already sees the record.
	wants := []string{`murphy_records_in_total{stage="pass"`, `murphy_records_out_total{stage="pass"`,
		`murphy_handler_seconds_bucket{stage="pass"`, `murphy_consumer_lag{partition="0",stage="pass"`}
	for {
		code, body := get("/metrics")
		var missing []string
		for _, want := range wants {
			if code != 200 || !strings.Contains(body, want) {
				missing = append(missing, want)
			}
		}
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics (%d) lacks %v", code, missing)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A stage started while the broker is down waits for it (up to
// kafka.startup_timeout) instead of giving up; past the timeout it says why.
func TestEnsureTopicsWaitsForBroker(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cfg := pipeline.DefaultKafkaConfig()
	cfg.Brokers = []string{l.Addr().String()}
	cat := topics.DefaultCatalog()
	cat.Partitions = 2

	short := cfg
	short.StartupTimeout = 300 * time.Millisecond
	err = pipeline.EnsureTopics(context.Background(), short, cat)
	if err == nil || !strings.Contains(err.Error(), "startup_timeout") || !strings.Contains(err.Error(), "create topics") {
		t.Fatalf("with no broker: %v, want a timeout naming the cause", err)
	}

	done := make(chan error, 1)
	go func() { done <- pipeline.EnsureTopics(context.Background(), cfg, cat) }()
	time.Sleep(time.Second)
	select {
	case err := <-done:
		t.Fatalf("returned before the broker started: %v", err)
	default:
	}
	b, err := pipeline.StartEmbedded(pipeline.EmbeddedConfig{Port: port})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("topics not created 30s after the broker started")
	}
}

// Stopping a stage with many records in flight (handlers running, outputs
// being written, deliveries buffered) is prompt and loses nothing: after a
// restart every input has its output (at least once).
func TestStopMidStreamLosesNothing(t *testing.T) {
	pipelinetest.OnEachBroker(t, stopMidStream)
}

func stopMidStream(t *testing.T, brokers []string) {
	cat := pipelinetest.Catalog(t, brokers, 4)
	in, out := cat.Topic(topics.Prompts), cat.Topic(topics.Candidates)
	const n = 2000
	recs := make([]pipeline.Out, n)
	for i := range recs {
		tree := "tree-" + strconv.Itoa(i)
		recs[i] = pipeline.Out{Topic: in, Key: tree, Value: mustEncode(t, prompt(tree))}
	}
	pipelinetest.Produce(t, brokers, recs...)

	var handled atomic.Int64
	h := passThrough(out)
	add := func(rt *pipeline.Runtime) {
		err := rt.AddStage(pipeline.Stage{Name: "pass", Inputs: []string{in}, Concurrency: 256,
			Handler: func(ctx context.Context, rec pipeline.Record) ([]pipeline.Out, error) {
				handled.Add(1)
				time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond)
				return h(ctx, rec)
			}})
		if err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	tctx, cancelTail := context.WithCancel(context.Background())
	defer cancelTail()
	outs, err := pipeline.Tail(tctx, pipelinetest.Kafka(brokers), out)
	if err != nil {
		t.Fatal(err)
	}
	stop := startRuntime(t, brokers, cat, "", add)
	for handled.Load() < n/4 {
		time.Sleep(5 * time.Millisecond)
	}
	start := time.Now()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("stop took %s with records in flight", took)
	}
	if handled.Load() >= n {
		t.Log("every record was handled before the stop")
	}
	stop = startRuntime(t, brokers, cat, "", add)
	defer func() { _ = stop() }()
	deadline := time.After(90 * time.Second)
	for len(seen) < n {
		select {
		case r := <-outs:
			seen[string(r.Key)] = true
		case <-deadline:
			t.Fatalf("outputs for %d of %d inputs", len(seen), n)
		}
	}
}

// TestConcurrencyBoundsHandlersNotUnsettled: a stage runs at most
// Concurrency handlers at once, and reaches that many, while more records
// than that may wait for their outputs to be acknowledged.
func TestConcurrencyBoundsHandlersNotUnsettled(t *testing.T) {
	brokers := pipelinetest.Embedded(t)
	cat := pipelinetest.Catalog(t, brokers, 2)
	in, out := cat.Topic(topics.Prompts), cat.Topic(topics.Candidates)
	const n, conc = 300, 3
	recs := make([]pipeline.Out, n)
	for i := range recs {
		tree := "tree-" + strconv.Itoa(i)
		recs[i] = pipeline.Out{Topic: in, Key: tree, Value: mustEncode(t, prompt(tree))}
	}
	pipelinetest.Produce(t, brokers, recs...)
	var running, most atomic.Int64
	h := passThrough(out)
	stop := startRuntime(t, brokers, cat, "", func(rt *pipeline.Runtime) {
		err := rt.AddStage(pipeline.Stage{Name: "pass", Inputs: []string{in}, Concurrency: conc,
			Handler: func(ctx context.Context, rec pipeline.Record) ([]pipeline.Out, error) {
				now := running.Add(1)
				defer running.Add(-1)
				for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
				}
				time.Sleep(time.Millisecond)
				return h(ctx, rec)
			}})
		if err != nil {
			t.Fatal(err)
		}
	})
	defer func() { _ = stop() }()
	got := pipelinetest.ReadN(t, brokers, out, n, 90*time.Second)
	seen := map[string]bool{}
	for _, r := range got {
		seen[string(r.Key)] = true
	}
	if len(seen) != n {
		t.Fatalf("outputs for %d of %d inputs", len(seen), n)
	}
	if m := most.Load(); m != conc {
		t.Fatalf("at most %d handlers ran at once, want %d", m, conc)
	}
}
