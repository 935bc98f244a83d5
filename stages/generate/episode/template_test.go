package episode

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/murphy-rl/murphy/stages/generate/policy"
)

// chatmlAgent renders conversations in ChatML (tool calls in the Hermes
// form, tool answers as tool turns) and tokenizes them with the simple
// tokenizer: a deterministic chat template for testing how Run assembles
// an episode from per-turn contexts. sampled, when set, changes what the
// model "sampled" relative to the template's rendering of its call.
type chatmlAgent struct {
	calls   []ToolCall
	sampled func(string) string
}

func (a *chatmlAgent) Name() string { return "chatml" }

func (a *chatmlAgent) Tokenize(_ context.Context, s string) ([]int32, error) {
	return policy.Tokenize(s), nil
}

func render(conv []Message, gen bool) string {
	var b strings.Builder
	for _, m := range conv {
		b.WriteString("<|im_start|>" + m.Role + "\n" + m.Content)
		for _, c := range m.ToolCalls {
			b.WriteString(RenderAction("", c))
		}
		b.WriteString("<|im_end|>\n")
	}
	if gen {
		b.WriteString("<|im_start|>assistant\n")
	}
	return b.String()
}

func (a *chatmlAgent) TokenizeContext(_ context.Context, conv []Message, gen bool) ([]int32, bool, error) {
	return policy.Tokenize(render(conv, gen)), true, nil
}

func (a *chatmlAgent) Next(_ context.Context, conv []Message, _ int) (*Turn, error) {
	n := 0
	for _, m := range conv {
		if m.Role == "assistant" {
			n++
		}
	}
	c := ToolCall{ID: "s", Name: ToolSubmit, Arguments: "{}"}
	if n < len(a.calls) {
		c = a.calls[n]
	}
	text := RenderAction("", c) + "<|im_end|>"
	if a.sampled != nil {
		text = a.sampled(text)
	}
	return &Turn{Calls: []ToolCall{c}, TokenIDs: policy.Tokenize(text), Logprobs: make([]float32, len(policy.Tokenize(text))), FinishReason: "tool_calls"}, nil
}

// TestRunWithChatTemplate: with a chat template, the prompt is the first
// context and the response the final context after it (the last action
// appended): every action was sampled under exactly the tokens before it.
// When the template renders an action otherwise than it was sampled, the
// output falls back to the rendered tool response and is counted.
func TestRunWithChatTemplate(t *testing.T) {
	calls := []ToolCall{{ID: "a", Name: ToolListFiles, Arguments: "{}"}, {ID: "b", Name: ToolReadFile, Arguments: `{"path":"calc.py"}`}}
	cfg := Config{System: "fix", Prompt: "build fails"}
	t.Run("exact", func(t *testing.T) {
		agent := &chatmlAgent{calls: calls}
		res, err := Run(context.Background(), cfg, agent, newTools(t, "testdata/calc", fakeBuild, ToolsConfig{}))
		if err != nil {
			t.Fatal(err)
		}
		if err := res.Check(); err != nil {
			t.Fatal(err)
		}
		last := res.Conversation[:len(res.Conversation)-1] // without the "submitted" answer
		final := policy.Tokenize(render(last[:len(last)-1], true))
		full := append(slices.Clone(final), res.ResponseTokenIDs[res.Steps[len(res.Steps)-1].ActionStart:]...)
		if !slices.Equal(res.PromptTokenIDs, policy.Tokenize(render(res.Conversation[:2], true))) {
			t.Fatal("the prompt is not the first context")
		}
		if !slices.Equal(append(slices.Clone(res.PromptTokenIDs), res.ResponseTokenIDs...), full) {
			t.Fatal("prompt + response is not the final context followed by the last action")
		}
		if res.ContextMismatches != 0 || res.ResponseLogprobs == nil || len(res.Steps) != 3 {
			t.Fatalf("%d mismatches, logprobs %v, %d steps", res.ContextMismatches, res.ResponseLogprobs != nil, len(res.Steps))
		}
	})
	t.Run("the template renders the action otherwise", func(t *testing.T) {
		agent := &chatmlAgent{calls: calls, sampled: func(s string) string { return strings.Replace(s, `{"name"`, `{ "name"`, 1) }}
		res, err := Run(context.Background(), cfg, agent, newTools(t, "testdata/calc", fakeBuild, ToolsConfig{}))
		if err != nil {
			t.Fatal(err)
		}
		if err := res.Check(); err != nil {
			t.Fatal(err)
		}
		if res.ContextMismatches != 2 {
			t.Fatalf("%d mismatches, want 2", res.ContextMismatches)
		}
		s := res.Steps[0]
		if got := res.ResponseTokenIDs[s.ActionEnd:s.End]; !slices.Equal(got, policy.Tokenize(RenderToolOutput(s.Output))) {
			t.Fatal("a mismatched output is not the rendered tool response")
		}
	})
}

func TestContextDelta(t *testing.T) {
	for _, tc := range []struct {
		prev, action, next, out []int32
		exact                   bool
	}{
		{[]int32{1, 2}, []int32{3}, []int32{1, 2, 3, 4, 5}, []int32{4, 5}, true},
		{[]int32{1, 2}, []int32{3}, []int32{1, 2, 9, 4}, nil, false},
		{[]int32{1, 2}, []int32{3}, []int32{7, 2, 3, 4}, nil, false},
		{[]int32{1}, []int32{2, 3}, []int32{1, 2}, nil, false},
	} {
		out, exact := ContextDelta(tc.prev, tc.action, tc.next)
		if exact != tc.exact || !slices.Equal(out, tc.out) {
			t.Errorf("ContextDelta(%v, %v, %v) = %v %v", tc.prev, tc.action, tc.next, out, exact)
		}
	}
}
