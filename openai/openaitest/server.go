// Package openaitest runs a real OpenAI-compatible inference server for
// tests: llama.cpp's server from the llama-cpp-python package, on the CPU,
// serving a tiny random-weight llama model generated for the test (its text
// is gibberish; what is tested is the protocol). A FaultProxy in front of it
// injects HTTP 500s, 429s with Retry-After, connection resets, stalls and
// outages.
//
// Install the Python side with openai/install-test-deps.sh. When the server
// cannot be started the test is skipped, unless the environment variable CI
// is "true": there it fails.
package openaitest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// Server is a running llama.cpp server.
type Server struct {
	// BaseURL is the OpenAI API root, e.g. http://127.0.0.1:PORT/v1.
	BaseURL string
	// Model is the model name to send.
	Model string
	// TokenizePath is llama-cpp-python's tokenize endpoint.
	TokenizePath string
	// ContextSize is the server's context window in tokens.
	ContextSize int
}

// ContextSize of the served model.
const ContextSize = 256

func python() string {
	if p := os.Getenv("PYTHON"); p != "" {
		return p
	}
	return "python3"
}

func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatalf("real inference server required in CI: %s (run openai/install-test-deps.sh)", msg)
	}
	t.Skipf("real inference server unavailable: %s (run openai/install-test-deps.sh)", msg)
}

// testdataDir locates openai/testdata from this source file, so that tests of
// any package can start the server.
func testdataDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testdata")
}

// StartLlama generates the tiny model and starts llama-cpp-python's server on
// a free loopback port; it is stopped when the test ends.
func StartLlama(t testing.TB) *Server {
	t.Helper()
	py := python()
	if out, err := exec.Command(py, "-c", "import gguf, llama_cpp.server").CombinedOutput(); err != nil {
		unavailable(t, "python packages missing: %v: %s", err, lastLine(out))
	}
	dir := t.TempDir()
	model := filepath.Join(dir, "tiny.gguf")
	if out, err := exec.Command(py, filepath.Join(testdataDir(), "make_tiny_gguf.py"), model, "1").CombinedOutput(); err != nil {
		t.Fatalf("generate model: %v\n%s", err, out)
	}
	port, err := freePort()
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	logPath := filepath.Join(dir, "server.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "-m", "llama_cpp.server",
		"--model", model, "--model_alias", "tiny",
		"--host", "127.0.0.1", "--port", fmt.Sprint(port),
		"--n_ctx", fmt.Sprint(ContextSize), "--n_threads", "1", "--n_threads_batch", "1",
		"--logits_all", "true", "--chat_format", "chatml", "--verbose", "false")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		unavailable(t, "start server: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		// The server is being stopped: its exit status says nothing.
		select {
		case <-done: //nolint:errcheck
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done //nolint:errcheck
		}
		logf.Close()
	})
	s := &Server{
		BaseURL:      fmt.Sprintf("http://127.0.0.1:%d/v1", port),
		Model:        "tiny",
		TokenizePath: "/extras/tokenize",
		ContextSize:  ContextSize,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.BaseURL+"/models", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		select {
		case err := <-done:
			log, _ := os.ReadFile(logPath)
			unavailable(t, "server exited: %v\n%s", err, tail(log, 2000))
		case <-ctx.Done():
			log, _ := os.ReadFile(logPath)
			t.Fatalf("server not ready within 90s\n%s", tail(log, 2000))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		return 0, errors.New("not a TCP address")
	}
	return addr.Port, nil
}

func lastLine(b []byte) string {
	b = bytes.TrimSpace(b)
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		return string(b[i+1:])
	}
	return string(b)
}

func tail(b []byte, n int) string {
	if len(b) > n {
		return string(b[len(b)-n:])
	}
	return string(b)
}
