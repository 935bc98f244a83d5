// Package episode runs multi-step agent episodes for compile-fix tasks: a
// model reads, searches, edits and builds a private copy of the task's
// workspace through tools, then submits its edits. The whole episode is one
// response of the tree (one node): the model's actions interleaved with the
// tools' answers, with the token span of every step, so that govern can
// mask tool-output tokens from the loss and score the actions. The
// submitted edits become the candidate's code as a unified diff, which
// execute verifies from scratch; nothing an episode observed (its build
// tool included) decides the verdict.
//
// Run is the loop; Tools are the tools over the workspace (a read-only
// snapshot directory and an in-memory overlay of edits); an Agent is the
// model. OpenAIAgent is backed by an OpenAI-compatible server with tool
// calling; SimulatedAgent is NOT a model, a deterministic stand-in for
// tests and demos.
package episode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/murphy-rl/murphy/openai"
	"github.com/murphy-rl/murphy/stages/generate/policy"
	"github.com/murphy-rl/murphy/topics"
)

// How an episode ended (topics.Candidate.EpisodeEnd).
const (
	// EndSubmitted: the model called submit.
	EndSubmitted = "submitted"
	// EndStepBudget: the model used Config.MaxSteps steps without submitting.
	EndStepBudget = "step_budget"
	// EndNoToolCall: the model answered without calling a tool.
	EndNoToolCall = "no_tool_call"
	// EndContext: the token budget (Config.MaxTokens) or the model's
	// context window ran out.
	EndContext = "context"
	// EndError: an infrastructure failure (the server, the build, the
	// context) ended the episode; Run returns the error.
	EndError = "error"
)

// Message is one message of an episode's conversation.
type Message = openai.Message

// ToolCall is one tool call of an assistant turn.
type ToolCall = openai.ToolCall

// Turn is one assistant turn.
type Turn struct {
	// Text is the turn's text content ("" when it only called tools).
	Text string
	// Calls are the turn's tool calls; the episode runs the first one.
	Calls []ToolCall
	// TokenIDs are the model's tokens for the turn; empty when the server
	// returned none (Run then tokenizes the rendered action and drops the
	// episode's logprobs).
	TokenIDs []int32
	// Logprobs of TokenIDs; nil, or one per token.
	Logprobs []float32
	// FinishReason as the server reported it: "stop", "length",
	// "tool_calls", ...
	FinishReason string
	// PromptTokenIDs are the request's prompt tokens when the server
	// returned them.
	PromptTokenIDs []int32
}

// Agent is the model of an episode.
type Agent interface {
	// Name labels the candidates (topics.Candidate.Policy).
	Name() string
	// Next returns the next assistant turn of the conversation. maxTokens
	// bounds the turn's tokens (0 = no bound); a turn cut there has
	// FinishReason "length". Errors for which openai.IsContextOverflow or
	// errors.Is(err, policy.ErrContextOverflow) hold end the episode with
	// EndContext; any other error with EndError.
	Next(ctx context.Context, conv []Message, maxTokens int) (*Turn, error)
	// Tokenize returns the model's tokens of text (tool outputs, and
	// actions whose tokens the server did not return).
	Tokenize(ctx context.Context, text string) ([]int32, error)
}

// Config configures one episode.
type Config struct {
	// System is the system message ("" = none); DefaultSystemPrompt is a
	// reasonable one.
	System string
	// Prompt is the user message: the task's prompt text (with the
	// feedback of a refinement).
	Prompt string
	// MaxSteps bounds the model's turns (0 = 16).
	MaxSteps int
	// MaxTokens bounds the episode's response tokens, the model's and the
	// tools' together (0 = no bound).
	MaxTokens int
	// MaxTurnTokens bounds one model turn (0 = what is left of MaxTokens).
	MaxTurnTokens int
	// MaxToolOutputBytes caps every tool answer again, over the tools' own
	// cap (0 = the tools' cap only).
	MaxToolOutputBytes int
}

// DefaultMaxSteps is the step budget when Config.MaxSteps is 0.
const DefaultMaxSteps = 16

// DefaultSystemPrompt tells the model what an episode is.
const DefaultSystemPrompt = "You are fixing a build failure in a software project. " +
	"Use the tools to list, read and search the project's files, edit them and run the build. " +
	"Make one tool call per turn. When the build passes, call submit; only submitted edits count."

// Result is an episode as one response.
type Result struct {
	// PromptTokenIDs are the first request's prompt tokens as the agent
	// reported them (nil when unknown).
	PromptTokenIDs []int32
	// ResponseText is the episode rendered as text: each step's assistant
	// text and tool call (RenderAction), then the tool's answer
	// (RenderToolOutput); a final turn without a call is its text.
	ResponseText string
	// ResponseTokenIDs are the model's tokens and the tool outputs' tokens,
	// in order.
	ResponseTokenIDs []int32
	// ResponseLogprobs has one logprob per response token, 0 for tool
	// output tokens; nil when some model turn came without logprobs.
	ResponseLogprobs []float32
	// Steps are the tool steps, one per model turn that called a tool.
	Steps []topics.ToolStep
	// StepEnds are the Steps' End offsets (topics.Candidate.StepEnds);
	// tokens of a final turn without a call come after the last end.
	StepEnds []int
	// EpisodeEnd says how the episode ended (End* constants).
	EpisodeEnd string
	// Code is the diff of the edits against the snapshot ("" when nothing
	// changed), however the episode ended.
	Code string
	// FinishReason is the last model turn's finish reason; "length" when
	// the token budget ended the episode.
	FinishReason string
	// Conversation is the whole conversation, as the agent saw it, with
	// the last turn.
	Conversation []Message
	// Builds counts the build tool's runs.
	Builds int
	// Error says why an EndError episode failed.
	Error string
	// ContextMismatches counts the tool outputs, with a chat template,
	// whose next context did not hold the action as sampled: their tokens
	// are the rendered output's (see Run).
	ContextMismatches int
}

// ApplyTo fills the episode's fields of a candidate: response text,
// tokens, logprobs, steps, episode end, code, finish reason, and the prompt
// tokens when the candidate has none.
func (r *Result) ApplyTo(c *topics.Candidate) {
	c.ResponseText = r.ResponseText
	c.ResponseTokenIDs = r.ResponseTokenIDs
	c.ResponseLogprobs = r.ResponseLogprobs
	c.StepEnds = r.StepEnds
	c.ToolSteps = r.Steps
	c.EpisodeEnd = r.EpisodeEnd
	c.Code = r.Code
	c.FinishReason = r.FinishReason
	if len(c.PromptTokenIDs) == 0 {
		c.PromptTokenIDs = r.PromptTokenIDs
	}
}

// Check verifies the result's token accounting: steps in order and inside
// the tokens, StepEnds equal to the steps' ends and strictly increasing,
// logprobs absent or one per token.
func (r *Result) Check() error {
	n := len(r.ResponseTokenIDs)
	if r.ResponseLogprobs != nil && len(r.ResponseLogprobs) != n {
		return fmt.Errorf("episode: %d logprobs for %d tokens", len(r.ResponseLogprobs), n)
	}
	if len(r.StepEnds) != len(r.Steps) {
		return fmt.Errorf("episode: %d step ends for %d steps", len(r.StepEnds), len(r.Steps))
	}
	prev := 0
	for i, s := range r.Steps {
		if s.ActionStart != prev || s.ActionEnd <= s.ActionStart || s.End < s.ActionEnd || s.End > n || r.StepEnds[i] != s.End {
			return fmt.Errorf("episode: step %d spans [%d,%d,%d), end %d, after %d of %d tokens",
				i, s.ActionStart, s.ActionEnd, s.End, r.StepEnds[i], prev, n)
		}
		prev = s.End
	}
	return nil
}

// Tag names of the rendering.
const (
	tagCall      = "<tool_call>"
	tagCallEnd   = "</tool_call>"
	tagResult    = "<tool_response>"
	tagResultEnd = "</tool_response>"
)

// RenderAction renders an assistant turn's text and tool call as the
// response text shows it: the text, a newline, then
// <tool_call>{"name":...,"arguments":{...}}</tool_call>. Arguments that are
// a JSON object are embedded as is (compacted, '<' escaped as \u003c so
// that no tag can appear inside); others as a JSON string.
func RenderAction(text string, call ToolCall) string {
	name, _ := json.Marshal(call.Name)
	var b strings.Builder
	if text != "" {
		b.WriteString(text)
		if !strings.HasSuffix(text, "\n") {
			b.WriteByte('\n')
		}
	}
	b.WriteString(tagCall)
	b.WriteString(`{"name":`)
	b.Write(name)
	b.WriteString(`,"arguments":`)
	b.WriteString(argumentsJSON(call.Arguments))
	b.WriteString("}")
	b.WriteString(tagCallEnd)
	return b.String()
}

// argumentsJSON is a call's arguments as a compact JSON object, or as a JSON
// string when they are not an object; '<' is escaped.
func argumentsJSON(args string) string {
	var s string
	if a := strings.TrimSpace(args); a == "" {
		s = "{}"
	} else if c, ok := compactObject(a); ok {
		s = c
	} else {
		q, _ := json.Marshal(args)
		s = string(q)
	}
	return strings.ReplaceAll(s, "<", `\u003c`)
}

// compactObject compacts a JSON object's text, keeping the model's key
// order; ok is false when a is not a JSON object.
func compactObject(a string) (string, bool) {
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(a), &obj) != nil || obj == nil {
		return "", false
	}
	var buf bytes.Buffer
	if json.Compact(&buf, []byte(a)) != nil {
		return "", false
	}
	return buf.String(), true
}

// RenderToolOutput renders a tool's answer as the response text shows it:
// "\n<tool_response>\n" + output + "\n</tool_response>\n". Tags inside the
// output are escaped ("&lt;tool_call>"...) so that the rendering parses
// unambiguously.
func RenderToolOutput(output string) string {
	for _, tag := range []string{tagCall, tagCallEnd, tagResult, tagResultEnd} {
		output = strings.ReplaceAll(output, tag, "&lt;"+tag[1:])
	}
	if !strings.HasSuffix(output, "\n") {
		output += "\n"
	}
	return "\n" + tagResult + "\n" + output + tagResultEnd + "\n"
}

// canonicalArguments is a step's arguments for topics.ToolStep: compact
// JSON when they are an object, the raw text otherwise.
func canonicalArguments(args string) string {
	a := strings.TrimSpace(args)
	if a == "" {
		return "{}"
	}
	if c, ok := compactObject(a); ok {
		return c
	}
	return args
}

// ContextTokenizer is implemented by agents whose server renders a
// conversation with the served model's chat template (OpenAIAgent with
// OpenAIAgentConfig.ChatTemplate). ok is false when the agent has no
// template: Run then renders episodes itself (RenderAction,
// RenderToolOutput). README "Token ids" has the rule.
type ContextTokenizer interface {
	TokenizeContext(ctx context.Context, conv []Message, addGenerationPrompt bool) (ids []int32, ok bool, err error)
}

// Run runs one episode of agent over tools and returns it as one response.
// On an infrastructure failure it returns the episode so far, ended with
// EndError, and the error.
//
// Token ids: with a chat template (ContextTokenizer), the prompt is the
// server's tokens of the first context, each action the tokens the server
// sampled (else the server's tokens of the action as its template closes
// it), and each tool output the tokens the next context adds after the
// action: the response is then the context every later turn was sampled
// under. Without one, or where the next context does not hold the action
// as sampled (Result.ContextMismatches), the tool output is the server's
// tokens of RenderToolOutput.
func Run(ctx context.Context, cfg Config, agent Agent, tools *Tools) (*Result, error) {
	r := newRunner(cfg, agent, tools)
	if err := r.begin(ctx); err != nil {
		return r.finish(EndError, err)
	}
	for turnNo := 0; ; turnNo++ {
		if turnNo >= r.maxSteps {
			return r.finish(EndStepBudget, nil)
		}
		end, done, err := r.turn(ctx, turnNo)
		if done {
			return r.finish(end, err)
		}
	}
}

// runner is one episode in progress.
type runner struct {
	cfg          Config
	agent        Agent
	tools        *Tools
	maxSteps     int
	res          *Result
	text         strings.Builder
	ids          []int32
	lps          []float32
	haveLogprobs bool
	conv         []Message
	// tmpl is the agent's chat template (nil: none); context its last
	// context's tokens, prompt included.
	tmpl    ContextTokenizer
	context []int32
}

func newRunner(cfg Config, agent Agent, tools *Tools) *runner {
	r := &runner{cfg: cfg, agent: agent, tools: tools, maxSteps: cfg.MaxSteps, res: &Result{}, haveLogprobs: true}
	if r.maxSteps <= 0 {
		r.maxSteps = DefaultMaxSteps
	}
	if cfg.System != "" {
		r.conv = append(r.conv, Message{Role: "system", Content: cfg.System})
	}
	r.conv = append(r.conv, Message{Role: "user", Content: cfg.Prompt})
	if t, ok := agent.(ContextTokenizer); ok {
		r.tmpl = t
	}
	return r
}

// begin tokenizes the first context with the chat template, if any.
func (r *runner) begin(ctx context.Context) error {
	if r.tmpl == nil {
		return nil
	}
	ids, ok, err := r.tmpl.TokenizeContext(ctx, r.conv, true)
	if err != nil {
		return fmt.Errorf("episode: tokenize the context: %w", err)
	}
	if !ok {
		r.tmpl = nil
		return nil
	}
	r.context, r.res.PromptTokenIDs = ids, ids
	return nil
}

func (r *runner) finish(end string, err error) (*Result, error) {
	res := r.res
	res.EpisodeEnd = end
	res.ResponseText = r.text.String()
	res.ResponseTokenIDs = r.ids
	if r.haveLogprobs {
		res.ResponseLogprobs = r.lps
	}
	res.Conversation = r.conv
	res.Builds = r.tools.Builds()
	if res.StepEnds == nil {
		res.StepEnds = []int{}
	}
	code, derr := r.tools.Diff()
	res.Code = code
	if err == nil && derr != nil {
		err = derr
		res.EpisodeEnd = EndError
	}
	if err != nil {
		res.Error = err.Error()
	}
	return res, err
}

func (r *runner) appendTokens(t []int32, l []float32) {
	r.ids = append(r.ids, t...)
	if l == nil {
		l = make([]float32, len(t))
	}
	r.lps = append(r.lps, l...)
}

// limit is the token bound of the next turn; ok is false when the
// episode's budget is spent.
func (r *runner) limit() (int, bool) {
	limit := r.cfg.MaxTurnTokens
	if r.cfg.MaxTokens > 0 {
		left := r.cfg.MaxTokens - len(r.ids)
		if left <= 0 {
			return 0, false
		}
		if limit <= 0 || left < limit {
			limit = left
		}
	}
	return limit, true
}

// turn runs one model turn; done says the episode ended (with end, err).
func (r *runner) turn(ctx context.Context, turnNo int) (end string, done bool, err error) {
	limit, ok := r.limit()
	if !ok {
		r.res.FinishReason = "length"
		return EndContext, true, nil
	}
	turn, err := r.agent.Next(ctx, r.conv, limit)
	if err != nil {
		if ctx.Err() == nil && (openai.IsContextOverflow(err) || errors.Is(err, policy.ErrContextOverflow)) {
			r.res.FinishReason = "length"
			return EndContext, true, nil
		}
		return EndError, true, fmt.Errorf("episode: turn %d: %w", turnNo+1, err)
	}
	if turnNo == 0 && r.tmpl == nil {
		r.res.PromptTokenIDs = turn.PromptTokenIDs
	}
	r.res.FinishReason = turn.FinishReason
	if len(turn.Calls) == 0 {
		return r.finalAnswer(ctx, turn)
	}
	return r.toolStep(ctx, turn)
}

// actionTokens are a turn's tokens and logprobs: the sampled ones, else
// the chat template's tokens of the closed turn (conv ends with it), else
// the server's tokens of rendered.
func (r *runner) actionTokens(ctx context.Context, turn *Turn, rendered string) ([]int32, []float32, error) {
	ids, lps := turn.TokenIDs, turn.Logprobs
	if len(lps) != len(ids) {
		lps = nil
	}
	if len(ids) > 0 {
		return ids, lps, nil
	}
	if r.tmpl != nil {
		closed, _, err := r.tmpl.TokenizeContext(ctx, r.conv, false)
		if err != nil {
			return nil, nil, fmt.Errorf("episode: tokenize the context: %w", err)
		}
		if !hasPrefix(closed, r.context) {
			return nil, nil, errors.New("episode: the chat template renders the conversation otherwise once the turn is added")
		}
		return closed[len(r.context):], nil, nil
	}
	if rendered == "" {
		return nil, nil, nil
	}
	ids, err := r.agent.Tokenize(ctx, rendered)
	if err != nil {
		return nil, nil, fmt.Errorf("episode: tokenize: %w", err)
	}
	return ids, nil, nil
}

// finalAnswer ends the episode with a turn without a call (the trailing
// step).
func (r *runner) finalAnswer(ctx context.Context, turn *Turn) (string, bool, error) {
	r.conv = append(r.conv, Message{Role: "assistant", Content: turn.Text})
	ids, lps, err := r.actionTokens(ctx, turn, turn.Text)
	if err != nil {
		return EndError, true, err
	}
	if len(ids) > 0 && lps == nil {
		r.haveLogprobs = false
	}
	r.text.WriteString(turn.Text)
	r.appendTokens(ids, lps)
	if turn.FinishReason == "length" {
		return EndContext, true, nil
	}
	return EndNoToolCall, true, nil
}

// toolStep runs the turn's first tool call and appends the step.
func (r *runner) toolStep(ctx context.Context, turn *Turn) (string, bool, error) {
	call := turn.Calls[0]
	action := RenderAction(turn.Text, call)
	r.conv = append(r.conv, Message{Role: "assistant", Content: turn.Text, ToolCalls: turn.Calls})
	ids, lps, err := r.actionTokens(ctx, turn, action)
	if err != nil {
		return EndError, true, err
	}
	if len(ids) == 0 {
		return EndError, true, errors.New("episode: a tool call tokenized to no tokens")
	}
	if lps == nil {
		r.haveLogprobs = false
	}
	step := topics.ToolStep{Tool: call.Name, Role: ToolRole(call.Name), Arguments: canonicalArguments(call.Arguments), ActionStart: len(r.ids)}
	r.text.WriteString(action)
	r.appendTokens(ids, lps)
	step.ActionEnd = len(r.ids)
	step.End = step.ActionEnd
	addStep := func() {
		r.res.Steps = append(r.res.Steps, step)
		r.res.StepEnds = append(r.res.StepEnds, step.End)
	}
	out, err := r.tools.Call(ctx, call.Name, call.Arguments)
	if err != nil {
		addStep()
		return EndError, true, err
	}
	if out.Submitted {
		r.conv = append(r.conv, Message{Role: "tool", ToolCallID: call.ID, Content: "submitted"})
		addStep()
		return EndSubmitted, true, nil
	}
	answer := CapOutput(out.Text, r.cfg.MaxToolOutputBytes)
	if extra := len(turn.Calls) - 1; extra > 0 {
		answer += fmt.Sprintf("(only the first tool call of a turn runs: %d more calls were not run)\n", extra)
	}
	r.conv = append(r.conv, Message{Role: "tool", ToolCallID: call.ID, Content: answer})
	for _, c := range turn.Calls[1:] {
		r.conv = append(r.conv, Message{Role: "tool", ToolCallID: c.ID, Content: "error: not run: one tool call per turn"})
	}
	rendered := RenderToolOutput(answer)
	outIDs, err := r.outputTokens(ctx, ids, rendered)
	if err != nil {
		addStep()
		return EndError, true, err
	}
	if r.cfg.MaxTokens > 0 && len(r.ids)+len(outIDs) > r.cfg.MaxTokens {
		// The answer does not fit: the step ends at its action.
		addStep()
		r.res.FinishReason = "length"
		return EndContext, true, nil
	}
	r.text.WriteString(rendered)
	r.appendTokens(outIDs, nil)
	step.End = len(r.ids)
	step.Output = answer
	addStep()
	return "", false, nil
}

// outputTokens are the tokens of a tool's answer: what the next context
// adds after the action (chat template), else the server's tokens of the
// rendered answer.
func (r *runner) outputTokens(ctx context.Context, action []int32, rendered string) ([]int32, error) {
	if r.tmpl != nil {
		next, _, err := r.tmpl.TokenizeContext(ctx, r.conv, true)
		if err != nil {
			return nil, fmt.Errorf("episode: tokenize the context: %w", err)
		}
		out, exact := ContextDelta(r.context, action, next)
		r.context = next
		if exact {
			return out, nil
		}
		r.res.ContextMismatches++
	}
	ids, err := r.agent.Tokenize(ctx, rendered)
	if err != nil {
		return nil, fmt.Errorf("episode: tokenize: %w", err)
	}
	return ids, nil
}

// ContextDelta returns the tokens that the next context (next) adds after
// the previous one (prev) and the action sampled in it: exact is false
// when next does not start with prev followed by action (the template
// re-renders the history or renders the action otherwise than it was
// sampled), and no single token sequence is then every turn's context.
func ContextDelta(prev, action, next []int32) (out []int32, exact bool) {
	if !hasPrefix(next, prev) || !hasPrefix(next[len(prev):], action) {
		return nil, false
	}
	return next[len(prev)+len(action):], true
}

func hasPrefix(s, prefix []int32) bool {
	return len(s) >= len(prefix) && slices.Equal(s[:len(prefix)], prefix)
}
