package generate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"text/template"
	"time"

	"github.com/murphy-rl/murphy/openai"
	"github.com/murphy-rl/murphy/topics"
)

// loader tells inference servers to load policy versions (VERSIONS.md,
// "Loading versions"), speaking each server's documented protocol:
//
//   - vllm (LoRA adapters, one name per version): GET /v1/models first and
//     load only what it does not list; POST /v1/load_lora_adapter, where
//     400 "... has already been loaded." is success (a second generate
//     process, a retry after a partial failure); POST
//     /v1/unload_lora_adapter for versions no tree can use any more (404
//     "... cannot be found." is success).
//   - sglang (full weights, one set under every name): POST
//     /pause_generation {"mode": "abort"}, POST /update_weights_from_disk
//     with the version as weight_version, POST /continue_generation, so
//     that no request straddles an update; the pool tags the server's
//     answers with the version loaded last (openai.Pool.SetTag).
//   - http: the configured call, once per version and server.
//
// It keeps what it loaded on each server; a server that lost it (a
// restart) is found by the pool ("model not found", a failed health
// check) and prepared again.
type loader struct {
	cfg    LoadConfig
	tmpl   *template.Template
	client *http.Client
	sleep  func(context.Context, time.Duration) error

	mu sync.Mutex
	// loaded: server base URL → models it has (vllm, http).
	loaded map[string]map[string]bool
	// weights: server base URL → the version its weights are (sglang).
	weights map[string]int64
	// busy serializes the calls to one server.
	busy map[string]*sync.Mutex
	// pool, when the servers are a pool's: a server whose full weights
	// are updated is held out of rotation, drained after the pause, and
	// tagged with the version loaded (sglang).
	pool *openai.Pool
}

// newLoader is the hook of cfg, nil when there is none.
func newLoader(cfg LoadConfig) (*loader, error) {
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
	return &loader{cfg: cfg, tmpl: t, client: &http.Client{Timeout: cfg.Timeout}, sleep: sleepCtx,
		loaded: map[string]map[string]bool{}, weights: map[string]int64{}, busy: map[string]*sync.Mutex{}}, nil
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

// serverBase is a server's base URL from its API root (…/v1).
func serverBase(root string) string {
	return strings.TrimSuffix(strings.TrimRight(root, "/"), "/v1")
}

func (l *loader) lock(base string) func() {
	l.mu.Lock()
	m := l.busy[base]
	if m == nil {
		m = &sync.Mutex{}
		l.busy[base] = m
	}
	l.mu.Unlock()
	m.Lock()
	return m.Unlock
}

// forget drops what l knows of server root (it restarted).
func (l *loader) forget(root string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	base := serverBase(root)
	delete(l.loaded, base)
	delete(l.weights, base)
}

// ensure makes server root serve every version of vs (sglang: the newest
// of them), those without a checkpoint excepted (the configured model).
func (l *loader) ensure(ctx context.Context, root string, vs []*topics.PolicyVersion) error {
	base := serverBase(root)
	defer l.lock(base)()
	var todo []*topics.PolicyVersion
	for _, v := range vs {
		if v != nil && v.CheckpointURI != "" {
			todo = append(todo, v)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	if l.cfg.Preset == LoadSGLang {
		newest := todo[0]
		for _, v := range todo {
			if v.Version > newest.Version {
				newest = v
			}
		}
		return l.updateWeights(ctx, root, newest)
	}
	listed := l.listed(ctx, base)
	for _, v := range todo {
		if listed[v.Model] {
			l.mark(base, v.Model, true)
			continue
		}
		if err := l.call(ctx, base, v); err != nil {
			return err
		}
		l.mark(base, v.Model, true)
	}
	return nil
}

func (l *loader) mark(base, model string, on bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.loaded[base] == nil {
		l.loaded[base] = map[string]bool{}
	}
	if on {
		l.loaded[base][model] = true
	} else {
		delete(l.loaded[base], model)
	}
}

// listed are the models server base lists (vllm preset; none when it
// cannot be asked: the loads then say).
func (l *loader) listed(ctx context.Context, base string) map[string]bool {
	out := map[string]bool{}
	if l.cfg.Preset != LoadVLLM {
		return out
	}
	status, body, err := l.do(ctx, http.MethodGet, base+"/v1/models", nil)
	if err != nil || status/100 != 2 {
		return out
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if json.Unmarshal(body, &list) == nil {
		for _, m := range list.Data {
			out[m.ID] = true
		}
	}
	return out
}

// prune unloads, on server root, the models l loaded there that are not
// in keep (vllm preset only: the others keep one set of weights or have
// no unload call).
func (l *loader) prune(ctx context.Context, root string, keep map[string]bool) error {
	if l.cfg.Preset != LoadVLLM {
		return nil
	}
	base := serverBase(root)
	defer l.lock(base)()
	l.mu.Lock()
	var drop []string
	for m := range l.loaded[base] {
		if !keep[m] {
			drop = append(drop, m)
		}
	}
	l.mu.Unlock()
	var errs []error
	for _, m := range drop {
		body, _ := json.Marshal(map[string]string{"lora_name": m})
		status, answer, err := l.do(ctx, http.MethodPost, base+"/v1/unload_lora_adapter", body)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("unload %s on %s: %w", m, base, err))
		case status/100 == 2, status == http.StatusNotFound: // vLLM: "... cannot be found."
			l.mark(base, m, false)
		default:
			errs = append(errs, fmt.Errorf("unload %s on %s: HTTP %d: %s", m, base, status, strings.TrimSpace(string(answer))))
		}
	}
	return errors.Join(errs...)
}

// updateWeights loads v's full weights on server root with generation
// paused (sglang): the server is held out of the pool's rotation, the
// requests in flight there are aborted (and sent again elsewhere or
// later) and drained, so that none straddles the update; the pool then
// tags its answers with v.
func (l *loader) updateWeights(ctx context.Context, root string, v *topics.PolicyVersion) error {
	base := serverBase(root)
	l.mu.Lock()
	cur, ok := l.weights[base]
	l.mu.Unlock()
	if ok && cur == v.Version {
		return nil
	}
	if l.pool != nil {
		defer l.pool.Hold(root)()
	}
	if status, answer, err := l.do(ctx, http.MethodPost, base+"/pause_generation", []byte(`{"mode": "abort"}`)); err != nil || status/100 != 2 {
		return &LoadError{Version: v.Version, Model: v.Model, URL: base + "/pause_generation", Attempts: 1, Status: status,
			Answer: strings.TrimSpace(string(answer)), Err: err}
	}
	var err error
	if l.pool != nil {
		err = l.pool.WaitIdle(ctx, root)
	}
	if err == nil {
		err = l.call(ctx, base, v)
	}
	if err == nil {
		l.mu.Lock()
		l.weights[base] = v.Version
		l.mu.Unlock()
		if l.pool != nil {
			l.pool.SetTag(root, v.Version)
		}
	}
	// Generation goes on whatever the update did (the old weights answer
	// after a failed one, and the version is not served).
	if status, answer, cerr := l.do(context.WithoutCancel(ctx), http.MethodPost, base+"/continue_generation", []byte(`{}`)); cerr != nil || status/100 != 2 {
		err = errors.Join(err, fmt.Errorf("continue_generation on %s: HTTP %d %s: %v", base, status, strings.TrimSpace(string(answer)), cerr))
	}
	return err
}

// call makes the preset's load call of v on server base, with retries.
func (l *loader) call(ctx context.Context, base string, v *topics.PolicyVersion) error {
	var body bytes.Buffer
	if err := l.tmpl.Execute(&body, v); err != nil {
		return fmt.Errorf("generate: load hook body for version %d: %w", v.Version, err)
	}
	method, path, _ := l.cfg.request()
	url := base + path
	le := &LoadError{Version: v.Version, Model: v.Model, URL: url}
	wait := l.cfg.Backoff
	for a := 1; a <= l.cfg.Attempts; a++ {
		le.Attempts = a
		status, answer, err := l.do(ctx, method, url, body.Bytes())
		le.Status, le.Answer, le.Err = status, strings.TrimSpace(string(answer)), err
		if err == nil && l.loadedBy(status, answer) {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		retry := err != nil || status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500
		if !retry || a == l.cfg.Attempts {
			break
		}
		if err := l.sleep(ctx, wait); err != nil {
			return err
		}
		wait *= 2
	}
	return le
}

// loadedBy says whether a load call's answer means the version is there:
// 2xx, and for vLLM a 400 saying it already was (vLLM 0.8
// serving_models.py: "The lora adapter '<name>' has already been
// loaded."); for SGLang a 2xx whose success field is not false.
func (l *loader) loadedBy(status int, answer []byte) bool {
	switch {
	case l.cfg.Preset == LoadVLLM && status == http.StatusBadRequest:
		return strings.Contains(strings.ToLower(string(answer)), "has already been loaded")
	case status/100 != 2:
		return false
	case l.cfg.Preset == LoadSGLang:
		var r struct {
			Success *bool `json:"success"`
		}
		return json.Unmarshal(answer, &r) != nil || r.Success == nil || *r.Success
	}
	return true
}

// do makes one HTTP call and returns the status and the answer (capped).
func (l *loader) do(ctx context.Context, method, url string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if l.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+l.cfg.APIKey)
	}
	resp, err := l.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, b, nil
}
