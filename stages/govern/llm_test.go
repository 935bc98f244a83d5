package govern

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/topics"
)

// chatServer is an httptest server speaking the OpenAI chat completions
// protocol; answer decides each reply from the request.
type chatServer struct {
	*httptest.Server
	requests atomic.Int64
	mu       sync.Mutex
	last     chatRequest
	answer   func(n int64, req chatRequest) (status int, content string)
	delay    time.Duration
}

type chatRequest struct {
	Model       string           `json:"model"`
	Messages    []topics.Message `json:"messages"`
	Temperature *float64         `json:"temperature"`
	MaxTokens   int              `json:"max_tokens"`
	N           int              `json:"n"`
}

func newChatServer(t *testing.T, answer func(n int64, req chatRequest) (int, string)) *chatServer {
	t.Helper()
	cs := &chatServer{answer: answer}
	cs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := cs.requests.Add(1)
		if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
			http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
			return
		}
		var req chatRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
			return
		}
		cs.mu.Lock()
		cs.last = req
		cs.mu.Unlock()
		if cs.delay > 0 {
			time.Sleep(cs.delay)
		}
		code, content := cs.answer(n, req)
		w.Header().Set("Content-Type", "application/json")
		if code != http.StatusOK {
			w.WriteHeader(code)
			_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": content, "type": "server_error"}})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": req.Model,
			"choices": []map[string]any{{"index": 0, "message": map[string]any{"role": "assistant", "content": content}, "finish_reason": "stop"}},
			"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
		})
	}))
	t.Cleanup(cs.Close)
	return cs
}

func (cs *chatServer) lastRequest() chatRequest {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.last
}

func llmConfig(baseURL string) LLMConfig {
	c := DefaultLLMConfig()
	c.Client.BaseURL = baseURL + "/v1"
	c.Client.Model = "judge-model"
	c.Client.Timeout = 5 * time.Second
	c.Client.MaxRetries = 1
	c.Client.BackoffInitial = time.Millisecond
	c.Client.BackoffMax = 2 * time.Millisecond
	c.MaxTokens = 128
	return c
}

func chatModel(t *testing.T, baseURL string) ChatModel {
	t.Helper()
	m, err := NewOpenAIChat(llmConfig(baseURL))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

type eventLog struct {
	mu sync.Mutex
	ev []string
}

func (l *eventLog) add(component, result string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ev = append(l.ev, component+":"+result)
}

func (l *eventLog) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.ev...)
}

func newTestJudge(t *testing.T, m ChatModel) (*LLMJudge, *eventLog) {
	t.Helper()
	j, err := NewLLMJudge(DefaultConfig().LLMJudge, m)
	if err != nil {
		t.Fatal(err)
	}
	log := &eventLog{}
	j.events = log.add
	return j, log
}

func TestLLMJudgeProtocolAndCache(t *testing.T) {
	srv := newChatServer(t, func(int64, chatRequest) (int, string) {
		return http.StatusOK, `{"verdict": "correct", "reason": "adds the arguments"}`
	})
	j, log := newTestJudge(t, chatModel(t, srv.URL))
	task, ex := testTask(), execution()
	v, err := j.Judge(context.Background(), task, ex)
	if err != nil || v != Correct {
		t.Fatalf("verdict %v err %v", v, err)
	}
	req := srv.lastRequest()
	if req.Model != "judge-model" || req.Temperature == nil || *req.Temperature != 0 || req.MaxTokens != 128 {
		t.Errorf("request settings: %+v", req)
	}
	if len(req.Messages) != 2 || req.Messages[0].Role != "system" || req.Messages[0].Content != DefaultJudgeRubric {
		t.Fatalf("rubric not sent as the system message: %+v", req.Messages)
	}
	user := req.Messages[1].Content
	for _, want := range []string{task.Prompt, ex.Code, "passed, 4 of 4 tests passed", "Candidate:\n```python\n"} {
		if !strings.Contains(user, want) {
			t.Errorf("judge prompt lacks %q:\n%s", want, user)
		}
	}
	if !strings.Contains(user, "Reference solution") || !strings.Contains(user, task.Reference) {
		t.Errorf("the task's reference is not shown by default:\n%s", user)
	}
	// Same task and program: cached, even for another node of the tree.
	other := execution(func(e *topics.Execution) { e.Index = 2 })
	if v, err := j.Judge(context.Background(), task, other); err != nil || v != Correct {
		t.Fatal(v, err)
	}
	if n := srv.requests.Load(); n != 1 {
		t.Fatalf("%d requests, want 1 (cache by task and program)", n)
	}
	// Another program is judged anew.
	if _, err := j.Judge(context.Background(), task, execution(failing(4))); err != nil {
		t.Fatal(err)
	}
	if n := srv.requests.Load(); n != 2 {
		t.Fatalf("%d requests, want 2", n)
	}
	if got := strings.Join(log.list(), ","); got != "judge:ok,judge:cache_hit,judge:ok" {
		t.Fatalf("events %s", got)
	}
}

func TestLLMJudgeAnswers(t *testing.T) {
	cases := []struct {
		name     string
		answers  []string
		want     Verdict
		fails    bool
		requests int64
	}{
		{"correct", []string{`{"verdict":"correct","reason":"ok"}`}, Correct, false, 1},
		{"incorrect", []string{`{"verdict":"incorrect","reason":"off by one"}`}, Wrong, false, 1},
		{"fenced json", []string{"```json\n{\"verdict\": \"incorrect\"}\n```"}, Wrong, false, 1},
		{"prose, then valid", []string{"The program is correct.", `{"verdict":"correct"}`}, Correct, false, 2},
		{"prose twice: judge failure", []string{"Looks right to me.", "I think it is correct."}, Abstain, true, 2},
		{"unknown verdict", []string{`{"verdict":"maybe"}`, `{"verdict":"partially"}`}, Abstain, true, 2},
		{"trailing text", []string{`{"verdict":"correct"} I am sure.`, `{"verdict":"correct"}` + "\nthanks"}, Abstain, true, 2},
		{"unknown field", []string{`{"verdict":"correct","score":1}`, `{"verdict":"correct","score":1}`}, Abstain, true, 2},
		{"two objects", []string{`{"verdict":"correct"}{"verdict":"incorrect"}`, `{"verdict":"correct"}{"verdict":"incorrect"}`}, Abstain, true, 2},
		{"empty", []string{"", " "}, Abstain, true, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newChatServer(t, func(n int64, _ chatRequest) (int, string) {
				return http.StatusOK, tc.answers[min(int(n), len(tc.answers))-1]
			})
			j, log := newTestJudge(t, chatModel(t, srv.URL))
			v, err := j.Judge(context.Background(), testTask(), execution())
			var je *JudgeError
			if tc.fails != (err != nil) || (err != nil && (!errors.As(err, &je) || !errors.Is(err, ErrUnparsable))) {
				t.Fatalf("err = %v, want failure %v (a *JudgeError wrapping ErrUnparsable)", err, tc.fails)
			}
			if v != tc.want || srv.requests.Load() != tc.requests {
				t.Fatalf("verdict %v after %d requests, want %v after %d", v, srv.requests.Load(), tc.want, tc.requests)
			}
			parseErrors := strings.Count(strings.Join(log.list(), ","), "parse_error")
			if want := int(tc.requests) - 1; tc.fails {
				want = int(tc.requests)
				if parseErrors != want {
					t.Fatalf("%d parse errors counted, want %d", parseErrors, want)
				}
			} else if parseErrors != want {
				t.Fatalf("%d parse errors counted, want %d", parseErrors, want)
			}
		})
	}
}

// TestLLMJudgeOutage: a server that fails (HTTP 500 through the client's
// retries, or nothing listening) routes samples as infra.judge; failures
// are not cached, so the same program is judged once the server is back.
func TestLLMJudgeOutage(t *testing.T) {
	var healthy atomic.Bool
	srv := newChatServer(t, func(int64, chatRequest) (int, string) {
		if !healthy.Load() {
			return http.StatusInternalServerError, "CUDA error: out of memory"
		}
		return http.StatusOK, `{"verdict":"incorrect","reason":"misses negatives"}`
	})
	cfg := DefaultConfig()
	cfg.Judges = []string{JudgeLLM}
	cfg.RewardPolicy = topics.RewardTiered
	cfg.LLM = llmConfig(srv.URL)
	if _, err := NewGovernor(cfg, nil, WithClock(clock)); err == nil {
		t.Fatal("an LLM judge without a chat model must be refused")
	}
	g, err := NewGovernor(cfg, chatModel(t, srv.URL), WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	res, err := g.Govern(context.Background(), execution(), tasksWith(testTask()))
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Sample; s.FailureCause != CauseJudge || s.Route != topics.RouteMasked || res.Refinement != nil {
		t.Fatalf("outage: cause %s route %s", s.FailureCause, s.Route)
	}
	if n := srv.requests.Load(); n != 2 { // first attempt + one retry
		t.Fatalf("%d requests during the outage, want 2", n)
	}
	healthy.Store(true)
	res, err = g.Govern(context.Background(), execution(), tasksWith(testTask()))
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Sample; s.FailureCause != CausePassed || s.Reward != 0.5 || res.Refinement == nil {
		t.Fatalf("after recovery: cause %s reward %g expanded %v", s.FailureCause, s.Reward, res.Refinement != nil)
	}

	// Nothing listening at all.
	dead := httptest.NewServer(http.NotFoundHandler())
	url := dead.URL
	dead.Close()
	g2, err := NewGovernor(cfg, chatModel(t, url), WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	res, err = g2.Govern(context.Background(), execution(), tasksWith(testTask()))
	if err != nil || res.Sample.FailureCause != CauseJudge {
		t.Fatalf("dead server: %v %+v", err, res.Sample)
	}
}

func TestLLMJudgeSharesInFlightCalls(t *testing.T) {
	srv := newChatServer(t, func(int64, chatRequest) (int, string) { return http.StatusOK, `{"verdict":"correct"}` })
	srv.delay = 100 * time.Millisecond
	j, _ := newTestJudge(t, chatModel(t, srv.URL))
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := j.Judge(context.Background(), testTask(), execution(func(e *topics.Execution) { e.Index = i % 4 }))
			if err == nil && v != Correct {
				err = errors.New(v.String())
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := srv.requests.Load(); n != 1 {
		t.Fatalf("%d requests for 8 concurrent judgements of one program, want 1", n)
	}
}

func TestLLMJudgeCancelled(t *testing.T) {
	srv := newChatServer(t, func(int64, chatRequest) (int, string) { return http.StatusOK, `{"verdict":"correct"}` })
	srv.delay = 500 * time.Millisecond
	j, _ := newTestJudge(t, chatModel(t, srv.URL))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := j.Judge(ctx, testTask(), execution())
	var je *JudgeError
	if !errors.Is(err, context.DeadlineExceeded) || errors.As(err, &je) {
		t.Fatalf("err = %v: a cancelled record is retried, not blamed on the judge", err)
	}
}

// TestLLMJudgeIncludeReference: the judge sees the task's reference by
// default (the patch of a repair task, else the reference solution), nothing
// when the task has none, and none with include_reference off.
func TestLLMJudgeIncludeReference(t *testing.T) {
	if !DefaultConfig().LLMJudge.IncludeReference {
		t.Fatal("include_reference is off by default")
	}
	srv := newChatServer(t, func(int64, chatRequest) (int, string) { return http.StatusOK, `{"verdict":"correct"}` })
	const patch = "--- a/add.py\n+++ b/add.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n"
	repair := testTask()
	repair.TaskID, repair.ReferencePatch = "t-repair", patch // compile-fix repairs get RepairMessages (compilefix_test.go)
	bare := testTask()
	bare.TaskID, bare.Reference = "t-bare", ""
	cases := []struct {
		name    string
		include bool
		task    *topics.Task
		want    []string // in the user message
		notWant []string
	}{
		{"solution by default", true, testTask(), []string{"Reference solution", testTask().Reference}, []string{"Reference patch"}},
		{"patch of a repair task", true, repair, []string{"Reference patch", patch}, []string{"Reference solution"}},
		{"task without a reference", true, bare, nil, []string{"Reference"}},
		{"include_reference off", false, testTask(), nil, []string{"Reference"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig().LLMJudge
			cfg.IncludeReference = tc.include
			cfg.Rubric = "Judge strictly."
			j, err := NewLLMJudge(cfg, chatModel(t, srv.URL))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := j.Judge(context.Background(), tc.task, execution()); err != nil {
				t.Fatal(err)
			}
			req := srv.lastRequest()
			if req.Messages[0].Content != "Judge strictly." {
				t.Fatalf("custom rubric not sent: %+v", req.Messages)
			}
			user := req.Messages[1].Content
			for _, w := range tc.want {
				if !strings.Contains(user, w) {
					t.Errorf("user message lacks %q:\n%s", w, user)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(user, w) {
					t.Errorf("user message holds %q:\n%s", w, user)
				}
			}
		})
	}
}

func newTestScorer(t *testing.T, m ChatModel) (*LLMScorer, *eventLog) {
	t.Helper()
	s, err := NewLLMScorer(DefaultConfig().LLMScorer, m)
	if err != nil {
		t.Fatal(err)
	}
	log := &eventLog{}
	s.events = log.add
	return s, log
}

func TestLLMScorer(t *testing.T) {
	calls := []map[string]any{
		toolCall("read_file", map[string]any{"path": "a.py"}),
		toolCall("read_file", map[string]any{"path": "a.py"}),
		toolCall("str_replace", map[string]any{"path": "a.py", "old_str": "-", "new_str": "+"}),
	}
	cases := []struct {
		name     string
		answers  []string
		want     []float32
		fails    bool
		requests int64
	}{
		{"scores", []string{`{"scores": [1, 0, 0.75]}`}, []float32{1, 0, 0.75}, false, 1},
		{"too few, then right", []string{`{"scores": [1, 0]}`, `{"scores": [1, 0, 1]}`}, []float32{1, 0, 1}, false, 2},
		{"out of range", []string{`{"scores": [1, 2, 1]}`, `{"scores": [1, -0.5, 1]}`}, nil, true, 2},
		{"not numbers", []string{`{"scores": ["high", "low", "high"]}`, `{"scores": null}`}, nil, true, 2},
		{"prose", []string{"Step 2 is wasted.", "Step 2 is wasted."}, nil, true, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newChatServer(t, func(n int64, _ chatRequest) (int, string) {
				return http.StatusOK, tc.answers[min(int(n), len(tc.answers))-1]
			})
			s, _ := newTestScorer(t, chatModel(t, srv.URL))
			ex := execution(trajectory(calls...))
			steps, aligned := alignSteps(&ex.Candidate)
			got, err := s.Score(context.Background(), testTask(), ex, steps, aligned)
			if tc.fails != (err != nil) || (err != nil && !errors.Is(err, ErrUnparsable)) {
				t.Fatalf("err %v", err)
			}
			if len(got) != len(tc.want) || srv.requests.Load() != tc.requests {
				t.Fatalf("scores %v after %d requests", got, srv.requests.Load())
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("scores %v, want %v", got, tc.want)
				}
			}
			user := srv.lastRequest().Messages[1].Content
			if !strings.Contains(user, "### Step 3") || !strings.Contains(user, `"str_replace"`) {
				t.Fatalf("steps not shown:\n%s", user)
			}
		})
	}
}

func TestLLMScorerCacheUnalignedAndOutage(t *testing.T) {
	var down atomic.Bool
	srv := newChatServer(t, func(int64, chatRequest) (int, string) {
		if down.Load() {
			return http.StatusServiceUnavailable, "overloaded"
		}
		return http.StatusOK, `{"scores": [0.5, 1]}`
	})
	cfg := DefaultConfig()
	cfg.Scorer = ScorerLLM
	cfg.LLM = llmConfig(srv.URL)
	log := &eventLog{}
	g, err := NewGovernor(cfg, chatModel(t, srv.URL), WithClock(clock), withEvents(log.add))
	if err != nil {
		t.Fatal(err)
	}
	two := trajectory(toolCall("read_file", map[string]any{"path": "a.py"}), toolCall("run", map[string]any{"command": "pytest"}))
	for range 2 {
		res, err := g.Govern(context.Background(), execution(failing(1), two), tasksWith(testTask()))
		if err != nil {
			t.Fatal(err)
		}
		if w := res.Sample.LossWeights; w[0] != 0.5 || w[19] != 1 || res.Sample.Reward != 0.25 {
			t.Fatalf("weights %v reward %g", w, res.Sample.Reward)
		}
	}
	if n := srv.requests.Load(); n != 1 {
		t.Fatalf("%d requests for one response scored twice", n)
	}
	// Steps whose text cannot be cut out of the response stay unscored.
	res, err := g.Govern(context.Background(), execution(failing(1), func(e *topics.Execution) {
		e.StepEnds = []int{5, 10, 15}
	}), tasksWith(testTask()))
	if err != nil || res.Sample.StepScores != nil || res.Sample.LossWeights[0] != 1 || srv.requests.Load() != 1 {
		t.Fatalf("unaligned: %v %+v", err, res.Sample.StepScores)
	}
	// Outage: masked as infra.scorer (the default ScorerFailure).
	down.Store(true)
	res, err = g.Govern(context.Background(), execution(failing(1), trajectory(toolCall("view", map[string]any{"path": "b.py"}), toolCall("run", nil))), tasksWith(testTask()))
	if err != nil || res.Sample.FailureCause != CauseScorer || res.Sample.Route != topics.RouteMasked {
		t.Fatalf("outage: %v %s", err, res.Sample.FailureCause)
	}
	got := strings.Join(log.list(), ",")
	if got != "scorer:ok,scorer:cache_hit,scorer:unaligned,scorer:error" {
		t.Fatalf("events %s", got)
	}
}

func TestParseStrictJSON(t *testing.T) {
	var a judgeAnswer
	for _, ok := range []string{`{"verdict":"correct"}`, " \n{\"verdict\":\"correct\",\"reason\":\"r\"}\n", "```\n{\"verdict\":\"correct\"}\n```"} {
		if err := parseStrictJSON(ok, &a); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"```python\n{\"verdict\":\"correct\"}\n```", "```json\n{\"verdict\":\"correct\"}", "verdict: correct", `["correct"]`} {
		if err := parseStrictJSON(bad, &a); !errors.Is(err, ErrUnparsable) {
			t.Errorf("%q accepted: %v", bad, err)
		}
	}
}
