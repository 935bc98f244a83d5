package emit

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/pipeline/pipelinetest"
	"github.com/murphy-rl/murphy/topics"
)

// The kill-and-restart test runs the stage in a child process (this test
// binary, re-executed) so that it can be killed with SIGKILL.
const (
	helperEnv           = "MURPHY_EMIT_HELPER"
	helperBrokersEnv    = "MURPHY_EMIT_HELPER_BROKERS"
	helperPrefixEnv     = "MURPHY_EMIT_HELPER_PREFIX"
	helperPartitionsEnv = "MURPHY_EMIT_HELPER_PARTITIONS"
	helperDirEnv        = "MURPHY_EMIT_HELPER_DIR"
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		if err := runHelper(); err != nil {
			fmt.Fprintln(os.Stderr, "emit helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runHelper runs the emit stage on the runtime until SIGTERM.
func runHelper() error {
	parts, err := strconv.Atoi(os.Getenv(helperPartitionsEnv))
	if err != nil {
		return err
	}
	prefix := os.Getenv(helperPrefixEnv)
	cat := topics.Catalog{Prefix: prefix, Partitions: parts}
	kc := pipeline.DefaultKafkaConfig()
	kc.Brokers = strings.Split(os.Getenv(helperBrokersEnv), ",")
	kc.ClientID = "emit-helper"
	rt, err := pipeline.NewRuntime(pipeline.RuntimeConfig{Kafka: kc, Catalog: cat, Name: "emit-helper",
		GroupPrefix: prefix, ShutdownTimeout: 20 * time.Second,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		return err
	}
	cfg := DefaultConfig()
	cfg.Dir, cfg.Formats = os.Getenv(helperDirEnv), []string{FormatIPC, FormatParquet}
	cfg.MaxRows, cfg.MaxAge, cfg.FileMaxAge, cfg.TickInterval = 9, 200*time.Millisecond, 700*time.Millisecond, 100*time.Millisecond
	st, err := NewStage(cfg, rt.Producer(), cat, kc, rt.Registry())
	if err != nil {
		return err
	}
	if err := rt.AddPartitionStage(st.Spec()); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	err = rt.Run(ctx)
	fmt.Printf("emit stats: skipped=%v rebuilt=%v trees=%v\n", counter(st.metrics.skipped), counter(st.metrics.rebuilt), counter(st.metrics.trees))
	return err
}

func counter(c prometheus.Counter) float64 {
	var d dto.Metric
	if err := c.Write(&d); err != nil {
		return -1
	}
	return d.GetCounter().GetValue()
}

type helper struct {
	cmd *exec.Cmd
	out *strings.Builder
}

func startHelper(t *testing.T, brokers []string, cat topics.Catalog, dir string) *helper {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=1", helperBrokersEnv+"="+strings.Join(brokers, ","),
		helperPrefixEnv+"="+cat.Prefix, helperPartitionsEnv+"="+strconv.Itoa(cat.Partitions), helperDirEnv+"="+dir)
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &helper{cmd: cmd, out: out}
	t.Cleanup(func() {
		if h.cmd.ProcessState == nil {
			_ = h.cmd.Process.Kill()
			_ = h.cmd.Wait()
		}
	})
	return h
}

func (h *helper) kill(t *testing.T) {
	t.Helper()
	if err := h.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = h.cmd.Wait()
}

func (h *helper) stop(t *testing.T) {
	t.Helper()
	if err := h.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- h.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("helper exited with %v:\n%s", err, h.out)
		}
	case <-time.After(60 * time.Second):
		_ = h.cmd.Process.Kill()
		t.Fatalf("helper did not stop:\n%s", h.out)
	}
}

// readBatches reads every message of the batches topic (from the start).
func readBatches(t *testing.T, brokers []string, topic string) []pipeline.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	kc := pipelinetest.Kafka(brokers)
	n, err := pipeline.Partitions(ctx, kc, topic)
	if err != nil {
		t.Fatal(err)
	}
	var all []pipeline.Record
	for q := range n {
		_, end, err := pipeline.PartitionBounds(ctx, kc, topic, q)
		if err != nil {
			t.Fatal(err)
		}
		if err := pipeline.ReadRange(ctx, kc, topic, q, 0, end, func(r pipeline.Record) error {
			all = append(all, r)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	return all
}

// batchRows decodes batch messages into rows keyed by (tree, node).
func batchRows(t *testing.T, recs []pipeline.Record) (map[string]int, []string) {
	t.Helper()
	count := map[string]int{}
	var ids []string
	for _, m := range recs {
		rec, err := DecodeStream(memory.DefaultAllocator, m.Value)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range readRows(t, rec) {
			count[rowKey(r)]++
		}
		rec.Release()
		if id, ok := m.Headers[HeaderBatchID]; ok {
			ids = append(ids, id)
		}
	}
	return count, ids
}

func produceTrees(t *testing.T, brokers []string, cat topics.Catalog, trees []topics.CreditedTree) {
	t.Helper()
	outs := make([]pipeline.Out, len(trees))
	for i := range trees {
		b, err := topics.Encode(&trees[i])
		if err != nil {
			t.Fatal(err)
		}
		outs[i] = pipeline.Out{Topic: cat.Topic(topics.Credited), Key: trees[i].TreeID, Value: b}
	}
	pipelinetest.Produce(t, brokers, outs...)
}

func waitBatches(t *testing.T, brokers []string, topic string, atLeast int, h *helper) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		if n := len(readBatches(t, brokers, topic)); n >= atLeast {
			return
		}
		time.Sleep(300 * time.Millisecond)
	}
	t.Fatalf("fewer than %d batches after 90s; helper output:\n%s", atLeast, h.out)
}

// Kill -9 the stage twice while it runs on the real broker, restart it, and
// every credited tree is in exactly one batch on the topic and in exactly one
// complete file per format. Then trainers read the batches: two consumer
// groups each see every batch; two ranks of a third group see disjoint sets
// whose union is everything.
func TestKillAndRestartOnBroker(t *testing.T) {
	brokers := pipelinetest.Brokers(t)
	cat := pipelinetest.Catalog(t, brokers, 3)
	dir := t.TempDir()
	batches := cat.Topic(topics.Batches)
	trees := genTrees(uint64(time.Now().UnixNano()), 400, testCreditConfig())
	for i := range trees { // tree ids unique to this run
		id := cat.Prefix + trees[i].TreeID
		trees[i].TreeID = id
		for j := range trees[i].Samples {
			trees[i].Samples[j].TreeID = id
		}
	}
	// Trees keep arriving while the stage is killed and restarted; the last
	// 100 arrive while it is down.
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		for i := 0; i < 300; i += 10 {
			produceTrees(t, brokers, cat, trees[i:i+10])
			time.Sleep(250 * time.Millisecond)
		}
	}()

	h := startHelper(t, brokers, cat, dir)
	waitBatches(t, brokers, batches, 5, h)
	h.kill(t)
	n := len(readBatches(t, brokers, batches))

	h = startHelper(t, brokers, cat, dir)
	waitBatches(t, brokers, batches, n+5, h)
	time.Sleep(1500 * time.Millisecond) // let files complete and offsets commit: the next run also skips
	h.kill(t)

	<-produced
	produceTrees(t, brokers, cat, trees[300:])
	h = startHelper(t, brokers, cat, dir)
	want := expectedRows(Range{}, treesAt(0, trees))
	deadline := time.Now().Add(120 * time.Second)
	for {
		count, _ := batchRows(t, readBatches(t, brokers, batches))
		if len(count) >= len(want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	h.stop(t)
	count, ids := batchRows(t, readBatches(t, brokers, batches))
	for _, w := range want {
		if count[rowKey(w)] != 1 {
			t.Fatalf("topic: %s appears %d times (helper output:\n%s)", rowKey(w), count[rowKey(w)], h.out)
		}
	}
	if len(count) != len(want) {
		t.Fatalf("topic: %d distinct rows, want %d", len(count), len(want))
	}
	seenIDs := map[string]bool{}
	for _, id := range ids {
		if seenIDs[id] {
			t.Fatalf("batch %s produced twice", id)
		}
		seenIDs[id] = true
	}
	files := readDir(t, dir)
	for _, format := range []string{FormatIPC, FormatParquet} {
		fc := map[string]int{}
		for _, r := range files[format] {
			fc[rowKey(r)]++
		}
		for _, w := range want {
			if fc[rowKey(w)] != 1 {
				t.Fatalf("%s files: %s appears %d times", format, rowKey(w), fc[rowKey(w)])
			}
		}
	}
	t.Logf("%d trees, %d rows, %d batches on the topic after two kills; last run: %s",
		len(trees), len(want), len(ids), strings.TrimSpace(h.out.String()))

	checkTrainers(t, brokers, batches, ids)
}

// checkTrainers runs python/tests/check_trainers.py against the topic.
func checkTrainers(t *testing.T, brokers []string, topic string, ids []string) {
	t.Helper()
	py := requirePyarrow(t)
	if err := exec.Command(py, "-c", "import confluent_kafka").Run(); err != nil {
		if os.Getenv("CI") != "" || os.Getenv("MURPHY_REQUIRE_PYTHON") == "1" {
			t.Fatalf("confluent-kafka is required here (run python/install-test-deps.sh): %v", err)
		}
		t.Skipf("confluent-kafka not installed: %v", err)
	}
	f := filepath.Join(t.TempDir(), "ids.json")
	b, _ := json.Marshal(ids)
	if err := os.WriteFile(f, b, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, py, filepath.Join("..", "..", "python", "tests", "check_trainers.py"),
		strings.Join(brokers, ","), topic, f).CombinedOutput()
	t.Logf("trainers:\n%s", out)
	if err != nil || !strings.Contains(string(out), "OK") {
		t.Fatalf("trainer check failed: %v", err)
	}
}

// TestFollowVersionsOnBroker: the stage learns the newest policy version
// from the policy-versions topic, records published before and after it
// started following, a bad record skipped, an older version ignored.
func TestFollowVersionsOnBroker(t *testing.T) {
	for _, bc := range []struct {
		name    string
		brokers func(testing.TB) []string
	}{{"embedded", pipelinetest.Embedded}, {"kafka", pipelinetest.Brokers}} {
		t.Run(bc.name, func(t *testing.T) {
			brokers := bc.brokers(t)
			cat := pipelinetest.Catalog(t, brokers, 1)
			kcfg := pipelinetest.Kafka(brokers)
			cfg := DefaultConfig()
			cfg.Topic, cfg.Dir = false, t.TempDir()
			s, err := NewStage(cfg, nil, cat, kcfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			pipelinetest.Produce(t, brokers, pipelinetest.VersionOut(t, cat, 1), pipelinetest.VersionOut(t, cat, 2))
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			s.Follow(ctx, kcfg)
			waitVersion := func(want int64) {
				t.Helper()
				deadline := time.Now().Add(30 * time.Second)
				for s.NewestVersion() != want {
					if time.Now().After(deadline) {
						t.Fatalf("newest version %d after 30s, want %d", s.NewestVersion(), want)
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
			waitVersion(2)
			pipelinetest.Produce(t, brokers,
				pipeline.Out{Topic: cat.Topic(topics.PolicyVersions), Key: "bad", Value: []byte("not a record")},
				pipelinetest.VersionOut(t, cat, 5), pipelinetest.VersionOut(t, cat, 3))
			waitVersion(5)
			time.Sleep(200 * time.Millisecond)
			if s.NewestVersion() != 5 {
				t.Fatalf("newest version %d after an older one, want 5", s.NewestVersion())
			}
		})
	}
}
