package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
)

// Tool calling on /chat/completions, as the OpenAI API, vLLM, SGLang and
// llama.cpp serve it: the request lists function tools (name, description,
// JSON-schema parameters) and may constrain the choice (tool_choice); a
// choice's message carries tool_calls (id, function name, arguments as a
// JSON string) and finish_reason "tool_calls"; the conversation continues
// with the assistant message carrying its tool_calls and one "tool" message
// per call, naming the call by tool_call_id.

// Tool is a function the model may call.
type Tool struct {
	// Name is the function's name: 1 to 64 of a-z, A-Z, 0-9, _ and -.
	Name string
	// Description tells the model what the function does.
	Description string
	// Parameters is the JSON schema of the arguments object; nil sends an
	// object schema without properties.
	Parameters json.RawMessage
}

// emptyParameters is the schema sent for a tool without parameters.
var emptyParameters = json.RawMessage(`{"type":"object","properties":{}}`)

type wireFunctionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

type wireTool struct {
	Type     string          `json:"type"`
	Function wireFunctionDef `json:"function"`
}

// MarshalJSON writes the wire form {"type":"function","function":{...}}.
func (t Tool) MarshalJSON() ([]byte, error) {
	p := t.Parameters
	if len(p) == 0 {
		p = emptyParameters
	}
	return json.Marshal(wireTool{Type: "function", Function: wireFunctionDef{Name: t.Name, Description: t.Description, Parameters: p}})
}

// UnmarshalJSON reads the wire form.
func (t *Tool) UnmarshalJSON(b []byte) error {
	var w wireTool
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*t = Tool{Name: w.Function.Name, Description: w.Function.Description, Parameters: w.Function.Parameters}
	return nil
}

// ToolCall is one call a model made.
type ToolCall struct {
	// ID names the call; the "tool" message answering it carries it as
	// ToolCallID. A server that sent no id gets "call_<i>" (i: the call's
	// position in its message).
	ID string
	// Name is the function called.
	Name string
	// Arguments is the JSON text of the arguments object as the model
	// wrote it (not necessarily valid JSON).
	Arguments string
}

type wireFunction struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

type wireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

// MarshalJSON writes the wire form, arguments as a JSON string.
func (c ToolCall) MarshalJSON() ([]byte, error) {
	args, err := json.Marshal(c.Arguments)
	if err != nil {
		return nil, err
	}
	return json.Marshal(wireToolCall{ID: c.ID, Type: "function", Function: wireFunction{Name: c.Name, Arguments: args}})
}

// UnmarshalJSON reads the wire form (arguments as a string or an object).
func (c *ToolCall) UnmarshalJSON(b []byte) error {
	var w wireToolCall
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	args, err := argumentsText(w.Function.Arguments)
	if err != nil {
		return err
	}
	*c = ToolCall{ID: w.ID, Name: w.Function.Name, Arguments: args}
	return nil
}

// argumentsText reads a call's arguments: the OpenAI API sends a JSON
// string holding the object's text; some servers send the object itself.
func argumentsText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return "", nil
	case raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("tool call arguments: %w", err)
		}
		return s, nil
	default:
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			return "", fmt.Errorf("tool call arguments: %w", err)
		}
		return buf.String(), nil
	}
}

// decodeToolCalls converts a response message's tool_calls (or, without
// them, its legacy function_call) into ToolCalls.
func decodeToolCalls(calls []wireToolCall, legacy *wireFunction) ([]ToolCall, error) {
	if len(calls) == 0 && legacy != nil && legacy.Name != "" {
		calls = []wireToolCall{{Type: "function", Function: *legacy}}
	}
	var out []ToolCall
	for i, w := range calls {
		if w.Type != "" && w.Type != "function" {
			continue // not a function call: nothing this client runs
		}
		args, err := argumentsText(w.Function.Arguments)
		if err != nil {
			return nil, fmt.Errorf("tool call %d: %w", i, err)
		}
		id := w.ID
		if id == "" {
			id = fmt.Sprintf("call_%d", i)
		}
		out = append(out, ToolCall{ID: id, Name: w.Function.Name, Arguments: args})
	}
	return out, nil
}

// ToolChoice constrains which tool the model calls: Function forces that
// function; otherwise Mode is "auto" (the model decides), "none" (no call)
// or "required" (some call).
type ToolChoice struct {
	Mode     string
	Function string
}

// Tool choices.
var (
	ToolChoiceAuto     = &ToolChoice{Mode: "auto"}
	ToolChoiceNone     = &ToolChoice{Mode: "none"}
	ToolChoiceRequired = &ToolChoice{Mode: "required"}
)

// ForceTool is the choice that makes the model call the named function.
func ForceTool(name string) *ToolChoice { return &ToolChoice{Function: name} }

// MarshalJSON writes "auto" | "none" | "required" or
// {"type":"function","function":{"name":...}}.
func (c ToolChoice) MarshalJSON() ([]byte, error) {
	if c.Function != "" {
		return json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": c.Function}})
	}
	return json.Marshal(c.Mode)
}

var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// validateTools checks a chat request's tools before anything is sent.
func validateTools(req ChatRequest) error {
	seen := make(map[string]bool, len(req.Tools))
	for i, t := range req.Tools {
		if !toolName.MatchString(t.Name) {
			return &Error{Kind: KindBadRequest, Message: fmt.Sprintf("tool %d: name %q is not 1-64 of [a-zA-Z0-9_-]", i, t.Name)}
		}
		if seen[t.Name] {
			return &Error{Kind: KindBadRequest, Message: fmt.Sprintf("tool %q listed twice", t.Name)}
		}
		seen[t.Name] = true
		if len(t.Parameters) > 0 && !json.Valid(t.Parameters) {
			return &Error{Kind: KindBadRequest, Message: fmt.Sprintf("tool %q: parameters are not valid JSON", t.Name)}
		}
	}
	if c := req.ToolChoice; c != nil {
		switch {
		case c.Function != "":
			if !seen[c.Function] {
				return &Error{Kind: KindBadRequest, Message: fmt.Sprintf("tool_choice names %q, which is not a tool of the request", c.Function)}
			}
		case c.Mode == "auto" || c.Mode == "none" || c.Mode == "required":
		default:
			return &Error{Kind: KindBadRequest, Message: fmt.Sprintf("tool_choice mode %q is not auto, none or required", c.Mode)}
		}
	}
	return nil
}

// fillTools adds a chat request's tool fields to the request body.
func fillTools(body map[string]any, req ChatRequest) {
	if len(req.Tools) > 0 {
		body["tools"] = req.Tools
	}
	if req.ToolChoice != nil {
		body["tool_choice"] = *req.ToolChoice
	}
	if req.ParallelToolCalls != nil {
		body["parallel_tool_calls"] = *req.ParallelToolCalls
	}
}
