// Package openai is a client for OpenAI-compatible inference servers (vLLM,
// SGLang, TGI, llama.cpp, Ollama, the OpenAI API itself).
//
// It speaks the chat (/chat/completions) and completions (/completions)
// endpoints without streaming and adds what a rollout generator needs on top
// of the wire protocol:
//
//   - n samples per call, split into several requests when the server caps n
//     (Config.MaxN) or silently returns fewer choices than asked for (the
//     missing ones are requested again and the observed cap is remembered);
//   - sampling logprobs of the response and, where the server returns them,
//     token ids of prompt and response (vLLM's and SGLang's return_token_ids
//     extension, or logprob tokens spelled "token_id:N" as vLLM's
//     return_tokens_as_token_ids produces); text otherwise;
//   - finish_reason per choice ("stop", "length", ...);
//   - a bound on requests in flight, a timeout per attempt, and retries with
//     exponential backoff and full jitter on 429, 5xx, connection errors and
//     attempt timeouts, honouring Retry-After;
//   - typed errors (*Error) that say whether they are retriable and recognise
//     context-window overflow.
//
// The package has no global state: every Client owns its HTTP client,
// semaphore and configuration.
package openai

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Config configures a Client.
type Config struct {
	// BaseURL is the API root including the version path, e.g.
	// "http://127.0.0.1:8000/v1". Endpoints are appended to it.
	BaseURL string `yaml:"base_url"`
	// APIKey is sent as "Authorization: Bearer <key>" when not empty.
	APIKey string `yaml:"api_key"`
	// Model is the model name sent with every request.
	Model string `yaml:"model"`
	// Timeout bounds one HTTP attempt (connect, server time, body read).
	Timeout time.Duration `yaml:"timeout"`
	// MaxInFlight bounds the HTTP requests this client has open at once.
	MaxInFlight int `yaml:"max_in_flight"`
	// MaxRetries is the number of retries after the first attempt of one
	// request (0 = no retry).
	MaxRetries int `yaml:"max_retries"`
	// BackoffInitial is the backoff before the first retry; it doubles per
	// retry up to BackoffMax. Each wait is drawn from [d/2, 3d/2].
	BackoffInitial time.Duration `yaml:"backoff_initial"`
	// BackoffMax caps the exponential backoff.
	BackoffMax time.Duration `yaml:"backoff_max"`
	// MaxRetryAfter caps how long a server's Retry-After is honoured.
	MaxRetryAfter time.Duration `yaml:"max_retry_after"`
	// MaxN is the largest n sent in one request (0 = no cap). Servers that
	// reject or ignore large n are served by several requests.
	MaxN int `yaml:"max_n"`
	// ReturnTokenIDs asks the server for token ids of prompt and response
	// with the vLLM/SGLang extensions return_token_ids and
	// return_tokens_as_token_ids. Leave it off for servers that reject
	// unknown request fields (the OpenAI API).
	ReturnTokenIDs bool `yaml:"return_token_ids"`
	// TokenizePath is the server's tokenize endpoint relative to the host
	// root, e.g. "/tokenize" (vLLM, llama.cpp) or "/extras/tokenize"
	// (llama-cpp-python). Empty disables Client.Tokenize.
	TokenizePath string `yaml:"tokenize_path"`
	// Headers are extra HTTP headers sent with every request.
	Headers map[string]string `yaml:"headers"`
}

// DefaultConfig is a local vLLM-style server with conservative limits.
func DefaultConfig() Config {
	return Config{
		BaseURL:        "http://127.0.0.1:8000/v1",
		Model:          "default",
		Timeout:        120 * time.Second,
		MaxInFlight:    64,
		MaxRetries:     5,
		BackoffInitial: 250 * time.Millisecond,
		BackoffMax:     15 * time.Second,
		MaxRetryAfter:  60 * time.Second,
	}
}

// Validate checks the configuration.
func (c Config) Validate() error {
	var errs []error
	u, err := url.Parse(c.BaseURL)
	switch {
	case c.BaseURL == "":
		errs = append(errs, errors.New("base_url is empty"))
	case err != nil:
		errs = append(errs, fmt.Errorf("base_url: %w", err))
	case u.Scheme != "http" && u.Scheme != "https":
		errs = append(errs, fmt.Errorf("base_url %q: scheme must be http or https", c.BaseURL))
	case u.Host == "":
		errs = append(errs, fmt.Errorf("base_url %q has no host", c.BaseURL))
	}
	if c.Model == "" {
		errs = append(errs, errors.New("model is empty"))
	}
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("timeout must be > 0, got %s", c.Timeout))
	}
	if c.MaxInFlight < 1 {
		errs = append(errs, fmt.Errorf("max_in_flight must be >= 1, got %d", c.MaxInFlight))
	}
	if c.MaxRetries < 0 {
		errs = append(errs, fmt.Errorf("max_retries must be >= 0, got %d", c.MaxRetries))
	}
	if c.BackoffInitial <= 0 || c.BackoffMax < c.BackoffInitial {
		errs = append(errs, fmt.Errorf("backoff: need 0 < backoff_initial (%s) <= backoff_max (%s)", c.BackoffInitial, c.BackoffMax))
	}
	if c.MaxRetryAfter < 0 {
		errs = append(errs, fmt.Errorf("max_retry_after must be >= 0, got %s", c.MaxRetryAfter))
	}
	if c.MaxN < 0 {
		errs = append(errs, fmt.Errorf("max_n must be >= 0, got %d", c.MaxN))
	}
	if c.TokenizePath != "" && !strings.HasPrefix(c.TokenizePath, "/") {
		errs = append(errs, fmt.Errorf("tokenize_path %q must start with /", c.TokenizePath))
	}
	if len(errs) > 0 {
		return fmt.Errorf("openai config: %w", errors.Join(errs...))
	}
	return nil
}
