package generate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/template"
	"time"

	"github.com/murphy-rl/murphy/topics"
)

// Load hook presets.
const (
	LoadNone   = ""
	LoadVLLM   = "vllm"
	LoadSGLang = "sglang"
	LoadHTTP   = "http"
)

// LoadConfig is the hook that tells inference servers to load a new policy
// version before generate sends it requests (VERSIONS.md).
type LoadConfig struct {
	// Preset is "" (no hook), "vllm" (POST /v1/load_lora_adapter), "sglang"
	// (POST /update_weights_from_disk) or "http" (Method, Path, Body).
	Preset string `yaml:"preset"`
	// URLs are the servers' base URLs (http://host:port); the hook is
	// called on each. Empty: the policy's base URL.
	URLs []string `yaml:"urls"`
	// Method is the HTTP method (POST unless set).
	Method string `yaml:"method"`
	// Path is appended to each URL; it overrides the preset's.
	Path string `yaml:"path"`
	// Body is a Go template over the version record ({{.Version}},
	// {{.Model}}, {{.Adapter}}, {{.CheckpointURI}}; {{json .Model}} quotes
	// for JSON); it overrides the preset's.
	Body string `yaml:"body"`
	// Attempts is the number of calls per server (>= 1) before giving up.
	Attempts int `yaml:"attempts"`
	// Backoff is the pause after the first failed attempt (doubling).
	Backoff time.Duration `yaml:"backoff"`
	// Timeout bounds one attempt.
	Timeout time.Duration `yaml:"timeout"`
	// APIKey is sent as a bearer token when set.
	APIKey string `yaml:"api_key"`
}

// DefaultLoadConfig is no hook, with 5 attempts 1 s apart when one is set.
func DefaultLoadConfig() LoadConfig {
	return LoadConfig{Attempts: 5, Backoff: time.Second, Timeout: 5 * time.Minute}
}

// request returns the method, path and body template of the hook.
func (c LoadConfig) request() (method, path, body string) {
	switch c.Preset {
	case LoadVLLM:
		method, path, body = http.MethodPost, "/v1/load_lora_adapter",
			`{"lora_name": {{json .Model}}, "lora_path": {{json .CheckpointURI}}}`
	case LoadSGLang:
		method, path, body = http.MethodPost, "/update_weights_from_disk",
			`{"model_path": {{json .CheckpointURI}}}`
	case LoadHTTP:
		method = http.MethodPost
	}
	if c.Method != "" {
		method = c.Method
	}
	if c.Path != "" {
		path = c.Path
	}
	if c.Body != "" {
		body = c.Body
	}
	return method, path, body
}

// Validate checks the configuration.
func (c LoadConfig) Validate() error {
	switch c.Preset {
	case LoadNone:
		return nil
	case LoadVLLM, LoadSGLang, LoadHTTP:
	default:
		return fmt.Errorf("versions.load.preset must be one of vllm, sglang, http or empty, got %q", c.Preset)
	}
	var errs []error
	if c.Attempts < 1 {
		errs = append(errs, fmt.Errorf("versions.load.attempts must be >= 1, got %d", c.Attempts))
	}
	if c.Backoff < 0 || c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("versions.load: backoff must be >= 0 and timeout > 0"))
	}
	if _, path, body := c.request(); path == "" {
		errs = append(errs, errors.New("versions.load.path is required with preset http"))
	} else if _, err := parseBody(body); err != nil {
		errs = append(errs, fmt.Errorf("versions.load.body: %w", err))
	}
	return errors.Join(errs...)
}

func parseBody(body string) (*template.Template, error) {
	return template.New("body").Funcs(template.FuncMap{"json": jsonString}).Parse(body)
}

func jsonString(v any) string {
	s := fmt.Sprint(v)
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// loader calls the load hook.
type loader struct {
	cfg    LoadConfig
	urls   []string
	tmpl   *template.Template
	client *http.Client
	sleep  func(context.Context, time.Duration) error
}

// newLoader is the hook of cfg over urls (the servers), nil when there is none.
func newLoader(cfg LoadConfig, defaultURL string) (*loader, error) {
	if cfg.Preset == LoadNone {
		return nil, nil
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	_, _, body := cfg.request()
	t, err := parseBody(body)
	if err != nil {
		return nil, err
	}
	urls := cfg.URLs
	if len(urls) == 0 {
		if defaultURL == "" {
			return nil, errors.New("versions.load: no server URL (versions.load.urls)")
		}
		urls = []string{defaultURL}
	}
	return &loader{cfg: cfg, urls: urls, tmpl: t, client: &http.Client{Timeout: cfg.Timeout}, sleep: sleepCtx}, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// LoadError says why a version could not be loaded on a server.
type LoadError struct {
	Version  int64
	Model    string
	URL      string
	Attempts int
	Status   int    // last HTTP status (0: no answer)
	Answer   string // the server's last answer (capped)
	Err      error  // the last transport error
}

func (e *LoadError) Error() string {
	msg := fmt.Sprintf("generate: loading policy version %d (model %q) on %s failed after %d attempts", e.Version, e.Model, e.URL, e.Attempts)
	if e.Status != 0 {
		msg += fmt.Sprintf(": HTTP %d", e.Status)
		if e.Answer != "" {
			msg += ": " + e.Answer
		}
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *LoadError) Unwrap() error { return e.Err }

// load asks every server to load v; it returns the first server's error
// once its attempts are spent (the servers before it loaded v).
func (l *loader) load(ctx context.Context, v *topics.PolicyVersion) error {
	var body bytes.Buffer
	if err := l.tmpl.Execute(&body, v); err != nil {
		return fmt.Errorf("generate: load hook body for version %d: %w", v.Version, err)
	}
	method, path, _ := l.cfg.request()
	for _, base := range l.urls {
		url := strings.TrimRight(base, "/") + path
		le := &LoadError{Version: v.Version, Model: v.Model, URL: url}
		wait := l.cfg.Backoff
		for a := 1; a <= l.cfg.Attempts; a++ {
			le.Attempts = a
			ok, retry := l.attempt(ctx, method, url, body.Bytes(), le)
			if ok {
				le = nil
				break
			}
			if !retry || a == l.cfg.Attempts {
				break
			}
			if err := l.sleep(ctx, wait); err != nil {
				return err
			}
			wait *= 2
		}
		if le != nil {
			return le
		}
	}
	return nil
}

// attempt makes one call; retry says whether another may succeed (a
// transport error, 408, 429 or 5xx).
func (l *loader) attempt(ctx context.Context, method, url string, body []byte, le *LoadError) (ok, retry bool) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		le.Err = err
		return false, false
	}
	req.Header.Set("Content-Type", "application/json")
	if l.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+l.cfg.APIKey)
	}
	resp, err := l.client.Do(req)
	if err != nil {
		le.Status, le.Answer, le.Err = 0, "", err
		return false, ctx.Err() == nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if resp.StatusCode/100 == 2 {
		return true, false
	}
	le.Status, le.Answer, le.Err = resp.StatusCode, strings.TrimSpace(string(b)), nil
	s := resp.StatusCode
	return false, s == http.StatusRequestTimeout || s == http.StatusTooManyRequests || s >= 500
}
