package generate

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"text/template"
	"time"
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
	// called on each. Empty: the policy's servers (its pool's, every one
	// of them, or its base URL).
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
	// Keep is how many of the newest versions each server keeps loaded
	// (vllm: older adapters that no tree in flight uses are unloaded, so
	// keep it within the server's --max-loras; 0: never unload).
	Keep int `yaml:"keep"`
}

// DefaultLoadConfig is no hook, with 5 attempts 1 s apart when one is set,
// keeping the 4 newest versions loaded.
func DefaultLoadConfig() LoadConfig {
	return LoadConfig{Attempts: 5, Backoff: time.Second, Timeout: 5 * time.Minute, Keep: 4}
}

// request returns the method, path and body template of the hook.
func (c LoadConfig) request() (method, path, body string) {
	switch c.Preset {
	case LoadVLLM:
		method, path, body = http.MethodPost, "/v1/load_lora_adapter",
			`{"lora_name": {{json .Model}}, "lora_path": {{json .CheckpointURI}}}`
	case LoadSGLang:
		method, path, body = http.MethodPost, "/update_weights_from_disk",
			`{"model_path": {{json .CheckpointURI}}, "weight_version": {{json .Version}}}`
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
	if c.Backoff < 0 || c.Timeout <= 0 || c.Keep < 0 {
		errs = append(errs, fmt.Errorf("versions.load: backoff and keep must be >= 0 and timeout > 0"))
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
