package openai

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrorKind classifies a failed request.
type ErrorKind string

const (
	// KindRateLimited: HTTP 429. Retriable; Retry-After is honoured.
	KindRateLimited ErrorKind = "rate_limited"
	// KindServer: HTTP 5xx. Retriable.
	KindServer ErrorKind = "server"
	// KindConnection: the connection failed or was reset. Retriable.
	KindConnection ErrorKind = "connection"
	// KindTimeout: one attempt ran past Config.Timeout. Retriable.
	KindTimeout ErrorKind = "timeout"
	// KindContextOverflow: the prompt plus max_tokens exceed the model's
	// context window. Not retriable.
	KindContextOverflow ErrorKind = "context_overflow"
	// KindBadRequest: any other 4xx. Not retriable.
	KindBadRequest ErrorKind = "bad_request"
	// KindAuth: 401 or 403. Not retriable.
	KindAuth ErrorKind = "auth"
	// KindDecode: the server answered 2xx with a body this client cannot
	// read, or with no choices. Retriable: a proxy or an overloaded server
	// can truncate a body.
	KindDecode ErrorKind = "decode"
	// KindModelNotFound: HTTP 404 naming the model (vLLM: "The model `x`
	// does not exist."): the server does not serve the requested model
	// (an adapter not loaded, or lost in a restart). Not retriable on that
	// server; a Pool fails over and prepares the server again.
	KindModelNotFound ErrorKind = "model_not_found"
)

// Error is a failed request after its last attempt.
type Error struct {
	Kind ErrorKind
	// StatusCode is the HTTP status of the last attempt (0 without one).
	StatusCode int
	// Message is the server's error message, when it sent one.
	Message string
	// Attempts is the number of HTTP attempts made.
	Attempts int
	// RetryAfter is the server's Retry-After of the last attempt (0 if none).
	RetryAfter time.Duration
	Err        error
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "openai: %s", e.Kind)
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.StatusCode)
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " after %d attempts", e.Attempts)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Retriable reports whether another attempt of the same request may succeed.
func (e *Error) Retriable() bool {
	switch e.Kind {
	case KindRateLimited, KindServer, KindConnection, KindTimeout, KindDecode:
		return true
	}
	return false
}

// IsContextOverflow reports whether err is a context-window overflow.
func IsContextOverflow(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Kind == KindContextOverflow
}

// overflowMarkers are lower-case fragments of the context-overflow messages
// of the servers this client targets: OpenAI ("context_length_exceeded",
// "maximum context length"), vLLM ("maximum context length", "is longer than
// the maximum model length"), llama.cpp and llama-cpp-python ("exceed context
// window", "exceeds the available context size"), TGI ("must have less than"
// ... "input tokens").
var overflowMarkers = []string{
	"context_length_exceeded",
	"maximum context length",
	"maximum model length",
	"context window",
	"context size",
	"context length",
	"input tokens",
}

// looksLikeModelNotFound: a 404 whose message names a model that does
// not exist or was not found (vLLM "The model `x` does not exist.",
// OpenAI "The model `x` does not exist or you do not have access to it.",
// Ollama "model \"x\" not found").
func looksLikeModelNotFound(msg string) bool {
	m := strings.ToLower(msg)
	return strings.Contains(m, "model") && (strings.Contains(m, "does not exist") || strings.Contains(m, "not found"))
}

func looksLikeOverflow(msg string) bool {
	m := strings.ToLower(msg)
	for _, k := range overflowMarkers {
		if strings.Contains(m, k) {
			return true
		}
	}
	return false
}
