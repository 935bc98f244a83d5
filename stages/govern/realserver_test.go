package govern

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/murphy-rl/murphy/openai"
	"github.com/murphy-rl/murphy/openai/openaitest"
	"github.com/murphy-rl/murphy/topics"
)

// The real CPU inference server (llama.cpp's, via llama-cpp-python) serves a
// tiny random-weight model with a 256-token window: its words are gibberish,
// so these tests check the protocol, the strict parsing of what a real
// server returns, caching and the failure paths, not judgement quality. A
// JSON schema in response_format makes the server constrain the model to a
// well-formed verdict.

var verdictSchema = map[string]any{
	"type": "json_object",
	"schema": map[string]any{
		"type":                 "object",
		"properties":           map[string]any{"verdict": map[string]any{"type": "string", "enum": []string{"correct", "incorrect"}}},
		"required":             []string{"verdict"},
		"additionalProperties": false,
	},
}

func realServer(t *testing.T) (*openaitest.Server, *openaitest.FaultProxy) {
	t.Helper()
	srv := openaitest.StartLlama(t)
	u, err := url.Parse(srv.BaseURL)
	if err != nil {
		t.Fatal(err)
	}
	return srv, openaitest.NewFaultProxy(t, u.Scheme+"://"+u.Host)
}

// realChat is a chat model on the real server; format, when not nil, is sent
// as the request's response_format.
func realChat(t *testing.T, srv *openaitest.Server, base string, maxTokens int, format map[string]any) *OpenAIChat {
	t.Helper()
	cfg := llmConfig(base)
	cfg.Client.Model = srv.Model
	cfg.MaxTokens = maxTokens
	if format != nil {
		cfg.Extra = map[string]any{"response_format": format}
	}
	m, err := NewOpenAIChat(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// tinyJudgeCase fits the server's 256-token window.
func tinyJudgeCase() (*topics.Task, *topics.Execution) {
	task := &topics.Task{SchemaVersion: topics.SchemaVersion, TaskID: "t", Kind: topics.KindPythonFunction, Prompt: "add", EntryPoint: "f"}
	ex := execution(func(e *topics.Execution) { e.TaskID, e.Code, e.Feedback = "t", "def f(a,b):return a+b", "" })
	return task, ex
}

func TestRealServerJudge(t *testing.T) {
	srv, proxy := realServer(t)
	jcfg := DefaultConfig().LLMJudge
	jcfg.Rubric = "JSON."
	jcfg.Attempts = 2
	judge, err := NewLLMJudge(jcfg, realChat(t, srv, proxy.URL, 48, verdictSchema))
	if err != nil {
		t.Fatal(err)
	}
	task, ex := tinyJudgeCase()
	ctx := context.Background()

	// Protocol: a constrained answer from the real server parses strictly.
	v, err := judge.Judge(ctx, task, ex)
	if err != nil || v == Abstain {
		t.Fatalf("verdict %v, err %v", v, err)
	}
	if proxy.Forwarded() != 1 {
		t.Fatalf("%d requests forwarded, want 1", proxy.Forwarded())
	}
	// Cached by (task, program).
	if v2, err := judge.Judge(ctx, task, ex); err != nil || v2 != v || proxy.Forwarded() != 1 {
		t.Fatalf("cache: %v %v, %d forwarded", v2, err, proxy.Forwarded())
	}

	// Outage: the judgement fails, the sample is infrastructure.
	proxy.SetDown(true)
	other := execution(func(e *topics.Execution) { e.TaskID, e.Code, e.Feedback = "t", "def f(a,b):return b+a", "" })
	_, err = judge.Judge(ctx, task, other)
	var je *JudgeError
	if !errors.As(err, &je) {
		t.Fatalf("outage: err %v, want *JudgeError", err)
	}
	proxy.SetDown(false)
	if _, err := judge.Judge(ctx, task, other); err != nil {
		t.Fatalf("after the outage: %v", err)
	}
}

// TestRealServerJudgeUnparsable: without the schema the model's gibberish
// is rejected by the strict parser, asked again, then routed infra.judge.
func TestRealServerJudgeUnparsable(t *testing.T) {
	srv, proxy := realServer(t)
	cfg := DefaultConfig()
	cfg.Judges = []string{JudgeLLM}
	cfg.LLMJudge.Rubric = "JSON."
	cfg.LLMJudge.Attempts = 2
	g, err := NewGovernor(cfg, realChat(t, srv, proxy.URL, 48, nil), WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	task, ex := tinyJudgeCase()
	res, err := g.Govern(context.Background(), ex, tasksWith(task))
	if err != nil {
		t.Fatal(err)
	}
	if res.Sample.FailureCause != CauseJudge || res.Sample.Route != topics.RouteMasked {
		t.Fatalf("gibberish judged: cause %s", res.Sample.FailureCause)
	}
	if proxy.Forwarded() != 2 {
		t.Fatalf("%d requests, want 2 attempts", proxy.Forwarded())
	}
}

// TestRealServerContextOverflow: a judge prompt longer than the model's
// window is refused by the server; the sample is infrastructure.
func TestRealServerContextOverflow(t *testing.T) {
	srv, proxy := realServer(t)
	judge, err := NewLLMJudge(DefaultConfig().LLMJudge, realChat(t, srv, proxy.URL, 48, verdictSchema))
	if err != nil {
		t.Fatal(err)
	}
	task := testTask()
	task.Prompt = strings.Repeat("A long statement. ", 100)
	_, err = judge.Judge(context.Background(), task, execution())
	var je *JudgeError
	if !errors.As(err, &je) || !openai.IsContextOverflow(err) {
		t.Fatalf("err %v, want a *JudgeError wrapping a context overflow", err)
	}
}

func TestRealServerScorer(t *testing.T) {
	srv, proxy := realServer(t)
	schema := map[string]any{
		"type": "json_object",
		"schema": map[string]any{
			"type": "object",
			"properties": map[string]any{"scores": map[string]any{
				"type": "array", "minItems": 2, "maxItems": 2,
				"items": map[string]any{"type": "number", "enum": []float64{0, 0.5, 1}},
			}},
			"required":             []string{"scores"},
			"additionalProperties": false,
		},
	}
	scfg := DefaultConfig().LLMScorer
	scfg.Rubric = "JSON scores."
	scfg.MaxStepBytes = 64
	scorer, err := NewLLMScorer(scfg, realChat(t, srv, proxy.URL, 24, schema))
	if err != nil {
		t.Fatal(err)
	}
	task := &topics.Task{TaskID: "t", Prompt: "fix"}
	ex := execution(func(e *topics.Execution) {
		e.ResponseText = "<tool_call>{\"name\":\"view\"}</tool_call><tool_call>{\"name\":\"run\"}</tool_call>"
		e.StepEnds = []int{10, 20}
	})
	steps, aligned := alignSteps(&ex.Candidate)
	scores, err := scorer.Score(context.Background(), task, ex, steps, aligned)
	if err != nil || len(scores) != 2 {
		t.Fatalf("scores %v, err %v", scores, err)
	}
	if _, err := scorer.Score(context.Background(), task, ex, steps, aligned); err != nil || proxy.Forwarded() != 1 {
		t.Fatalf("cache: %v, %d forwarded", err, proxy.Forwarded())
	}
	proxy.SetDown(true)
	ex.ResponseText += " "
	if _, err := scorer.Score(context.Background(), task, ex, steps, aligned); err == nil {
		t.Fatal("outage not reported")
	}
}
