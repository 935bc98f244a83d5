package episode

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/murphy-rl/murphy/openai"
	"github.com/murphy-rl/murphy/stages/generate/policy"
)

// OpenAIAgentConfig configures an agent on an OpenAI-compatible server.
type OpenAIAgentConfig struct {
	// Temperature and TopP for sampling (TopP 0 = server default).
	Temperature float64
	TopP        float64
	// MaxTokens bounds one turn (0 = only the episode's budget; the
	// server's default when there is none).
	MaxTokens int
	// Stop sequences.
	Stop []string
	// Seed, when not nil, seeds turn k (0-based) with *Seed+k: a replayed
	// episode asks for the same turns from a server that honours seeds.
	Seed *int64
	// Logprobs asks for the sampled tokens' logprobs.
	Logprobs bool
	// Tools are the tool definitions sent (nil = ToolSpecs()).
	Tools []openai.Tool
	// ToolChoice is sent when not nil (auto, none, required, or a function
	// forced on every turn: tests use that with servers whose chat
	// template knows no tools).
	ToolChoice *openai.ToolChoice
	// ParallelToolCalls is sent when not nil; false asks for one call per
	// turn (the episode runs only the first call of a turn anyway).
	ParallelToolCalls *bool
	// Extra fields merged into every request body (top_k, min_p...).
	Extra map[string]any
	// Model, when set, is the model every turn names (a policy version's
	// model; empty: the client's).
	Model string
	// ChatTemplate names the server's chat-template tokenisation
	// (openai.ChatTemplateVLLM, openai.ChatTemplateLlamaCpp; "" = none):
	// with one, the episode's token ids are the server's own tokens of
	// every turn's context (Run); without, the episode renders tool turns
	// itself (README "Token ids").
	ChatTemplate string
}

// OpenAIAgent is the model of an episode served by an OpenAI-compatible
// server through /chat/completions with tools. Token ids come from the
// server when it returns them (vLLM's and SGLang's return_token_ids, see
// openai.Config.ReturnTokenIDs); tool outputs are tokenized by the server's
// tokenize endpoint (openai.Config.TokenizePath), which must be configured.
type OpenAIAgent struct {
	client *openai.Client
	cfg    OpenAIAgentConfig
	turn   int
	// special are the tokens the server adds to any text it tokenizes.
	special      []int32
	specialKnown bool
}

// NewOpenAIAgent returns an agent for one episode (it counts turns for
// seeding): make one per episode.
func NewOpenAIAgent(client *openai.Client, cfg OpenAIAgentConfig) (*OpenAIAgent, error) {
	if client == nil {
		return nil, errors.New("episode: no client")
	}
	if client.Config().TokenizePath == "" {
		return nil, errors.New("episode: the OpenAI agent tokenizes tool outputs: the client needs tokenize_path")
	}
	if cfg.ChatTemplate != "" && !slices.Contains(openai.ChatTemplates(), cfg.ChatTemplate) {
		return nil, fmt.Errorf("episode: chat template %q: want one of %v", cfg.ChatTemplate, openai.ChatTemplates())
	}
	if cfg.Tools == nil {
		cfg.Tools = ToolSpecs()
	}
	return &OpenAIAgent{client: client, cfg: cfg}, nil
}

// Name implements Agent.
func (a *OpenAIAgent) Name() string {
	if a.cfg.Model != "" {
		return "openai:" + a.cfg.Model
	}
	return "openai:" + a.client.Config().Model
}

// Next implements Agent with one chat request.
func (a *OpenAIAgent) Next(ctx context.Context, conv []Message, maxTokens int) (*Turn, error) {
	s := openai.Sampling{
		Model: a.cfg.Model,
		N:     1, Temperature: a.cfg.Temperature, TopP: a.cfg.TopP, MaxTokens: a.cfg.MaxTokens,
		Stop: a.cfg.Stop, Logprobs: a.cfg.Logprobs, Extra: a.cfg.Extra,
	}
	if maxTokens > 0 && (s.MaxTokens <= 0 || maxTokens < s.MaxTokens) {
		s.MaxTokens = maxTokens
	}
	if a.cfg.Seed != nil {
		seed := *a.cfg.Seed + int64(a.turn)
		s.Seed = &seed
	}
	a.turn++
	res, err := a.client.Chat(ctx, openai.ChatRequest{
		Messages: conv, Tools: a.cfg.Tools, ToolChoice: a.cfg.ToolChoice,
		ParallelToolCalls: a.cfg.ParallelToolCalls, Sampling: s,
	})
	if err != nil {
		return nil, err
	}
	if len(res.Choices) == 0 {
		return nil, fmt.Errorf("episode: %s returned no choice", a.Name())
	}
	ch := res.Choices[0]
	t := &Turn{
		Text: ch.Text, Calls: ch.ToolCalls, TokenIDs: ch.TokenIDs, Logprobs: ch.Logprobs,
		FinishReason: ch.FinishReason, PromptTokenIDs: res.PromptTokenIDs,
	}
	if t.PromptTokenIDs == nil && a.turn == 1 {
		// The server returned no prompt tokens: the prompt's text,
		// tokenized without the chat template (as policy.OpenAI's
		// tokenize fallback does).
		var text string
		for _, m := range conv {
			text += m.Content + "\n"
		}
		if ids, err := a.client.Tokenize(ctx, text); err == nil {
			t.PromptTokenIDs = ids
		}
	}
	return t, nil
}

// TokenizeContext implements ContextTokenizer with the server's chat
// template (OpenAIAgentConfig.ChatTemplate); ok is false without one.
func (a *OpenAIAgent) TokenizeContext(ctx context.Context, conv []Message, addGenerationPrompt bool) ([]int32, bool, error) {
	if a.cfg.ChatTemplate == "" {
		return nil, false, nil
	}
	ids, err := a.client.TokenizeChat(ctx, a.cfg.ChatTemplate, conv, a.cfg.Tools, addGenerationPrompt)
	return ids, true, err
}

// Tokenize implements Agent with the server's tokenize endpoint. Servers
// add special tokens to what they tokenize (llama-cpp-python and vLLM a
// BOS token by default); those, learnt once by tokenizing "", are removed:
// a tool output in the middle of a response carries none.
func (a *OpenAIAgent) Tokenize(ctx context.Context, text string) ([]int32, error) {
	if !a.specialKnown {
		sp, err := a.client.Tokenize(ctx, "")
		if err != nil {
			return nil, err
		}
		a.special, a.specialKnown = sp, true
	}
	ids, err := a.client.Tokenize(ctx, text)
	if err != nil {
		return nil, err
	}
	return stripSpecial(ids, a.special), nil
}

// stripSpecial removes sp from the start of ids, or else from its end.
func stripSpecial(ids, sp []int32) []int32 {
	if len(sp) == 0 || len(ids) < len(sp) {
		return ids
	}
	if slices.Equal(ids[:len(sp)], sp) {
		return ids[len(sp):]
	}
	if slices.Equal(ids[len(ids)-len(sp):], sp) {
		return ids[:len(ids)-len(sp)]
	}
	return ids
}

// OpenAIAgentFor returns the agent of node nodeID's episode sampled with
// policy p's client and settings: its temperature, top_p, stop sequences
// and logprobs, its max_tokens as the bound of one turn, and a seed derived
// from (p's seed, node id) when p sends seeds; chatTemplate is
// OpenAIAgentConfig.ChatTemplate.
func OpenAIAgentFor(p *policy.OpenAI, nodeID, chatTemplate string) (*OpenAIAgent, error) {
	c := p.Config()
	return NewOpenAIAgent(p.Client(), OpenAIAgentConfig{
		Temperature: c.Temperature, TopP: c.TopP, MaxTokens: c.MaxTokens, Stop: c.Stop,
		Seed: p.EpisodeSeed(nodeID), Logprobs: c.Logprobs, Model: c.Client.Model, ChatTemplate: chatTemplate,
	})
}
