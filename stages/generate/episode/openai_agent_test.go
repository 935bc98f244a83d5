package episode

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/openai"
	"github.com/murphy-rl/murphy/stages/generate/policy"
)

// byteTokens is the canned server's tokenizer: BOS (1) then one token per
// byte (byte value + 3).
func byteTokens(s string) []int32 {
	ids := []int32{1}
	for i := 0; i < len(s); i++ {
		ids = append(ids, int32(s[i])+3)
	}
	return ids
}

type cannedCall struct{ name, args string }

// cannedServer answers chat requests with scripted tool calls, one per
// turn (the turn is the number of assistant messages in the request), and
// checks every request's tools and conversation.
type cannedServer struct {
	t        *testing.T
	script   []cannedCall
	noTokens bool
	failAt   int // turn answered with a context overflow (0 = none)
	mu       sync.Mutex
	requests []map[string]any
}

func (s *cannedServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	switch r.URL.Path {
	case "/tokenize":
		_ = json.NewEncoder(w).Encode(map[string]any{"tokens": byteTokens(req["prompt"].(string))})
		return
	case "/v1/chat/completions":
	default:
		http.NotFound(w, r)
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.mu.Unlock()
	msgs := req["messages"].([]any)
	turn := 0
	for i, m := range msgs {
		mm := m.(map[string]any)
		if mm["role"] != "assistant" {
			continue
		}
		// Every assistant call is answered by the next message, by id.
		calls := mm["tool_calls"].([]any)
		id := calls[0].(map[string]any)["id"]
		if next := msgs[i+1].(map[string]any); next["role"] != "tool" || next["tool_call_id"] != id {
			s.t.Errorf("turn %d: call %v answered by %v", turn, id, next)
		}
		turn++
	}
	if tools := req["tools"].([]any); len(tools) != len(ToolSpecs()) {
		s.t.Errorf("%d tools sent", len(tools))
	}
	if s.failAt > 0 && turn == s.failAt {
		w.WriteHeader(400)
		_, _ = io.WriteString(w, `{"error":{"message":"This model's maximum context length is 4096 tokens"}}`)
		return
	}
	if turn >= len(s.script) {
		s.t.Errorf("turn %d past the script", turn)
		http.Error(w, "past the script", 500)
		return
	}
	c := s.script[turn]
	argJSON, _ := json.Marshal(c.args)
	text := fmt.Sprintf("step %d", turn)
	choice := map[string]any{
		"index": 0, "finish_reason": "tool_calls",
		"message": map[string]any{"role": "assistant", "content": text, "tool_calls": []any{
			map[string]any{"id": fmt.Sprintf("call_%d", turn), "type": "function",
				"function": map[string]any{"name": c.name, "arguments": json.RawMessage(argJSON)}}}},
	}
	if !s.noTokens {
		// The "model's" tokens: three per turn, with logprobs.
		ids := []int{1000 + 3*turn, 1001 + 3*turn, 1002 + 3*turn}
		choice["token_ids"] = ids
		var lp []any
		for _, id := range ids {
			lp = append(lp, map[string]any{"token": fmt.Sprintf("token_id:%d", id), "logprob": -0.25})
		}
		choice["logprobs"] = map[string]any{"content": lp}
	}
	resp := map[string]any{"model": "m", "choices": []any{choice}, "prompt_token_ids": []int{7, 8, 9}}
	_ = json.NewEncoder(w).Encode(resp)
}

var fixScript = []cannedCall{
	{ToolReadFile, `{"path":"main.c"}`},
	{ToolEdit, `{"path":"main.c","old":"add(totl,","new":"add(total,"}`},
	{ToolBuild, `{}`},
	{ToolSubmit, `{}`},
}

func cannedAgent(t *testing.T, srv *httptest.Server, seed *int64) *OpenAIAgent {
	t.Helper()
	cfg := openai.DefaultConfig()
	cfg.BaseURL, cfg.Model, cfg.TokenizePath = srv.URL+"/v1", "m", "/tokenize"
	cfg.Timeout, cfg.MaxRetries = 5*time.Second, 0
	c, err := openai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	no := false
	a, err := NewOpenAIAgent(c, OpenAIAgentConfig{Temperature: 1, Logprobs: true, Seed: seed, ParallelToolCalls: &no, MaxTokens: 256})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestOpenAIAgentEpisode(t *testing.T) {
	task := calcTask(t)
	cs := &cannedServer{t: t, script: fixScript}
	srv := httptest.NewServer(cs)
	defer srv.Close()
	seed := int64(40)
	agent := cannedAgent(t, srv, &seed)
	tools := newTools(t, "testdata/calc", fakeBuild, ToolsConfig{})
	res, err := Run(context.Background(), Config{System: DefaultSystemPrompt, Prompt: task.Prompt, MaxTokens: 100000}, agent, tools)
	if err != nil {
		t.Fatal(err)
	}
	if res.EpisodeEnd != EndSubmitted || len(res.Steps) != 4 || res.Builds != 1 {
		t.Fatalf("end %s, steps %v, builds %d", res.EpisodeEnd, stepTools(res), res.Builds)
	}
	if err := res.Check(); err != nil {
		t.Fatal(err)
	}
	c := candidate(t, task, res, agent, 0)
	if c.Policy != "openai:m" || c.EpisodeEnd != EndSubmitted || !slices.Equal(c.PromptTokenIDs, []int32{7, 8, 9}) {
		t.Fatalf("candidate policy %q end %q prompt %v", c.Policy, c.EpisodeEnd, c.PromptTokenIDs)
	}
	// Action spans are the server's tokens and logprobs; output spans the
	// server tokenizer's tokens of the rendered output, BOS removed, with
	// logprob 0.
	for i, s := range res.Steps {
		if got := res.ResponseTokenIDs[s.ActionStart:s.ActionEnd]; !slices.Equal(got, []int32{int32(1000 + 3*i), int32(1001 + 3*i), int32(1002 + 3*i)}) {
			t.Fatalf("step %d action tokens %v", i, got)
		}
		for k := s.ActionStart; k < s.End; k++ {
			want := float32(0)
			if k < s.ActionEnd {
				want = -0.25
			}
			if res.ResponseLogprobs[k] != want {
				t.Fatalf("step %d token %d logprob %v", i, k, res.ResponseLogprobs[k])
			}
		}
		if s.Tool == ToolSubmit {
			if s.End != s.ActionEnd {
				t.Fatal("submit has output tokens")
			}
			continue
		}
		if got, want := res.ResponseTokenIDs[s.ActionEnd:s.End], byteTokens(RenderToolOutput(s.Output))[1:]; !slices.Equal(got, want) {
			t.Fatalf("step %d output tokens differ (%d vs %d)", i, len(got), len(want))
		}
	}
	if !strings.Contains(res.Steps[0].Output, "add(totl, scale(i))") || !strings.HasPrefix(res.Steps[2].Output, "build succeeded") {
		t.Fatalf("outputs %q / %q", res.Steps[0].Output, res.Steps[2].Output)
	}
	if !strings.Contains(res.ResponseText, "step 1\n<tool_call>{\"name\":\"edit\",\"arguments\":{\"path\":\"main.c\",\"old\":\"add(totl,\",\"new\":\"add(total,\"}}</tool_call>\n<tool_response>\nedited main.c") {
		t.Fatalf("response text:\n%s", res.ResponseText)
	}

	// The requests: tools every turn, the conversation growing by one
	// call and its answer, per-turn seeds.
	if len(cs.requests) != 4 {
		t.Fatalf("%d requests", len(cs.requests))
	}
	for i, req := range cs.requests {
		if n := len(req["messages"].([]any)); n != 2+2*i {
			t.Fatalf("request %d has %d messages", i, n)
		}
		if req["seed"] != float64(40+i) || req["parallel_tool_calls"] != false || req["max_tokens"] != float64(256) {
			t.Fatalf("request %d: seed %v parallel %v max_tokens %v", i, req["seed"], req["parallel_tool_calls"], req["max_tokens"])
		}
	}
	last := cs.requests[3]["messages"].([]any)
	if m := last[len(last)-1].(map[string]any); !strings.HasPrefix(m["content"].(string), "build succeeded") {
		t.Fatalf("last tool message %v", m)
	}
	if ok, out := buildIfPossible(t, res.Code); !ok {
		t.Fatalf("the submitted diff does not build:\n%s\n%s", out, res.Code)
	}
}

// buildIfPossible applies and builds a diff of the calc fixture when gcc
// and patch are installed (reports success otherwise).
func buildIfPossible(t *testing.T, diff string) (bool, string) {
	for _, n := range []string{"gcc", "patch"} {
		if _, err := exec.LookPath(n); err != nil {
			return true, ""
		}
	}
	return patchBuilds(t, "testdata/calc", diff)
}

func TestOpenAIAgentWithoutServerTokens(t *testing.T) {
	task := calcTask(t)
	srv := httptest.NewServer(&cannedServer{t: t, script: fixScript, noTokens: true})
	defer srv.Close()
	agent := cannedAgent(t, srv, nil)
	res, err := Run(context.Background(), Config{Prompt: task.Prompt}, agent, newTools(t, "testdata/calc", fakeBuild, ToolsConfig{}))
	if err != nil || res.EpisodeEnd != EndSubmitted {
		t.Fatal(res, err)
	}
	if res.ResponseLogprobs != nil {
		t.Fatal("logprobs kept although the server sent none")
	}
	asst := 0
	for _, m := range res.Conversation {
		if m.Role != "assistant" {
			continue
		}
		s := res.Steps[asst]
		if got := res.ResponseTokenIDs[s.ActionStart:s.ActionEnd]; !slices.Equal(got, byteTokens(RenderAction(m.Content, m.ToolCalls[0]))[1:]) {
			t.Fatalf("step %d: action tokens are not the tokenized rendering", asst)
		}
		asst++
	}
	candidate(t, task, res, agent, 1)
}

func TestOpenAIAgentContextOverflow(t *testing.T) {
	task := calcTask(t)
	srv := httptest.NewServer(&cannedServer{t: t, script: fixScript, failAt: 2})
	defer srv.Close()
	agent := cannedAgent(t, srv, nil)
	res, err := Run(context.Background(), Config{Prompt: task.Prompt}, agent, newTools(t, "testdata/calc", fakeBuild, ToolsConfig{}))
	if err != nil || res.EpisodeEnd != EndContext || len(res.Steps) != 2 || res.FinishReason != "length" {
		t.Fatal(res, err)
	}
	// The edit before the overflow is the code.
	if !strings.Contains(res.Code, "+\t\ttotal = add(total, scale(i));") {
		t.Fatalf("code:\n%s", res.Code)
	}
	candidate(t, task, res, agent, 2)
}

func TestNewOpenAIAgentNeedsTokenizer(t *testing.T) {
	cfg := openai.DefaultConfig()
	c, _ := openai.New(cfg)
	if _, err := NewOpenAIAgent(c, OpenAIAgentConfig{}); err == nil {
		t.Fatal("an agent without a tokenize endpoint")
	}
	if got := stripSpecial([]int32{5, 6, 2}, []int32{2}); !slices.Equal(got, []int32{5, 6}) {
		t.Fatalf("suffix strip %v", got)
	}
	if got := stripSpecial([]int32{1, 5}, []int32{1}); !slices.Equal(got, []int32{5}) {
		t.Fatalf("prefix strip %v", got)
	}
}

func TestOpenAIAgentForPolicy(t *testing.T) {
	cs := &cannedServer{t: t, script: fixScript}
	srv := httptest.NewServer(cs)
	defer srv.Close()
	pc := policy.DefaultOpenAIConfig()
	pc.Client.BaseURL, pc.Client.Model, pc.Client.TokenizePath = srv.URL+"/v1", "m", "/tokenize"
	pc.Temperature, pc.MaxTokens, pc.Seed = 0.7, 128, 5
	p, err := policy.NewOpenAI(pc)
	if err != nil {
		t.Fatal(err)
	}
	seeds := map[string]float64{}
	for _, node := range []string{"a", "b", "a"} {
		cs.requests = nil
		agent, err := OpenAIAgentFor(p, node, "")
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(context.Background(), Config{Prompt: "fix"}, agent, newTools(t, "testdata/calc", fakeBuild, ToolsConfig{}))
		if err != nil || res.EpisodeEnd != EndSubmitted {
			t.Fatal(res, err)
		}
		r0 := cs.requests[0]
		if r0["temperature"] != 0.7 || r0["max_tokens"] != float64(128) || r0["seed"] == nil {
			t.Fatalf("request %v", r0)
		}
		if s, ok := seeds[node]; ok && s != r0["seed"] {
			t.Fatalf("node %s: seeds %v and %v", node, s, r0["seed"])
		}
		seeds[node] = r0["seed"].(float64)
	}
	if seeds["a"] == seeds["b"] {
		t.Fatal("two nodes, one seed")
	}
}
