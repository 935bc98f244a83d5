// Package policy is what the generate stage samples programs from: a Policy
// turns a prompt into a group of responses.
//
// Two policies exist: OpenAI, backed by an OpenAI-compatible inference
// server (package openai), and Simulated, which is NOT a model: a
// deterministic stand-in for demos and tests that samples a task's reference
// solution, plausible mutants of it, or broken code. The package also holds
// the simple tokenizer the simulated policy uses (Tokenize) and the code
// extraction applied to every response (ExtractCode).
package policy

import (
	"context"
	"errors"

	"github.com/murphy-rl/murphy/topics"
)

// Request asks a policy for one group of samples.
type Request struct {
	// Prompt is the prompt being answered (root or refinement).
	Prompt *topics.Prompt
	// Task is the prompt's task; it is set when the policy NeedsTask.
	Task *topics.Task
	// NodeIDs are the ids of the children to sample, in index order: one
	// sample per id. Policies that randomise derive the randomness of a
	// sample from its node id, so results do not depend on which process
	// or in which order the samples are drawn.
	NodeIDs []string
}

// Sample is one response.
type Sample struct {
	// Text is the raw response.
	Text string
	// Code is the program extracted from Text (see ExtractCode).
	Code string
	// PromptTokenIDs are the prompt's token ids as the policy saw them.
	PromptTokenIDs []int32
	// TokenIDs and Logprobs of the response; Logprobs is empty or as long
	// as TokenIDs.
	TokenIDs []int32
	Logprobs []float32
	// FinishReason is "stop", "length", ...
	FinishReason string
	// ServerTag is the tag of the server that answered (openai.Pool.SetTag:
	// the version of its full weights), openai.NoTag when none.
	ServerTag int64
}

// Policy samples groups of responses.
type Policy interface {
	// Name labels candidates (e.g. "simulated", "openai:qwen2.5-coder").
	Name() string
	// Version is the policy version recorded on every candidate, for
	// off-policy and staleness control by trainers.
	Version() int64
	// NeedsTask says whether Generate needs Request.Task.
	NeedsTask() bool
	// Generate returns one sample per Request.NodeIDs entry, in order. On
	// error it returns the samples it has for the first indices (possibly
	// none); the caller marks the rest as infrastructure failures. Errors
	// wrapping ErrContextOverflow mean the prompt does not fit the model.
	Generate(ctx context.Context, req Request) ([]Sample, error)
}

// ErrContextOverflow marks a prompt that does not fit the model's context
// window; retrying it cannot succeed.
var ErrContextOverflow = errors.New("policy: prompt exceeds the context window")

// ErrNoTask is returned by a policy that needs the task when Request.Task is nil.
var ErrNoTask = errors.New("policy: the task is required")
