package openai

import (
	"context"
	"errors"
	"fmt"

	"encoding/json"
)

// Chat templates: a conversation's tokens as the served model's own chat
// template renders them, from the server (never a client-side rendering),
// so that an agent episode's token ids are the context the policy sampled
// under.
const (
	// ChatTemplateVLLM: vLLM's POST /tokenize with messages (its chat
	// tokenize request: add_generation_prompt, add_special_tokens false,
	// tools), at the server root.
	ChatTemplateVLLM = "vllm"
	// ChatTemplateLlamaCpp: llama.cpp's server: POST /apply-template (the
	// chat request's messages and tools rendered with the server's
	// template; start it with --jinja) for the prompt, then POST /tokenize
	// of it with special tokens parsed and added, as the server tokenizes a
	// prompt. A conversation ending in an assistant message with tool calls
	// renders only with --no-prefill-assistant.
	ChatTemplateLlamaCpp = "llama.cpp"
)

// ChatTemplates lists the kinds TokenizeChat knows.
func ChatTemplates() []string { return []string{ChatTemplateVLLM, ChatTemplateLlamaCpp} }

// TokenizeChat returns the server's tokens of msgs rendered with the served
// model's chat template (kind: ChatTemplateVLLM or ChatTemplateLlamaCpp),
// with the assistant's generation prompt after them when
// addGenerationPrompt; without it a final assistant message is rendered
// closed, as the next turn's context holds it.
func (c *Client) TokenizeChat(ctx context.Context, kind string, msgs []Message, tools []Tool, addGenerationPrompt bool) ([]int32, error) {
	root := *c.base
	root.Path = ""
	switch kind {
	case ChatTemplateVLLM:
		body := map[string]any{"model": c.cfg.Model, "messages": msgs, "add_generation_prompt": addGenerationPrompt,
			"add_special_tokens": false}
		if len(tools) > 0 {
			body["tools"] = tools
		}
		return c.postTokens(ctx, root.String()+"/tokenize", "/tokenize", body)
	case ChatTemplateLlamaCpp:
		body := map[string]any{"messages": msgs, "add_generation_prompt": addGenerationPrompt}
		if len(tools) > 0 {
			body["tools"] = tools
		}
		payload, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		var prompt *string
		if _, err := c.do(ctx, root.String()+"/apply-template", "/apply-template", payload, func(b []byte) error {
			var v struct {
				Prompt *string `json:"prompt"`
			}
			if err := json.Unmarshal(b, &v); err != nil {
				return err
			}
			if v.Prompt == nil {
				return errors.New("no prompt in apply-template response")
			}
			prompt = v.Prompt
			return nil
		}); err != nil {
			return nil, err
		}
		return c.postTokens(ctx, root.String()+"/tokenize", "/tokenize",
			map[string]any{"content": *prompt, "add_special": true, "parse_special": true})
	}
	return nil, &Error{Kind: KindBadRequest, Message: fmt.Sprintf("chat template %q: want one of %v", kind, ChatTemplates())}
}

// postTokens posts body and reads a {"tokens": [...]} answer.
func (c *Client) postTokens(ctx context.Context, target, endpoint string, body map[string]any) ([]int32, error) {
	payload, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	var ids []int32
	_, err = c.do(ctx, target, endpoint, payload, func(b []byte) error {
		var v struct {
			Tokens []int64 `json:"tokens"`
		}
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		if v.Tokens == nil {
			return errors.New("no tokens in tokenize response")
		}
		ids = toInt32(v.Tokens)
		return nil
	})
	return ids, err
}
