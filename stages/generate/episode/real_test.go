package episode

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/openai"
	"github.com/murphy-rl/murphy/openai/openaitest"
)

// TestRealServerEpisode runs an OpenAIAgent episode against llama.cpp's
// OpenAI server (llama-cpp-python with the tiny random-weight model, as
// openai/real_test.go; skipped when it is not installed, unless CI=true).
// The server's chatml format renders no tools, so the agent forces
// list_files on every turn (tool_choice naming the function: the server
// samples the arguments under the schema's grammar and answers
// tool_calls). The model is random: the test checks the protocol and the
// token accounting, not the episode's sense.
func TestRealServerEpisode(t *testing.T) {
	srv := openaitest.StartLlama(t)
	cfg := openai.DefaultConfig()
	cfg.BaseURL, cfg.Model, cfg.TokenizePath = srv.BaseURL, srv.Model, srv.TokenizePath
	cfg.Timeout, cfg.MaxRetries = 30*time.Second, 1
	client, err := openai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	seed := int64(11)
	agent, err := NewOpenAIAgent(client, OpenAIAgentConfig{
		Temperature: 1, Seed: &seed, Logprobs: true, MaxTokens: 40,
		ToolChoice: openai.ForceTool(ToolListFiles),
	})
	if err != nil {
		t.Fatal(err)
	}
	task := calcTask(t)
	tools := newTools(t, "testdata/calc", fakeBuild, ToolsConfig{})
	ctx := context.Background()
	// The context window is 256 tokens of a near character-level
	// vocabulary: a short system and user message.
	res, err := Run(ctx, Config{System: "fix", Prompt: "build fails", MaxSteps: 3}, agent, tools)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("end %s, %d steps, %d tokens, logprobs %v", res.EpisodeEnd, len(res.Steps), len(res.ResponseTokenIDs), res.ResponseLogprobs != nil)
	for _, s := range res.Steps {
		t.Logf("step %s %s -> %q", s.Tool, s.Arguments, s.Output)
	}
	if res.EpisodeEnd != EndStepBudget && res.EpisodeEnd != EndContext {
		t.Fatalf("end %s", res.EpisodeEnd)
	}
	if len(res.Steps) == 0 {
		t.Fatal("no step")
	}
	if err := res.Check(); err != nil {
		t.Fatal(err)
	}
	candidate(t, task, res, agent, 0)
	bos, err := client.Tokenize(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range res.Steps {
		if s.Tool != ToolListFiles {
			t.Fatalf("step %d called %s under a forced list_files", i, s.Tool)
		}
		if s.End == s.ActionEnd {
			continue
		}
		raw, err := client.Tokenize(ctx, RenderToolOutput(s.Output))
		if err != nil {
			t.Fatal(err)
		}
		got := res.ResponseTokenIDs[s.ActionEnd:s.End]
		if !slices.Equal(got, stripSpecial(raw, bos)) || (len(bos) > 0 && got[0] == bos[0]) {
			t.Fatalf("step %d output tokens %v are not the server's tokens of the output without %v", i, got, bos)
		}
	}
	if len(res.PromptTokenIDs) == 0 {
		t.Fatal("no prompt tokens")
	}
}
