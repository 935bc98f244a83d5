package openai

import "time"

// Message is one chat message. An assistant message that called tools
// carries ToolCalls (its Content may be empty); a "tool" message answers the
// call named by ToolCallID.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// ToolCalls are the calls an assistant message made (see tools.go).
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID is the call a "tool" message answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
}

// Sampling holds the sampling parameters shared by chat and completions.
type Sampling struct {
	// Model names the served model (or adapter) of this request ("": the
	// client's configured Model): one pool serves every policy version.
	Model string
	// N is the number of samples wanted (0 counts as 1).
	N int
	// Temperature is always sent (0 = greedy).
	Temperature float64
	// TopP is sent when > 0.
	TopP float64
	// MaxTokens bounds the response length; sent when > 0. A choice cut
	// there has FinishReason "length".
	MaxTokens int
	// Stop sequences; sent when not empty.
	Stop []string
	// Seed is sent when not nil. When n is split over several requests, the
	// request whose first sample has index i gets Seed+i, so that split
	// requests do not repeat each other's samples.
	Seed *int64
	// Logprobs asks for the sampled tokens' logprobs.
	Logprobs bool
	// TopLogprobs is the number of alternatives per token (0 = none).
	TopLogprobs int
	// Extra fields merged into the request body (e.g. top_k, min_p,
	// logit_bias); they override the fields above.
	Extra map[string]any
}

// ChatRequest is a /chat/completions request.
type ChatRequest struct {
	Messages []Message
	// Tools are the functions the model may call; sent when not empty.
	Tools []Tool
	// ToolChoice is sent when not nil: auto, none, required, or one
	// function (see ToolChoice).
	ToolChoice *ToolChoice
	// ParallelToolCalls is sent when not nil (false asks for at most one
	// call per turn; not every server honours it).
	ParallelToolCalls *bool
	Sampling
}

// CompletionRequest is a /completions request.
type CompletionRequest struct {
	Prompt string
	Sampling
}

// Choice is one sample.
type Choice struct {
	// Index is the sample's position in the result (0..n-1).
	Index int
	Text  string
	// ToolCalls are the tool calls of a chat choice (nil when none).
	ToolCalls []ToolCall
	// FinishReason as the server reported it: "stop", "length",
	// "tool_calls", ...
	FinishReason string
	// TokenIDs of the response; nil when the server did not return them.
	TokenIDs []int32
	// Tokens are the token strings from the logprobs; nil without logprobs.
	Tokens []string
	// Logprobs of the sampled tokens; nil without logprobs. A null logprob
	// from the server reads as 0.
	Logprobs []float32
	// Server is the API root of the pool server that answered it ("" from
	// a Client alone), and Tag that server's tag then (Pool.SetTag; NoTag
	// when none).
	Server string
	Tag    int64
}

// Usage counts tokens over every request of a call.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
}

// Result is the outcome of one Chat or Complete call.
type Result struct {
	Model   string
	Choices []Choice
	// PromptTokenIDs of the (rendered) prompt; nil when the server did not
	// return them.
	PromptTokenIDs []int32
	Usage          Usage
	// Requests is the number of logical requests the call needed (more than
	// one when n was split); Attempts counts HTTP attempts, retries included.
	Requests int
	Attempts int
}

// Attempt describes one HTTP attempt, for metrics and logs.
type Attempt struct {
	// Endpoint is the path, e.g. "/chat/completions".
	Endpoint string
	// Status is the HTTP status (0 when no response arrived).
	Status   int
	Duration time.Duration
	// Err is nil on success.
	Err *Error
	// Wait is the pause before the next attempt when the request is
	// retried; 0 when it is not.
	Wait time.Duration
}
