package policy

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/murphy-rl/murphy/openai"
)

// OpenAIConfig configures the policy backed by an OpenAI-compatible server.
type OpenAIConfig struct {
	// Client locates the server and sets limits and retries.
	Client openai.Config `yaml:"client"`
	// Pool, when it names servers (pool.servers or pool.servers_file),
	// spreads requests over several servers with adaptive concurrency
	// limits, prefix-cache affinity per tree and failover (openai.Pool);
	// client.base_url is then not used, the other client settings apply to
	// every server.
	Pool openai.PoolConfig `yaml:"pool"`
	// API is "chat" (/chat/completions) or "completions" (/completions).
	API string `yaml:"api"`
	// Temperature for sampling.
	Temperature float64 `yaml:"temperature"`
	// TopP for nucleus sampling (0 = server default).
	TopP float64 `yaml:"top_p"`
	// MaxTokens bounds a response (0 = server default).
	MaxTokens int `yaml:"max_tokens"`
	// Stop sequences.
	Stop []string `yaml:"stop"`
	// Seed, when not 0, is sent with every request, derived from (Seed,
	// group id), so a replayed prompt asks for the same samples from a
	// server that honours seeds.
	Seed int64 `yaml:"seed"`
	// Logprobs asks for the sampled tokens' logprobs.
	Logprobs bool `yaml:"logprobs"`
	// SystemPrompt is prepended to chat prompts that carry no messages.
	SystemPrompt string `yaml:"system_prompt"`
	// PolicyVersion is recorded on every candidate (the trainer's weight
	// version the server is serving).
	PolicyVersion int64 `yaml:"policy_version"`
	// TokenizeFallback fills token ids through the server's tokenize
	// endpoint (Client.TokenizePath) when responses carry none. Re-tokenised
	// response ids can differ from the sampled ones; logprobs are dropped
	// when their count no longer matches.
	TokenizeFallback bool `yaml:"tokenize_fallback"`
}

// DefaultOpenAIConfig samples with temperature 1 and logprobs on the chat API.
func DefaultOpenAIConfig() OpenAIConfig {
	return OpenAIConfig{
		Client:        openai.DefaultConfig(),
		Pool:          openai.DefaultPoolConfig(),
		API:           "chat",
		Temperature:   1.0,
		TopP:          1.0,
		MaxTokens:     1024,
		Logprobs:      true,
		PolicyVersion: 0,
	}
}

// Validate checks the configuration.
func (c OpenAIConfig) Validate() error {
	var errs []error
	if err := c.Client.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.Pool.Enabled() {
		if err := c.Pool.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.API != "chat" && c.API != "completions" {
		errs = append(errs, fmt.Errorf("api must be chat or completions, got %q", c.API))
	}
	if c.Temperature < 0 {
		errs = append(errs, fmt.Errorf("temperature must be >= 0, got %v", c.Temperature))
	}
	if c.TopP < 0 || c.TopP > 1 {
		errs = append(errs, fmt.Errorf("top_p must be in [0,1], got %v", c.TopP))
	}
	if c.MaxTokens < 0 {
		errs = append(errs, fmt.Errorf("max_tokens must be >= 0, got %d", c.MaxTokens))
	}
	if c.TokenizeFallback && c.Client.TokenizePath == "" {
		errs = append(errs, errors.New("tokenize_fallback needs client.tokenize_path"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("openai policy config: %w", errors.Join(errs...))
	}
	return nil
}

// OpenAI is a policy served by an OpenAI-compatible inference server.
type OpenAI struct {
	cfg    OpenAIConfig
	client *openai.Client
	// pool is the server pool (nil: one server, client); api is the one
	// of the two requests go to.
	pool *openai.Pool
	api  sampler
	obs  atomic.Pointer[func(openai.Attempt)]
	// base is the policy whose client or pool this one shares (ForModel;
	// nil: its own).
	base *OpenAI
}

// ForModel is the policy with requests naming model: it shares o's client or server pool (their connections,
// concurrency limits and affinity), so a new policy version neither loses
// what the pool learnt of its servers nor runs a second pool against them.
func (o *OpenAI) ForModel(model string) *OpenAI {
	b := o.owner()
	cfg := o.cfg
	cfg.Client.Model = model
	return &OpenAI{cfg: cfg, client: b.client, pool: b.pool, api: b.api, base: b}
}

func (o *OpenAI) owner() *OpenAI {
	if o.base != nil {
		return o.base
	}
	return o
}

// NewOpenAI validates cfg and builds the policy and its client; opts are
// passed to the client (e.g. openai.WithObserver for metrics).
func NewOpenAI(cfg OpenAIConfig, opts ...openai.Option) (*OpenAI, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := &OpenAI{cfg: cfg}
	observe := openai.WithObserver(func(a openai.Attempt) {
		if f := o.obs.Load(); f != nil {
			(*f)(a)
		}
	})
	copts := append([]openai.Option{observe}, opts...)
	if cfg.Pool.Enabled() {
		p, err := openai.NewPool(cfg.Pool, cfg.Client, copts...)
		if err != nil {
			return nil, err
		}
		o.pool, o.api = p, p
		return o, nil
	}
	c, err := openai.New(cfg.Client, copts...)
	if err != nil {
		return nil, err
	}
	o.client, o.api = c, c
	return o, nil
}

// ObserveAttempts registers f to be called after every HTTP attempt of the
// policy's client (the generate stage's metrics use it). An observer passed
// to NewOpenAI as an option replaces this hook.
func (o *OpenAI) ObserveAttempts(f func(openai.Attempt)) { o.owner().obs.Store(&f) }

// Client is the policy's client (for its in-flight count); with a pool, the
// client of one of its servers (openai.Pool.Primary: agent episodes run on
// it, outside the pool).
func (o *OpenAI) Client() *openai.Client {
	if o.pool != nil {
		return o.pool.Primary()
	}
	return o.client
}

// Name implements Policy.
func (o *OpenAI) Name() string { return "openai:" + o.cfg.Client.Model }

// Version implements Policy.
func (o *OpenAI) Version() int64 { return o.cfg.PolicyVersion }

// NeedsTask implements Policy: the prompt carries everything.
func (o *OpenAI) NeedsTask() bool { return false }

// Generate implements Policy with one call for the whole group (n =
// len(NodeIDs)); the client splits it when the server caps n.
func (o *OpenAI) Generate(ctx context.Context, req Request) ([]Sample, error) {
	p := req.Prompt
	if p == nil {
		return nil, errors.New("policy: no prompt")
	}
	s := openai.Sampling{
		Model: o.cfg.Client.Model,
		N:     len(req.NodeIDs), Temperature: o.cfg.Temperature, TopP: o.cfg.TopP,
		MaxTokens: o.cfg.MaxTokens, Stop: o.cfg.Stop, Logprobs: o.cfg.Logprobs,
	}
	if o.cfg.Seed != 0 {
		seed := groupSeed(o.cfg.Seed, p.GroupID)
		s.Seed = &seed
	}
	ctx = openai.WithAffinity(ctx, AffinityKey(p))
	var res *openai.Result
	var err error
	promptText := p.Text
	if o.cfg.API == "chat" {
		msgs := make([]openai.Message, 0, len(p.Messages)+2)
		for _, m := range p.Messages {
			msgs = append(msgs, openai.Message{Role: m.Role, Content: m.Content})
		}
		if len(msgs) == 0 {
			if o.cfg.SystemPrompt != "" {
				msgs = append(msgs, openai.Message{Role: "system", Content: o.cfg.SystemPrompt})
			}
			msgs = append(msgs, openai.Message{Role: "user", Content: p.Text})
		}
		res, err = o.api.Chat(ctx, openai.ChatRequest{Messages: msgs, Sampling: s})
	} else {
		if promptText == "" {
			var parts []string
			for _, m := range p.Messages {
				parts = append(parts, m.Content)
			}
			promptText = strings.Join(parts, "\n\n")
		}
		res, err = o.api.Complete(ctx, openai.CompletionRequest{Prompt: promptText, Sampling: s})
	}
	var out []Sample
	if res != nil {
		promptIDs := res.PromptTokenIDs
		if promptIDs == nil {
			promptIDs = p.TokenIDs
		}
		if promptIDs == nil && o.cfg.TokenizeFallback && len(res.Choices) > 0 {
			promptIDs, _ = o.api.Tokenize(ctx, promptText)
		}
		for _, c := range res.Choices {
			tag := c.Tag
			if c.Server == "" {
				tag = openai.NoTag
			}
			smp := Sample{
				Text: c.Text, Code: ExtractCode(c.Text), PromptTokenIDs: promptIDs,
				TokenIDs: c.TokenIDs, Logprobs: c.Logprobs, FinishReason: c.FinishReason, ServerTag: tag,
			}
			if smp.TokenIDs == nil && o.cfg.TokenizeFallback {
				smp.TokenIDs, _ = o.api.Tokenize(ctx, c.Text)
			}
			if len(smp.Logprobs) != len(smp.TokenIDs) {
				smp.Logprobs = nil
			}
			out = append(out, smp)
		}
	}
	if err != nil {
		if openai.IsContextOverflow(err) {
			return out, fmt.Errorf("%w: %w", ErrContextOverflow, err)
		}
		return out, fmt.Errorf("policy %s: %w", o.Name(), err)
	}
	return out, nil
}

func groupSeed(seed int64, groupID string) int64 {
	h := sha256.New()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(seed))
	h.Write(b[:])
	h.Write([]byte(groupID))
	// Keep seeds positive and below 2^31: some servers take a 32-bit seed.
	return int64(binary.LittleEndian.Uint32(h.Sum(nil)) >> 1)
}
