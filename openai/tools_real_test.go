package openai

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/murphy-rl/murphy/openai/openaitest"
)

// TestRealServerTools runs tool calling against llama.cpp's OpenAI server
// (llama-cpp-python, the tiny random-weight model, --chat_format chatml as
// openaitest starts it). The chatml handler takes tools and tool_choice:
// a forced function is sampled under a grammar built from the function's
// JSON schema and answered as tool_calls with finish_reason "tool_calls";
// "auto" gives plain text (chatml renders no tools). "tool" messages and
// assistant tool_calls are accepted in the conversation (chatml leaves
// tool messages out of the prompt). The model's weights are random: what
// is checked is the protocol, not what it calls.
func TestRealServerTools(t *testing.T) {
	srv := openaitest.StartLlama(t)
	ctx := context.Background()
	c := realClient(t, srv.BaseURL, srv.Model, nil)
	seed := int64(3)
	pick := Tool{
		Name:        "read_file",
		Description: "Read a file.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","enum":["main.c","util.c"]}},
			"required":["path"],"additionalProperties":false}`),
	}
	tools := []Tool{pick, {Name: "build", Description: "Build."}}
	msgs := []Message{{Role: "system", Content: "fix"}, {Role: "user", Content: "build fails"}}

	var first ToolCall
	t.Run("forced tool call", func(t *testing.T) {
		res, err := c.Chat(ctx, ChatRequest{Messages: msgs, Tools: tools, ToolChoice: ForceTool("read_file"),
			Sampling: Sampling{Temperature: 1, MaxTokens: 96, Seed: &seed, Logprobs: true}})
		if err != nil {
			t.Fatal(err)
		}
		ch := res.Choices[0]
		if ch.FinishReason != "tool_calls" || len(ch.ToolCalls) != 1 {
			t.Fatalf("finish %q, %d tool calls: %+v", ch.FinishReason, len(ch.ToolCalls), ch)
		}
		first = ch.ToolCalls[0]
		if first.ID == "" || first.Name != "read_file" {
			t.Fatalf("tool call %+v", first)
		}
		var args struct {
			Path string `json:"path"`
		}
		if err := json.Unmarshal([]byte(first.Arguments), &args); err != nil || (args.Path != "main.c" && args.Path != "util.c") {
			t.Fatalf("grammar-constrained arguments %q: %v", first.Arguments, err)
		}
		if len(ch.Logprobs) == 0 || len(ch.Tokens) != len(ch.Logprobs) {
			t.Fatalf("%d logprobs, %d tokens", len(ch.Logprobs), len(ch.Tokens))
		}
		for _, lp := range ch.Logprobs {
			if lp > 0 {
				t.Fatalf("logprob %v > 0", lp)
			}
		}
		t.Logf("tool call %s %s(%s)", first.ID, first.Name, first.Arguments)
	})

	t.Run("conversation with tool messages", func(t *testing.T) {
		if first.ID == "" {
			t.Skip("no tool call to answer")
		}
		conv := append(msgs[:2:2],
			Message{Role: "assistant", ToolCalls: []ToolCall{first}},
			Message{Role: "tool", ToolCallID: first.ID, Content: "int main(void) { return totl; }"})
		res, err := c.Chat(ctx, ChatRequest{Messages: conv, Tools: tools, ToolChoice: ToolChoiceAuto,
			Sampling: Sampling{Temperature: 1, MaxTokens: 8, Seed: &seed, Logprobs: true, Extra: eosBan}})
		if err != nil {
			t.Fatal(err)
		}
		ch := res.Choices[0]
		if !validFinish(ch.FinishReason) && ch.FinishReason != "tool_calls" {
			t.Fatalf("finish %q", ch.FinishReason)
		}
		if len(ch.ToolCalls) == 0 && len(ch.Logprobs) == 0 {
			t.Fatalf("neither text logprobs nor tool calls: %+v", ch)
		}
	})
}
