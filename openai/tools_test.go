package openai

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
)

var readFileTool = Tool{
	Name:        "read_file",
	Description: "Read a file.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`),
}

func TestToolsRequestAndToolCallsResponse(t *testing.T) {
	var body map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &body); err != nil {
			t.Errorf("request body: %v", err)
		}
		_, _ = io.WriteString(w, `{"model":"m","choices":[
		 {"index":0,"message":{"role":"assistant","content":null,"tool_calls":[
		   {"id":"call_a","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"main.c\"}"}},
		   {"type":"function","function":{"name":"build","arguments":{"x": 1}}}]},
		  "finish_reason":"tool_calls","token_ids":[5,6,7],
		  "logprobs":{"content":[{"token":"a","logprob":-0.5},{"token":"b","logprob":-1},{"token":"c","logprob":null}]}}],
		 "usage":{"prompt_tokens":10,"completion_tokens":3}}`)
	}))
	defer srv.Close()
	c, err := New(testConfig(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	no := false
	msgs := []Message{
		{Role: "system", Content: "fix it"},
		{Role: "user", Content: "the build fails"},
		{Role: "assistant", ToolCalls: []ToolCall{{ID: "call_0", Name: "list_files", Arguments: "{}"}}},
		{Role: "tool", ToolCallID: "call_0", Content: "main.c"},
	}
	res, err := c.Chat(context.Background(), ChatRequest{
		Messages: msgs, Tools: []Tool{readFileTool, {Name: "build"}, {Name: "list_files"}},
		ToolChoice: ToolChoiceAuto, ParallelToolCalls: &no,
		Sampling: Sampling{Temperature: 1, Logprobs: true},
	})
	if err != nil {
		t.Fatal(err)
	}

	// The request.
	tools, _ := body["tools"].([]any)
	if len(tools) != 3 {
		t.Fatalf("tools = %v", body["tools"])
	}
	first := tools[0].(map[string]any)
	fn := first["function"].(map[string]any)
	if first["type"] != "function" || fn["name"] != "read_file" || fn["description"] != "Read a file." ||
		fn["parameters"].(map[string]any)["required"].([]any)[0] != "path" {
		t.Fatalf("tool 0 = %v", first)
	}
	if p := tools[1].(map[string]any)["function"].(map[string]any)["parameters"].(map[string]any); p["type"] != "object" {
		t.Fatalf("tool without parameters sent %v", p)
	}
	if body["tool_choice"] != "auto" || body["parallel_tool_calls"] != false {
		t.Fatalf("tool_choice %v parallel %v", body["tool_choice"], body["parallel_tool_calls"])
	}
	sent := body["messages"].([]any)
	asst := sent[2].(map[string]any)
	call := asst["tool_calls"].([]any)[0].(map[string]any)
	if call["id"] != "call_0" || call["type"] != "function" ||
		call["function"].(map[string]any)["arguments"] != "{}" || call["function"].(map[string]any)["name"] != "list_files" {
		t.Fatalf("assistant message sent as %v", asst)
	}
	if tool := sent[3].(map[string]any); tool["role"] != "tool" || tool["tool_call_id"] != "call_0" || tool["content"] != "main.c" {
		t.Fatalf("tool message sent as %v", tool)
	}
	if _, ok := sent[1].(map[string]any)["tool_calls"]; ok {
		t.Fatal("a plain message carries tool_calls")
	}

	// The response.
	ch := res.Choices[0]
	want := []ToolCall{{ID: "call_a", Name: "read_file", Arguments: `{"path":"main.c"}`}, {ID: "call_1", Name: "build", Arguments: `{"x":1}`}}
	if !reflect.DeepEqual(ch.ToolCalls, want) || ch.FinishReason != "tool_calls" || ch.Text != "" {
		t.Fatalf("choice = %+v", ch)
	}
	if !reflect.DeepEqual(ch.TokenIDs, []int32{5, 6, 7}) || !reflect.DeepEqual(ch.Logprobs, []float32{-0.5, -1, 0}) {
		t.Fatalf("tokens %v logprobs %v", ch.TokenIDs, ch.Logprobs)
	}
}

func TestForcedToolChoiceAndLegacyFunctionCall(t *testing.T) {
	var body map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &body)
		_, _ = io.WriteString(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"",
		  "function_call":{"name":"read_file","arguments":"{\"path\":\"a\"}"}},"finish_reason":"tool_calls"}]}`)
	}))
	defer srv.Close()
	c, _ := New(testConfig(srv.URL))
	res, err := c.Chat(context.Background(), ChatRequest{Messages: []Message{{Role: "user", Content: "x"}},
		Tools: []Tool{readFileTool}, ToolChoice: ForceTool("read_file")})
	if err != nil {
		t.Fatal(err)
	}
	tc := body["tool_choice"].(map[string]any)
	if tc["type"] != "function" || tc["function"].(map[string]any)["name"] != "read_file" {
		t.Fatalf("tool_choice sent as %v", body["tool_choice"])
	}
	if _, ok := body["parallel_tool_calls"]; ok {
		t.Fatal("parallel_tool_calls sent unasked")
	}
	if got := res.Choices[0].ToolCalls; len(got) != 1 || got[0].Name != "read_file" || got[0].ID != "call_0" || got[0].Arguments != `{"path":"a"}` {
		t.Fatalf("legacy function_call decoded as %+v", got)
	}
}

func TestNoToolsSendsNoToolFields(t *testing.T) {
	var body map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &body)
		_, _ = io.WriteString(w, `{"choices":[{"index":0,"message":{"content":"hi"},"finish_reason":"stop"}]}`)
	}))
	defer srv.Close()
	c, _ := New(testConfig(srv.URL))
	res, err := c.Chat(context.Background(), ChatRequest{Messages: []Message{{Role: "user", Content: "x"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"tools", "tool_choice", "parallel_tool_calls"} {
		if _, ok := body[k]; ok {
			t.Fatalf("%s sent without tools", k)
		}
	}
	m := body["messages"].([]any)[0].(map[string]any)
	if len(m) != 2 {
		t.Fatalf("plain message sent as %v", m)
	}
	if res.Choices[0].ToolCalls != nil || res.Choices[0].Text != "hi" {
		t.Fatalf("choice %+v", res.Choices[0])
	}
}

func TestToolValidation(t *testing.T) {
	c, _ := New(testConfig("http://127.0.0.1:1"))
	msgs := []Message{{Role: "user", Content: "x"}}
	cases := map[string]ChatRequest{
		"bad name":       {Messages: msgs, Tools: []Tool{{Name: "read file"}}},
		"duplicate":      {Messages: msgs, Tools: []Tool{{Name: "a"}, {Name: "a"}}},
		"bad schema":     {Messages: msgs, Tools: []Tool{{Name: "a", Parameters: json.RawMessage(`{`)}}},
		"unknown forced": {Messages: msgs, Tools: []Tool{{Name: "a"}}, ToolChoice: ForceTool("b")},
		"bad mode":       {Messages: msgs, Tools: []Tool{{Name: "a"}}, ToolChoice: &ToolChoice{Mode: "always"}},
	}
	for name, req := range cases {
		_, err := c.Chat(context.Background(), req)
		var e *Error
		if !errors.As(err, &e) || e.Kind != KindBadRequest || e.Attempts != 0 {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

func TestToolCallJSONRoundTrip(t *testing.T) {
	in := ToolCall{ID: "x", Name: "edit", Arguments: `{"old":"a","new":"b"}`}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out ToolCall
	if err := json.Unmarshal(b, &out); err != nil || out != in {
		t.Fatalf("round trip %s -> %+v (%v)", b, out, err)
	}
	tb, _ := json.Marshal(readFileTool)
	var tool Tool
	if err := json.Unmarshal(tb, &tool); err != nil || tool.Name != readFileTool.Name || !json.Valid(tool.Parameters) {
		t.Fatalf("tool round trip %s -> %+v (%v)", tb, tool, err)
	}
}

func TestBadToolCallArgumentsIsDecodeError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"choices":[{"index":0,"message":{"tool_calls":[{"id":"a","function":{"name":"f","arguments":"{\"x\":"}}]},"finish_reason":"tool_calls"}]}`)
	}))
	defer srv.Close()
	c, _ := New(testConfig(srv.URL))
	// Arguments that are not valid JSON are the model's text: they decode.
	res, err := c.Chat(context.Background(), ChatRequest{Messages: []Message{{Role: "user", Content: "x"}}})
	if err != nil || res.Choices[0].ToolCalls[0].Arguments != `{"x":` {
		t.Fatalf("res %+v err %v", res, err)
	}
}
