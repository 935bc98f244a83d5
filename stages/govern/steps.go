package govern

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"

	"github.com/murphy-rl/murphy/topics"
)

// Span is a half-open range [Start, End) of response tokens.
type Span struct{ Start, End int }

// StepSpans splits a response into its steps. Candidate.StepEnds are the
// exclusive token ends of the steps; tokens after the last end form one more
// step. A response without StepEnds is a single step covering the whole
// response (also when it has no tokens at all: one empty step).
func StepSpans(c *topics.Candidate) []Span {
	n := len(c.ResponseTokenIDs)
	spans := make([]Span, 0, len(c.StepEnds)+1)
	prev := 0
	for _, e := range c.StepEnds {
		if e <= prev || e > n { // Validate rejects these; stay total anyway
			continue
		}
		spans = append(spans, Span{prev, e})
		prev = e
	}
	if prev < n || len(spans) == 0 {
		spans = append(spans, Span{prev, n})
	}
	return spans
}

// Step is one step of a response as the scorers see it.
type Step struct {
	Span
	// Text is the step's part of the response text when the text could be
	// aligned with the steps (see alignSteps), else "".
	Text string
	// Action is the tool call the step made, when one was recognised.
	Action *Action
}

// Action is a tool call found in a response.
type Action struct {
	Tool string
	// Role is what the tool does (topics.ToolRole*), from the episode's
	// recorded step; "" when the response is plain text (the tool names of
	// HeuristicConfig decide then).
	Role string
	// Failed: the tool answered that the call was a misuse ("error: ...",
	// e.g. an edit whose old text is not in the file): it changed nothing.
	Failed bool
	Args   map[string]any
	// Canonical is the tool and arguments serialised with sorted keys: two
	// actions are the same when their Canonical strings are equal.
	Canonical string
}

// Tool calls are recognised in two common shapes: the Hermes/Qwen
// `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` tags, and, when
// no tag is present, fenced ```json blocks holding such an object (keys name
// or tool, and arguments, args, parameters or input).
var (
	toolCallTag = regexp.MustCompile(`(?s)<tool_call>\s*(.*?)\s*</tool_call>`)
	jsonFence   = regexp.MustCompile("(?s)```(?:json)?[ \t]*\n(\\{.*?\\})\\s*\n```")
	// toolResponses are the tool outputs of a response in the Hermes/Qwen
	// rendering (episode.RenderToolOutput): tags inside an output are
	// escaped, so the shortest match is the whole output.
	toolResponses = regexp.MustCompile(`(?s)\n?<tool_response>\n.*?</tool_response>\n?`)
	toolResponse  = regexp.MustCompile(`(?s)^\s*<tool_response>\n.*?</tool_response>\n?`)
)

// parseAction parses one tool-call JSON object.
func parseAction(raw string) (*Action, bool) {
	var obj map[string]any
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&obj); err != nil {
		return nil, false
	}
	tool := firstString(obj, "name", "tool", "function")
	if fn, ok := obj["function"].(map[string]any); ok && tool == "" {
		tool = firstString(fn, "name")
		obj = fn
	}
	if tool == "" {
		return nil, false
	}
	var args map[string]any
	for _, k := range []string{"arguments", "args", "parameters", "input"} {
		switch v := obj[k].(type) {
		case map[string]any:
			args = v
		case string: // OpenAI serialises arguments as a JSON string
			var m map[string]any
			d := json.NewDecoder(strings.NewReader(v))
			d.UseNumber()
			if d.Decode(&m) == nil {
				args = m
			}
		}
		if args != nil {
			break
		}
	}
	if args == nil {
		args = map[string]any{}
	}
	canon, _ := json.Marshal(map[string]any{"tool": tool, "args": args}) // map keys are sorted
	return &Action{Tool: tool, Args: args, Canonical: string(canon)}, true
}

func firstString(m map[string]any, keys ...string) string {
	for _, k := range keys {
		if s, ok := m[k].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

// actionMatch is a recognised tool call and where it ends in the text.
type actionMatch struct {
	action *Action
	end    int
}

func findActions(text string) []actionMatch {
	var out []actionMatch
	for _, re := range []*regexp.Regexp{toolCallTag, jsonFence} {
		for _, m := range re.FindAllStringSubmatchIndex(text, -1) {
			if a, ok := parseAction(text[m[2]:m[3]]); ok {
				out = append(out, actionMatch{a, m[1]})
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	return out
}

// alignSteps attaches text and actions to the step spans. The response text
// is cut after each recognised tool call and the tool's response that
// follows it: when there is one call per step, or one per step but the last
// (a final answer without a call), segment i is the text of step i, its
// action and its own output. A single-step response gets the whole text.
// Otherwise the steps keep their spans only and scorers fall back to tokens.
// An agent episode's recorded steps give each action its tool's role and
// whether the tool refused the call.
func alignSteps(c *topics.Candidate) (steps []Step, aligned bool) {
	steps, aligned = cutSteps(c)
	if len(c.ToolSteps) > 0 && len(c.ToolSteps) <= len(steps) {
		for i, ts := range c.ToolSteps {
			if a := steps[i].Action; a != nil && a.Tool == ts.Tool {
				a.Role = ts.Role
				a.Failed = strings.HasPrefix(ts.Output, "error: ")
			}
		}
	}
	return steps, aligned
}

func cutSteps(c *topics.Candidate) (steps []Step, aligned bool) {
	spans := StepSpans(c)
	steps = make([]Step, len(spans))
	for i, s := range spans {
		steps[i].Span = s
	}
	acts := findActions(c.ResponseText)
	switch {
	case len(spans) == 1:
		steps[0].Text = c.ResponseText
		if len(acts) == 1 {
			steps[0].Action = acts[0].action
		}
		return steps, true
	case len(acts) == len(spans) || len(acts) == len(spans)-1:
		prev := 0
		for i := range steps {
			end := len(c.ResponseText)
			if i < len(acts) {
				end = acts[i].end
				if m := toolResponse.FindStringIndex(c.ResponseText[end:]); m != nil {
					end += m[1] // the step's own output
				}
				steps[i].Action = acts[i].action
			}
			if i == len(steps)-1 {
				end = len(c.ResponseText)
			}
			steps[i].Text = c.ResponseText[prev:end]
			prev = end
		}
		return steps, true
	}
	return steps, false
}

// sameTokens reports whether two steps have identical token sequences.
func sameTokens(c *topics.Candidate, a, b Span) bool {
	if a.End-a.Start != b.End-b.Start || a.End == a.Start {
		return false
	}
	x, y := c.ResponseTokenIDs[a.Start:a.End], c.ResponseTokenIDs[b.Start:b.End]
	for i := range x {
		if x[i] != y[i] {
			return false
		}
	}
	return true
}

// normalizeSpace collapses runs of white space, for comparing edits.
func normalizeSpace(s string) string {
	return string(bytes.Join(bytes.Fields([]byte(s)), []byte{' '}))
}
