package govern

import (
	"context"
	"errors"
	"fmt"

	"github.com/murphy-rl/murphy/openai"
	"github.com/murphy-rl/murphy/topics"
)

// LLMConfig locates the OpenAI-compatible server of the LLM judge and
// scorer and sets their sampling.
type LLMConfig struct {
	// Client is the shared OpenAI-compatible client's configuration (base
	// URL, model, timeouts, retries).
	Client openai.Config `yaml:"client"`
	// MaxTokens bounds one answer.
	MaxTokens int `yaml:"max_tokens"`
	// Temperature of the answers (0 = greedy, for stable judgements).
	Temperature float64 `yaml:"temperature"`
	// Extra request fields, e.g. response_format for servers that constrain
	// the answer to JSON.
	Extra map[string]any `yaml:"extra"`
}

// DefaultLLMConfig is a local server answered greedily.
func DefaultLLMConfig() LLMConfig {
	return LLMConfig{Client: openai.DefaultConfig(), MaxTokens: 512, Temperature: 0}
}

// Validate checks the configuration.
func (c LLMConfig) Validate() error {
	var errs []error
	if err := c.Client.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.MaxTokens < 1 {
		errs = append(errs, fmt.Errorf("max_tokens must be >= 1, got %d", c.MaxTokens))
	}
	if c.Temperature < 0 {
		errs = append(errs, fmt.Errorf("temperature must be >= 0, got %g", c.Temperature))
	}
	if len(errs) > 0 {
		return fmt.Errorf("llm: %w", errors.Join(errs...))
	}
	return nil
}

// OpenAIChat is a ChatModel on the shared openai client: one chat
// completion per call; the client retries transient failures.
type OpenAIChat struct {
	client *openai.Client
	cfg    LLMConfig
}

// NewOpenAIChat builds a ChatModel from cfg.
func NewOpenAIChat(cfg LLMConfig, opts ...openai.Option) (*OpenAIChat, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c, err := openai.New(cfg.Client, opts...)
	if err != nil {
		return nil, err
	}
	return &OpenAIChat{client: c, cfg: cfg}, nil
}

// Chat implements ChatModel. An answer cut at max_tokens is returned as it
// is: its parser rejects it.
func (o *OpenAIChat) Chat(ctx context.Context, messages []topics.Message) (string, error) {
	msgs := make([]openai.Message, len(messages))
	for i, m := range messages {
		msgs[i] = openai.Message{Role: m.Role, Content: m.Content}
	}
	res, err := o.client.Chat(ctx, openai.ChatRequest{Messages: msgs, Sampling: openai.Sampling{
		N: 1, Temperature: o.cfg.Temperature, MaxTokens: o.cfg.MaxTokens, Extra: o.cfg.Extra,
	}})
	if err != nil {
		return "", err
	}
	if res == nil || len(res.Choices) == 0 {
		return "", errors.New("openai: no choice returned")
	}
	return res.Choices[0].Text, nil
}

var _ ChatModel = (*OpenAIChat)(nil)
