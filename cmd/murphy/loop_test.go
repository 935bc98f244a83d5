package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/internal/dataset"
	"github.com/murphy-rl/murphy/openai/fakeserver"
	"github.com/murphy-rl/murphy/pipeline/pipelinetest"
)

// The closed loop of stages/generate/VERSIONS.md in the shape users deploy
// it, as separate processes on the real broker: one process per stage and
// two generate replicas on the openai policy over a pool of two vLLM-like
// servers (openai/fakeserver, vLLM 0.8's LoRA endpoints and errors),
// following the policy-versions topic and bounded by the progress of two
// example trainers (python/examples/grpo_trainer.py: GRPO steps on a tiny
// CPU model under a PEFT LoRA, one publishing its adapters as versions),
// with the readers' staleness filter off.

const (
	loopEta             = 1 // both trainers' max_staleness
	loopVersions        = 3
	loopTreesPerStep    = 2
	loopStepsPerVersion = 2
	loopVocab           = 257 // the fake server's byte tokens: byte + 1
	// trainer b counts a version every 3×2 trees, publishing none: it
	// stays behind a, whose versions generate serves.
	loopBTreesPerStep = 3
)

// loopTasks are tiny python-function tasks the fake server knows how to
// answer right and wrong.
var loopTasks = []struct{ name, doc, right, wrong string }{
	{"add", "Return a + b.", "return a + b", "return a - b"},
	{"mul", "Return a * b.", "return a * b", "return a + b"},
	{"sub", "Return a - b.", "return a - b", "return b - a"},
}

func writeLoopTasks(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "tasks.jsonl")
	var b strings.Builder
	for _, lt := range loopTasks {
		task := map[string]any{
			"schema_version": 1, "task_id": "loop/" + lt.name, "kind": "python-function", "source": "loop-test",
			"prompt":      fmt.Sprintf("def %s(a: int, b: int) -> int:\n    \"\"\"%s\"\"\"\n", lt.name, lt.doc),
			"entry_point": lt.name, "reference": fmt.Sprintf("def %s(a, b):\n    %s\n", lt.name, lt.right),
			"tests": []map[string]any{
				{"name": "1", "args": "2, 3", "expected": loopEval(lt.right, 2, 3), "hidden": false},
				{"name": "2", "args": "7, 1", "expected": loopEval(lt.right, 7, 1), "hidden": true},
				{"name": "3", "args": "0, 4", "expected": loopEval(lt.right, 0, 4), "hidden": true},
			},
		}
		line, err := json.Marshal(task)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func loopEval(body string, a, b int) string {
	switch body {
	case "return a + b":
		return strconv.Itoa(a + b)
	case "return a * b":
		return strconv.Itoa(a * b)
	case "return a - b":
		return strconv.Itoa(a - b)
	}
	return strconv.Itoa(b - a)
}

// loopPython is python3 when it imports what the trainer needs; otherwise
// the test skips (fails in CI).
func loopPython(t *testing.T) string {
	py, err := exec.LookPath("python3")
	if err == nil {
		var out []byte
		out, err = exec.Command(py, "-c", "import torch, confluent_kafka, pyarrow, numpy, peft, safetensors").CombinedOutput()
		if err != nil {
			err = fmt.Errorf("%v: %s", err, out)
		}
	}
	if err != nil {
		if os.Getenv("CI") != "" || os.Getenv("MURPHY_REQUIRE_PYTHON") != "" {
			t.Fatalf("python3 with torch, confluent-kafka, pyarrow and peft is required here (python/install-test-deps.sh): %v", err)
		}
		t.Skipf("python3 with torch, confluent-kafka, pyarrow and peft not available (python/install-test-deps.sh): %v", err)
	}
	return py
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// metric is the value of a metric without labels other than stage on a
// /metrics page (-1: absent).
func metric(addr, name string) float64 {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && (f[0] == name || strings.HasPrefix(f[0], name+`{stage="generate"}`)) {
			v, err := strconv.ParseFloat(f[1], 64)
			if err == nil {
				return v
			}
		}
	}
	return -1
}

type trainerEvent struct {
	Event         string           `json:"event"`
	Time          float64          `json:"time"`
	Consumed      map[string]int64 `json:"consumed"`
	RowsTrained   [][2]any         `json:"rows_trained"`
	Step          int              `json:"step"`
	Version       int64            `json:"version"`
	Model         string           `json:"model"`
	CheckpointURI string           `json:"checkpoint_uri"`
	Rows          int              `json:"rows"`
	RowVersions   map[string]int   `json:"row_versions"`
	Staleness     map[string]int   `json:"staleness"`
	StalenessRows map[string]int   `json:"staleness_rows"`
	Dropped       map[string]int64 `json:"dropped"`
	Code          int              `json:"code"`
}

func readTrainerLog(t *testing.T, path string) []trainerEvent {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []trainerEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e trainerEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("trainer log: %v: %s", err, sc.Text())
		}
		out = append(out, e)
	}
	return out
}

// loopTrainer starts the example trainer; it logs to name.log and its
// events to name.jsonl in d's log folder.
func loopTrainer(t *testing.T, ctx context.Context, py string, d *deployment, name, ckpt string, args ...string) (*exec.Cmd, chan error, string) {
	logPath := filepath.Join(d.logs, name+".jsonl")
	base := []string{filepath.Join(repoRoot(t), "python", "examples", "grpo_trainer.py"),
		"--brokers", d.brokers, "--topic-prefix", d.prefix, "--max-staleness", strconv.Itoa(loopEta),
		"--steps-per-version", strconv.Itoa(loopStepsPerVersion), "--versions", strconv.Itoa(loopVersions),
		"--model-prefix", "tiny-v", "--adapter", "--checkpoint-dir", ckpt, "--no-filter", "--heartbeat", "1",
		"--vocab-size", strconv.Itoa(loopVocab), "--max-length", "384", "--d-model", "32", "--timeout", "150", "--log-json", logPath}
	cmd := exec.CommandContext(ctx, py, append(base, args...)...)
	out, err := os.OpenFile(filepath.Join(d.logs, name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait(); out.Close() }()
	return cmd, done, logPath
}

// waitEvent waits until the trainer log at path has an event that ok
// accepts.
func waitEvent(t *testing.T, d *deployment, path string, done chan error, timeout time.Duration, ok func(trainerEvent) bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if _, err := os.Stat(path); err == nil {
			for _, e := range readTrainerLog(t, path) {
				if ok(e) {
					return
				}
			}
		}
		select {
		case err := <-done:
			t.Fatalf("trainer exited (%v); logs in %s:\n%s", err, d.logs, d.tail())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("trainer event not seen after %s; logs in %s:\n%s", timeout, d.logs, d.tail())
		}
		d.checkAlive()
	}
}

// TestClosedLoop: two generate replicas over a pool of two vLLM-like
// servers, two trainers with the readers' staleness filter off (a
// publishes its PEFT adapters as versions; b reads the same stream and
// publishes none). Mid-run trainer a is killed and resumes from its last
// progress record and committed offsets, generate#2 is killed and
// restarted, and server 0 restarts and loses its adapters. From the
// admission log and the rows: no grant exceeded either bound, no trained
// row is staler than η beyond the documented reordering, every version was
// loaded (from the adapter the trainer wrote) before it was asked for, and
// every row records the version of the model that wrote it.
func TestClosedLoop(t *testing.T) {
	brokers := pipelinetest.Brokers(t)
	py := loopPython(t)
	bin := buildBinary(t)
	servers := loopServers(t, "tiny-v0")
	tasksFile := writeLoopTasks(t)
	genHTTP := []string{freeAddr(t), freeAddr(t)}

	d := newDeployment(t, bin, brokers)
	d.extra = map[string][]string{
		"generate": {"--generate.policy.kind", "openai", "--generate.policy.openai.pool.servers", servers[0].URL() + "," + servers[1].URL(),
			"--generate.policy.openai.pool.health-backoff-initial", "50ms", "--generate.policy.openai.pool.health-backoff-max", "500ms",
			"--generate.policy.openai.client.model", "tiny-v0", "--generate.policy.openai.client.return-token-ids",
			"--generate.policy.openai.logprobs=false", "--generate.policy.openai.max-tokens", "128",
			"--generate.policy.openai.client.max-retries", "6", "--generate.policy.openai.client.backoff-initial", "50ms",
			"--generate.versions.follow", "--generate.versions.load.preset", "vllm", "--generate.versions.load.keep", "3",
			"--generate.versions.load.attempts", "2", "--generate.versions.load.backoff", "100ms",
			"--generate.versions.retry-interval", "1s",
			"--generate.staleness.enabled", "--generate.staleness.poll-interval", "200ms", "--generate.staleness.progress-ttl", "1m"},
		"emit": {"--emit.max-age", "300ms", "--emit.tick-interval", "100ms"},
	}
	d.replicaExtra = map[string][]string{
		"generate#1": {"--generate.instance-id", "gen-1", "--http_addr", genHTTP[0]},
		"generate#2": {"--generate.instance-id", "gen-2", "--http_addr", genHTTP[1]},
	}
	for _, r := range []string{"generate#1", "generate#2", "execute#1", "govern#1", "credit#1", "emit#1"} {
		d.start(r)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ckptA, ckptB := t.TempDir(), t.TempDir()
	start := time.Now()
	aCmd, aDone, aLog1 := loopTrainer(t, ctx, py, d, "trainer-a1", ckptA, "--trainer-id", "a", "--group", d.prefix+"trainer-a",
		"--trees-per-step", strconv.Itoa(loopTreesPerStep))
	_, bDone, bLog := loopTrainer(t, ctx, py, d, "trainer-b", ckptB, "--trainer-id", "b", "--group", d.prefix+"trainer-b",
		"--trees-per-step", strconv.Itoa(loopBTreesPerStep), "--no-publish-versions", "--versions", "2")

	// Submit once both replicas are bounded by both trainers.
	for metric(genHTTP[0], "murphy_generate_trainers_bounding") != 2 || metric(genHTTP[1], "murphy_generate_trainers_bounding") != 2 {
		select {
		case err := <-aDone:
			t.Fatalf("trainer a exited before reporting progress (%v); logs in %s:\n%s", err, d.logs, d.tail())
		case err := <-bDone:
			t.Fatalf("trainer b exited before reporting progress (%v); logs in %s:\n%s", err, d.logs, d.tail())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Since(start) > 90*time.Second {
			t.Fatalf("generate not bounded by both trainers after 90s; logs in %s:\n%s", d.logs, d.tail())
		}
		d.checkAlive()
	}
	out, err := exec.Command(bin, "submit", "--tasks", tasksFile, "--brokers", d.brokers, "--topic-prefix", d.prefix,
		"--partitions", "4", "--run-id", "loop", "--seed", "1", "--group-sizes", "2", "--max-turns", "2",
		"--trees-per-task", "16", "--calibrate=false").CombinedOutput()
	if err != nil {
		t.Fatalf("submit: %v\n%s", err, out)
	}
	t.Logf("bounded after %s; submitted", time.Since(start).Round(time.Millisecond))

	// Version 1 published: trainer a is killed and comes back; generate#2
	// is killed and restarted; server 0 restarts and loses its adapters.
	waitEvent(t, d, aLog1, aDone, 2*time.Minute, func(e trainerEvent) bool { return e.Event == "version" && e.Version == 1 })
	servers[0].Crash()
	d.kill9("generate#2")
	if err := servers[0].Restart(); err != nil {
		t.Fatal(err)
	}
	d.start("generate#2")
	waitEvent(t, d, aLog1, aDone, time.Minute, func(e trainerEvent) bool { return e.Event == "step" && e.Version == 1 })
	_ = aCmd.Process.Kill() // no last report: it resumes from its last progress record
	<-aDone                 //nolint:errcheck // killed: its exit status says nothing
	_, aDone, aLog2 := loopTrainer(t, ctx, py, d, "trainer-a2", ckptA, "--trainer-id", "a", "--group", d.prefix+"trainer-a",
		"--trees-per-step", strconv.Itoa(loopTreesPerStep))
	t.Logf("restarts done after %s", time.Since(start).Round(time.Millisecond))

	for _, done := range []chan error{aDone, bDone} {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("trainer: %v; logs in %s:\n%s", err, d.logs, d.tail())
			}
		case <-ctx.Done():
			t.Fatalf("trainers still running after 4m; logs in %s:\n%s", d.logs, d.tail())
		}
	}
	t.Logf("trainers finished after %s", time.Since(start).Round(time.Millisecond))
	served := []float64{metric(genHTTP[0], "murphy_generate_policy_version"), metric(genHTTP[1], "murphy_generate_policy_version")}
	if unclean := d.stopAll(); len(unclean) > 0 {
		t.Errorf("SIGTERM: %v did not finish and exit 0", unclean)
	}
	checkLoop(t, brokers, d, servers, served, append(readTrainerLog(t, aLog1), readTrainerLog(t, aLog2)...), readTrainerLog(t, bLog))
}

// checkLoop checks a closed-loop run from the admission log, the trainers'
// logs, the servers and the rows written.
func checkLoop(t *testing.T, brokers []string, d *deployment, servers []*fakeserver.Server, served []float64, aEvents, bEvents []trainerEvent) {
	t.Helper()
	grants := readGrants(t, brokers, d.prefix+"admissions")
	runs := []*trainerRun{
		newTrainerRun("a", loopEta, loopTreesPerStep*loopStepsPerVersion, aEvents),
		newTrainerRun("b", loopEta, loopBTreesPerStep*loopStepsPerVersion, bEvents),
	}
	checkAdmissions(t, grants, runs)
	bounded := 0
	for _, g := range grants {
		if g.bounded {
			bounded++
		}
	}
	t.Logf("admission log: %d trees granted, %d of them under a bound", len(grants), bounded)
	for _, r := range runs {
		maxStale, reordered := checkStaleness(t, grants, r)
		t.Logf("trainer %s (η=%d, k=%d): %d rows trained, by staleness%s; at most %d stale, %d rows past η by reordering",
			r.name, r.eta, r.k, len(r.trained), stalenessHistogram(r), maxStale, reordered)
		if len(r.trained) == 0 {
			t.Errorf("trainer %s trained no row", r.name)
		}
	}

	// Trainer a: versions 1..3 published once each, across its restart,
	// which resumed at a version it had reached.
	var published []string
	resumed := false
	for _, e := range aEvents {
		switch e.Event {
		case "version":
			published = append(published, e.Model)
		case "resume":
			resumed = e.Version >= 1 && len(e.Consumed) > 0
		}
	}
	if strings.Join(published, ",") != "tiny-v1,tiny-v2,tiny-v3" || !resumed {
		t.Errorf("trainer a published %v (want tiny-v1..3 once each), resumed from its progress: %v", published, resumed)
	}
	trainedByVersion := map[int64]int{}
	for _, row := range runs[0].trained {
		trainedByVersion[row.rowVersion]++
	}
	for v := int64(0); v <= loopVersions; v++ {
		if trainedByVersion[v] == 0 {
			t.Errorf("trainer a trained no row of version %d: %v", v, trainedByVersion)
		}
	}
	for i, v := range served {
		if v != loopVersions {
			t.Errorf("generate#%d serves version %v at the end, want %d", i+1, v, loopVersions)
		}
	}
	checkLoopServers(t, servers, published)
	checkLoopRows(t, d)
}

// checkLoopServers: every version's adapter was loaded on both servers
// (server 0 again after it lost them), server 1 never refused a request,
// and server 0 answered again after its restart.
func checkLoopServers(t *testing.T, servers []*fakeserver.Server, published []string) {
	t.Helper()
	for i, srv := range servers {
		st := srv.Stats()
		t.Logf("server %d: loads %v, unloads %v, at most %d adapters at once; answered %v, refused %v", i, st.Loads, st.Unloads, st.MaxLoaded, st.Models, st.Unknown)
		for _, m := range published {
			if !slices.Contains(st.Loads, m) {
				t.Errorf("server %d never loaded %s", i, m)
			}
		}
		if st.MaxLoaded > 4 {
			t.Errorf("server %d held %d adapters at once: keep is 3 (+1 loading)", i, st.MaxLoaded)
		}
	}
	if st := servers[1].Stats(); len(st.Unknown) > 0 {
		t.Errorf("server 1 refused requests for models not loaded: %v", st.Unknown)
	}
	if st := servers[0].Stats(); st.Models["tiny-v2"]+st.Models["tiny-v3"] == 0 {
		t.Errorf("server 0 answered nothing after its restart: %v", st.Models)
	}
}

// checkLoopRows: every row records the version of the model that wrote it
// and none failed.
func checkLoopRows(t *testing.T, d *deployment) {
	t.Helper()
	emitted, err := dataset.ReadDir(d.out)
	if err != nil {
		t.Fatal(err)
	}
	answered := regexp.MustCompile(`# answered by (\S+)`)
	byVersion := map[string]int{}
	for _, r := range emitted {
		pv := fmt.Sprint(r["policy_version"])
		text, _ := r["response_text"].(string)
		m := answered.FindStringSubmatch(text)
		if m == nil {
			t.Errorf("row %v (version %s) has no answer: %q (%v)", r["node_id"], pv, text, r["failure_cause"])
			continue
		}
		if m[1] != "tiny-v"+pv {
			t.Errorf("row %v records version %s but was written by %s", r["node_id"], pv, m[1])
		}
		if pol := fmt.Sprint(r["policy"]); !strings.HasSuffix(pol, ":"+m[1]) {
			t.Errorf("row %v names policy %s, written by %s", r["node_id"], pol, m[1])
		}
		byVersion[pv]++
	}
	t.Logf("emitted rows: %d, by version %v", len(emitted), byVersion)
	if len(emitted) == 0 {
		t.Error("no row emitted to files")
	}
}
