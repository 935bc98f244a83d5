package openai

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

type wireUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// wireCompletion is a /completions response, with vLLM's token id fields.
type wireCompletion struct {
	Model   string `json:"model"`
	Choices []struct {
		Index        int     `json:"index"`
		Text         string  `json:"text"`
		FinishReason *string `json:"finish_reason"`
		Logprobs     *struct {
			Tokens        []string   `json:"tokens"`
			TokenLogprobs []*float64 `json:"token_logprobs"`
		} `json:"logprobs"`
		TokenIDs       []int64 `json:"token_ids"`
		PromptTokenIDs []int64 `json:"prompt_token_ids"`
	} `json:"choices"`
	PromptTokenIDs []int64    `json:"prompt_token_ids"`
	Usage          *wireUsage `json:"usage"`
}

// wireChat is a /chat/completions response, with vLLM's token id fields.
type wireChat struct {
	Model   string `json:"model"`
	Choices []struct {
		Index   int `json:"index"`
		Message struct {
			Content      *string        `json:"content"`
			ToolCalls    []wireToolCall `json:"tool_calls"`
			FunctionCall *wireFunction  `json:"function_call"`
		} `json:"message"`
		FinishReason *string `json:"finish_reason"`
		Logprobs     *struct {
			Content []struct {
				Token   string   `json:"token"`
				Logprob *float64 `json:"logprob"`
			} `json:"content"`
		} `json:"logprobs"`
		TokenIDs []int64 `json:"token_ids"`
	} `json:"choices"`
	PromptTokenIDs []int64    `json:"prompt_token_ids"`
	Usage          *wireUsage `json:"usage"`
}

func decodeCompletion(b []byte) (*Result, error) {
	var w wireCompletion
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("completions response: %w", err)
	}
	if len(w.Choices) == 0 {
		return nil, fmt.Errorf("completions response has no choices")
	}
	r := &Result{Model: w.Model, PromptTokenIDs: toInt32(w.PromptTokenIDs)}
	if w.Usage != nil {
		r.Usage = Usage{PromptTokens: w.Usage.PromptTokens, CompletionTokens: w.Usage.CompletionTokens}
	}
	for _, c := range w.Choices {
		ch := Choice{Index: c.Index, Text: c.Text, FinishReason: deref(c.FinishReason), TokenIDs: toInt32(c.TokenIDs)}
		if c.Logprobs != nil {
			ch.Tokens = c.Logprobs.Tokens
			ch.Logprobs = make([]float32, len(c.Logprobs.TokenLogprobs))
			for i, p := range c.Logprobs.TokenLogprobs {
				if p != nil {
					ch.Logprobs[i] = float32(*p)
				}
			}
		}
		if r.PromptTokenIDs == nil && c.PromptTokenIDs != nil {
			r.PromptTokenIDs = toInt32(c.PromptTokenIDs)
		}
		finishChoice(&ch)
		r.Choices = append(r.Choices, ch)
	}
	sortChoices(r.Choices)
	return r, nil
}

func decodeChat(b []byte) (*Result, error) {
	var w wireChat
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("chat response: %w", err)
	}
	if len(w.Choices) == 0 {
		return nil, fmt.Errorf("chat response has no choices")
	}
	r := &Result{Model: w.Model, PromptTokenIDs: toInt32(w.PromptTokenIDs)}
	if w.Usage != nil {
		r.Usage = Usage{PromptTokens: w.Usage.PromptTokens, CompletionTokens: w.Usage.CompletionTokens}
	}
	for _, c := range w.Choices {
		ch := Choice{Index: c.Index, Text: deref(c.Message.Content), FinishReason: deref(c.FinishReason), TokenIDs: toInt32(c.TokenIDs)}
		calls, err := decodeToolCalls(c.Message.ToolCalls, c.Message.FunctionCall)
		if err != nil {
			return nil, fmt.Errorf("chat response: choice %d: %w", c.Index, err)
		}
		ch.ToolCalls = calls
		if c.Logprobs != nil && c.Logprobs.Content != nil {
			ch.Tokens = make([]string, len(c.Logprobs.Content))
			ch.Logprobs = make([]float32, len(c.Logprobs.Content))
			for i, t := range c.Logprobs.Content {
				ch.Tokens[i] = t.Token
				if t.Logprob != nil {
					ch.Logprobs[i] = float32(*t.Logprob)
				}
			}
		}
		finishChoice(&ch)
		r.Choices = append(r.Choices, ch)
	}
	sortChoices(r.Choices)
	return r, nil
}

// finishChoice recovers token ids from logprob tokens spelled "token_id:N"
// (vLLM's return_tokens_as_token_ids) when the server sent no token_ids.
func finishChoice(ch *Choice) {
	if ch.TokenIDs != nil || len(ch.Tokens) == 0 {
		return
	}
	ids := make([]int32, len(ch.Tokens))
	for i, t := range ch.Tokens {
		s, ok := strings.CutPrefix(t, "token_id:")
		if !ok {
			return
		}
		v, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			return
		}
		ids[i] = int32(v)
	}
	ch.TokenIDs = ids
}

func sortChoices(cs []Choice) {
	// Servers answer in index order; keep a stable order when they do not.
	for i := 1; i < len(cs); i++ {
		for j := i; j > 0 && cs[j].Index < cs[j-1].Index; j-- {
			cs[j], cs[j-1] = cs[j-1], cs[j]
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func toInt32(v []int64) []int32 {
	if v == nil {
		return nil
	}
	out := make([]int32, len(v))
	for i, x := range v {
		out[i] = int32(x)
	}
	return out
}
