package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/internal/dataset"
	"github.com/murphy-rl/murphy/pipeline/pipelinetest"
)

// The closed loop of stages/generate/VERSIONS.md, as separate processes on
// the real broker: one process per stage, generate on the openai policy
// following the policy-versions topic and bounded by trainer progress, a
// fake server that answers as the model each request names, and the
// example trainer (python/examples/grpo_trainer.py) taking GRPO steps on a
// tiny CPU model and publishing versions.

const (
	loopEta             = 1 // the trainer's max_staleness
	loopVersions        = 3
	loopTreesPerStep    = 2
	loopStepsPerVersion = 2
	loopVocab           = 257 // the fake server's byte tokens: byte + 1
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

// versionedServer is an OpenAI-compatible server that answers as the model
// a request names, once that model was loaded (vLLM's
// /v1/load_lora_adapter, the vllm load hook preset): a request for a model
// not loaded fails as vLLM's does (404). Every answer says which model
// wrote it ("# answered by <model>") and is right with probability 1/2.
// Tokens are bytes (id = byte + 1).
type versionedServer struct {
	url string

	mu       sync.Mutex
	loaded   map[string]string // model -> lora_path
	loads    []string          // models in load order
	requests map[string]int    // model -> requests answered
	unknown  map[string]int    // model -> requests refused: not loaded
	rng      *rand.Rand
}

var loopDefRE = regexp.MustCompile(`def (\w+)\(`)

func startVersionedServer(t *testing.T, initial string) *versionedServer {
	s := &versionedServer{loaded: map[string]string{initial: ""}, requests: map[string]int{}, unknown: map[string]int{},
		rng: rand.New(rand.NewPCG(7, 7))}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		var data []any
		for m := range s.loaded {
			data = append(data, map[string]any{"id": m, "object": "model"})
		}
		s.mu.Unlock()
		loopJSON(w, 200, map[string]any{"object": "list", "data": data})
	})
	mux.HandleFunc("POST /v1/load_lora_adapter", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Name string `json:"lora_name"`
			Path string `json:"lora_path"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Name == "" {
			loopJSON(w, 400, map[string]any{"error": map[string]any{"message": "bad request"}})
			return
		}
		if _, err := os.Stat(filepath.Join(req.Path, "model.pt")); err != nil {
			loopJSON(w, 400, map[string]any{"error": map[string]any{"message": "no checkpoint: " + err.Error()}})
			return
		}
		s.mu.Lock()
		if _, ok := s.loaded[req.Name]; !ok {
			s.loads = append(s.loads, req.Name)
		}
		s.loaded[req.Name] = req.Path
		s.mu.Unlock()
		w.WriteHeader(200)
		_, _ = io.WriteString(w, "Success: LoRA adapter '"+req.Name+"' added successfully.")
	})
	mux.HandleFunc("POST /v1/chat/completions", s.chat)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	s.url = "http://" + ln.Addr().String() + "/v1"
	return s
}

func loopJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func byteTokens(s string) []int {
	ids := make([]int, len(s))
	for i := range len(s) {
		ids[i] = int(s[i]) + 1
	}
	return ids
}

func (s *versionedServer) chat(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model    string `json:"model"`
		N        int    `json:"n"`
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		loopJSON(w, 400, map[string]any{"error": map[string]any{"message": "bad json"}})
		return
	}
	var prompt strings.Builder
	for _, m := range req.Messages {
		prompt.WriteString(m.Content)
	}
	name := ""
	if m := loopDefRE.FindStringSubmatch(prompt.String()); m != nil {
		name = m[1]
	}
	n := max(req.N, 1)
	s.mu.Lock()
	if _, ok := s.loaded[req.Model]; !ok {
		s.unknown[req.Model]++
		s.mu.Unlock()
		loopJSON(w, 404, map[string]any{"error": map[string]any{"message": "The model `" + req.Model + "` does not exist.",
			"type": "NotFoundError", "code": 404}})
		return
	}
	s.requests[req.Model]++
	right := make([]bool, n)
	for i := range right {
		right[i] = s.rng.IntN(2) == 0
	}
	s.mu.Unlock()
	choices := make([]any, n)
	for i := range choices {
		body := "return None"
		for _, lt := range loopTasks {
			if lt.name == name {
				body = lt.wrong
				if right[i] {
					body = lt.right
				}
			}
		}
		text := fmt.Sprintf("```python\n# answered by %s\ndef %s(a, b):\n    %s\n```", req.Model, name, body)
		choices[i] = map[string]any{"index": i, "finish_reason": "stop", "token_ids": byteTokens(text),
			"message": map[string]any{"role": "assistant", "content": text}}
	}
	loopJSON(w, 200, map[string]any{"object": "chat.completion", "model": req.Model, "choices": choices,
		"prompt_token_ids": byteTokens(prompt.String())})
}

func (s *versionedServer) snapshot() (requests, unknown map[string]int, loads []string, paths map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	requests, unknown, paths = map[string]int{}, map[string]int{}, map[string]string{}
	for k, v := range s.requests {
		requests[k] = v
	}
	for k, v := range s.unknown {
		unknown[k] = v
	}
	for k, v := range s.loaded {
		paths[k] = v
	}
	return requests, unknown, append([]string(nil), s.loads...), paths
}

// loopPython is python3 when it imports what the trainer needs; otherwise
// the test skips (fails in CI).
func loopPython(t *testing.T) string {
	py, err := exec.LookPath("python3")
	if err == nil {
		var out []byte
		out, err = exec.Command(py, "-c", "import torch, confluent_kafka, pyarrow, numpy").CombinedOutput()
		if err != nil {
			err = fmt.Errorf("%v: %s", err, out)
		}
	}
	if err != nil {
		if os.Getenv("CI") != "" || os.Getenv("MURPHY_REQUIRE_PYTHON") != "" {
			t.Fatalf("python3 with torch, confluent-kafka and pyarrow is required here (python/install-test-deps.sh): %v", err)
		}
		t.Skipf("python3 with torch, confluent-kafka and pyarrow not available (python/install-test-deps.sh): %v", err)
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

// checkTrainerRows: generate exports the rows the trainer trained from its
// last progress record, by staleness, as its reader counted them: every
// one within the bound.
func checkTrainerRows(t *testing.T, genHTTP string, events []trainerEvent) {
	t.Helper()
	trained := -1
	for _, e := range events {
		if e.Event == "done" {
			trained = 0
			for _, n := range e.StalenessRows {
				trained += n
			}
		}
	}
	if trained < 0 {
		return // no done event: reported below
	}
	series := func(suffix, le string) string {
		if le != "" {
			le = `,le="` + le + `"`
		}
		return `murphy_trainer_row_staleness_versions_` + suffix + `{stage="generate",trainer="loop"` + le + `}`
	}
	count := metric(genHTTP, series("count", ""))
	for deadline := time.Now().Add(15 * time.Second); count != float64(trained) && time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond) // the last progress record is on its way
		count = metric(genHTTP, series("count", ""))
	}
	within := metric(genHTTP, series("bucket", strconv.Itoa(loopEta)))
	t.Logf("generate: trainer loop trained %v rows, %v within the bound", count, within)
	if trained == 0 || count != float64(trained) || within != count {
		t.Errorf("generate exports %v rows trained by loop, %v of staleness <= %d; the reader yielded %d",
			count, within, loopEta, trained)
	}
}

type trainerEvent struct {
	Event         string           `json:"event"`
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

// TestClosedLoop: the example trainer trains on the pipeline's batches and
// publishes versions; every version reaches generate (the fake server is
// asked for each version's model, after its load hook), no trained row is
// more than η versions stale, and every row records the version of the
// model that wrote it.
func TestClosedLoop(t *testing.T) {
	brokers := pipelinetest.Brokers(t)
	py := loopPython(t)
	bin := buildBinary(t)
	srv := startVersionedServer(t, "tiny-v0")
	tasksFile := writeLoopTasks(t)
	genHTTP := freeAddr(t)

	d := newDeployment(t, bin, brokers)
	d.extra = map[string][]string{
		"generate": {"--generate.policy.kind", "openai", "--generate.policy.openai.client.base-url", srv.url,
			"--generate.policy.openai.client.model", "tiny-v0", "--generate.policy.openai.client.return-token-ids",
			"--generate.policy.openai.logprobs=false", "--generate.policy.openai.max-tokens", "128",
			"--generate.policy.openai.client.max-retries", "1",
			"--generate.versions.follow", "--generate.versions.load.preset", "vllm",
			"--generate.versions.load.attempts", "2", "--generate.versions.load.backoff", "100ms",
			"--generate.versions.retry-interval", "1s",
			"--generate.staleness.enabled", "--generate.staleness.poll-interval", "200ms",
			"--http_addr", genHTTP},
		"emit": {"--emit.max-age", "300ms", "--emit.tick-interval", "100ms"},
	}
	for _, r := range []string{"generate#1", "execute#1", "govern#1", "credit#1", "emit#1"} {
		d.start(r)
	}

	logPath := filepath.Join(t.TempDir(), "trainer.jsonl")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	tr := exec.CommandContext(ctx, py, filepath.Join(repoRoot(t), "python", "examples", "grpo_trainer.py"),
		"--brokers", d.brokers, "--topic-prefix", d.prefix, "--trainer-id", "loop", "--group", d.prefix+"trainer",
		"--max-staleness", strconv.Itoa(loopEta), "--trees-per-step", strconv.Itoa(loopTreesPerStep),
		"--steps-per-version", strconv.Itoa(loopStepsPerVersion), "--versions", strconv.Itoa(loopVersions),
		"--model-prefix", "tiny-v", "--adapter", "--checkpoint-dir", t.TempDir(),
		"--vocab-size", strconv.Itoa(loopVocab), "--max-length", "384", "--d-model", "32",
		"--timeout", "180", "--log-json", logPath)
	trOut, err := os.Create(filepath.Join(d.logs, "trainer.log"))
	if err != nil {
		t.Fatal(err)
	}
	tr.Stdout, tr.Stderr = trOut, trOut
	start := time.Now()
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	trDone := make(chan error, 1)
	go func() { trDone <- tr.Wait(); trOut.Close() }()

	// Submit once generate is bounded by the trainer's first progress, so
	// that no tree starts unbounded.
	for metric(genHTTP, "murphy_generate_trainers_bounding") != 1 {
		select {
		case err := <-trDone:
			t.Fatalf("trainer exited before reporting progress (%v); logs in %s:\n%s", err, d.logs, d.tail())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Since(start) > 90*time.Second {
			t.Fatalf("generate not bounded by the trainer after 90s; logs in %s:\n%s", d.logs, d.tail())
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

	var trErr error
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
wait:
	for {
		select {
		case trErr = <-trDone:
			break wait
		case <-tick.C:
			d.checkAlive()
		case <-ctx.Done():
			t.Fatalf("trainer still running after 4m; logs in %s:\n%s", d.logs, d.tail())
		}
	}
	t.Logf("trainer finished after %s (%v)", time.Since(start).Round(time.Millisecond), trErr)
	served := metric(genHTTP, "murphy_generate_policy_version")
	if trErr == nil {
		checkTrainerRows(t, genHTTP, readTrainerLog(t, logPath))
	}
	if unclean := d.stopAll(); len(unclean) > 0 {
		t.Errorf("SIGTERM: %v did not finish and exit 0", unclean)
	}
	trainerLog, _ := os.ReadFile(filepath.Join(d.logs, "trainer.log"))
	t.Logf("trainer:\n%s", lastLines(string(trainerLog), 30))
	if trErr != nil {
		t.Fatalf("trainer: %v; logs in %s:\n%s", trErr, d.logs, d.tail())
	}

	events := readTrainerLog(t, logPath)
	var versions []trainerEvent
	trainedByVersion := map[int64]int{}
	rows := 0
	var done *trainerEvent
	for i, e := range events {
		switch e.Event {
		case "version":
			versions = append(versions, e)
		case "step":
			for s, n := range e.Staleness {
				st, err := strconv.Atoi(s)
				if err != nil || st < 0 || st > loopEta {
					t.Errorf("step %d at version %d trained %d rows of staleness %s (bound %d)", e.Step, e.Version, n, s, loopEta)
				}
				rows += n
			}
			for v, n := range e.RowVersions {
				pv, _ := strconv.ParseInt(v, 10, 64)
				trainedByVersion[pv] += n
			}
		case "done":
			done = &events[i]
		}
	}
	if done == nil {
		t.Fatal("trainer log has no done event")
	}
	for s := range done.StalenessRows {
		if st, _ := strconv.Atoi(s); st > loopEta {
			t.Errorf("the reader yielded rows of staleness %s (bound %d): %v", s, loopEta, done.StalenessRows)
		}
	}
	t.Logf("trained %d rows by version %v; reader dropped %v; generate serves version %v", rows, trainedByVersion, done.Dropped, served)

	// Every version change reached generate: loaded through the hook with
	// the checkpoint the trainer wrote, then asked for by new trees.
	requests, unknown, loads, paths := srv.snapshot()
	t.Logf("server: requests by model %v, loads %v", requests, loads)
	if len(versions) != loopVersions {
		t.Fatalf("trainer published %d versions, want %d", len(versions), loopVersions)
	}
	var wantLoads []string
	for i, v := range versions {
		want := "tiny-v" + strconv.Itoa(i+1)
		if v.Version != int64(i+1) || v.Model != want {
			t.Errorf("version %d: %d %q, want %d %q", i, v.Version, v.Model, i+1, want)
		}
		wantLoads = append(wantLoads, v.Model)
		if paths[v.Model] != v.CheckpointURI {
			t.Errorf("%s loaded from %q, published with checkpoint %q", v.Model, paths[v.Model], v.CheckpointURI)
		}
		if requests[v.Model] == 0 {
			t.Errorf("generate never asked for %s (version %d)", v.Model, v.Version)
		}
		if trainedByVersion[v.Version] == 0 {
			t.Errorf("no row of version %d was trained", v.Version)
		}
	}
	if requests["tiny-v0"] == 0 || trainedByVersion[0] == 0 {
		t.Errorf("version 0 (tiny-v0): %d requests, %d rows trained", requests["tiny-v0"], trainedByVersion[0])
	}
	if strings.Join(loads, ",") != strings.Join(wantLoads, ",") {
		t.Errorf("load hook calls %v, want %v", loads, wantLoads)
	}
	if len(unknown) > 0 {
		t.Errorf("requests for models not loaded: %v", unknown)
	}
	if served != loopVersions {
		t.Errorf("generate serves version %v at the end, want %d", served, loopVersions)
	}

	// Every candidate records the version of the model that wrote it.
	emitted, err := dataset.ReadDir(d.out)
	if err != nil {
		t.Fatal(err)
	}
	answered := regexp.MustCompile(`# answered by (\S+)`)
	byVersion, policies := map[string]int{}, map[string]int{}
	for _, r := range emitted {
		policies[fmt.Sprint(r["policy"])]++
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
	keys := make([]string, 0, len(byVersion))
	for k := range byVersion {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	t.Logf("emitted rows: %d, by version %v (%v), policy column %v", len(emitted), byVersion, keys, policies)
	if len(emitted) == 0 {
		t.Error("no row emitted to files")
	}
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
