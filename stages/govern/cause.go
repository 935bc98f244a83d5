package govern

import (
	"slices"
	"strings"

	"github.com/murphy-rl/murphy/topics"
)

// Class is the top level of the failure-cause taxonomy (README.md).
type Class string

const (
	// ClassInfra: the system failed, not the policy. Route masked, never
	// expanded.
	ClassInfra Class = "infrastructure"
	// ClassDegenerate: the policy produced a degenerate response (a loop,
	// a truncation, too many steps). Route last_step_penalty, never expanded.
	ClassDegenerate Class = "degeneration"
	// ClassNormal: the response was run and judged. Route train.
	ClassNormal Class = "normal"
)

// Failure causes, recorded in Sample.FailureCause. Infrastructure causes
// start with "infra.", degeneration causes with "degenerate."; normal causes
// are the execution statuses.
const (
	CauseInference       = topics.InfraInference       // inference failed after the client's retries
	CauseContextOverflow = topics.InfraContextOverflow // prompt longer than the model's window
	CauseSandbox         = "infra.sandbox"             // the sandbox itself failed
	CauseHarnessTimeout  = "infra.harness_timeout"     // the harness (not the candidate) timed out
	CauseNotRun          = "infra.not_run"             // never executed, no cause given
	CauseJudge           = "infra.judge"               // a semantic judge failed (e.g. the LLM judge is down)
	CauseScorer          = "infra.scorer"              // the step scorer failed (ScorerFailure = mask)
	CauseInfraOther      = "infra.other"               // an infra_cause this build does not know
	// CauseContextExhausted: an agent episode ran out of context (its token
	// budget or the model's window) before it ended: the system's limit,
	// not a verdict on the policy.
	CauseContextExhausted = "infra.context_exhausted"

	CauseRepetition     = "degenerate.repetition"      // a repetition loop
	CauseTruncated      = "degenerate.truncated"       // cut at max tokens
	CauseExcessiveSteps = "degenerate.excessive_steps" // more steps than Config.MaxSteps, or an episode's step budget used up
	CauseNoToolCall     = "degenerate.no_tool_call"    // an agent episode that ended answering without a tool call

	CausePassed       = topics.StatusPassed
	CauseWrongAnswer  = topics.StatusWrongAnswer
	CauseRuntimeError = topics.StatusRuntimeError
	CauseCompileError = topics.StatusCompileError
	CauseTimeout      = topics.StatusTimeout // the candidate's own code ran too long
	CauseMemory       = topics.StatusMemory
	CauseOutputLimit  = topics.StatusOutputLimit
	CausePatchFailed  = topics.StatusPatchFailed // a compile-fix patch that does not apply
)

// Causes lists every cause of the taxonomy (a fresh slice).
func Causes() []string {
	return []string{
		CauseInference, CauseContextOverflow, CauseSandbox, CauseHarnessTimeout, CauseNotRun, CauseJudge, CauseScorer, CauseInfraOther,
		CauseContextExhausted,
		CauseRepetition, CauseTruncated, CauseExcessiveSteps, CauseNoToolCall,
		CausePassed, CauseWrongAnswer, CauseRuntimeError, CauseCompileError, CauseTimeout, CauseMemory, CauseOutputLimit,
		CausePatchFailed,
	}
}

// classOf returns the class of a cause ("" when the cause is unknown).
func classOf(cause string) Class {
	switch {
	case strings.HasPrefix(cause, "infra."):
		return ClassInfra
	case strings.HasPrefix(cause, "degenerate."):
		return ClassDegenerate
	}
	switch cause {
	case CausePassed, CauseWrongAnswer, CauseRuntimeError, CauseCompileError, CauseTimeout, CauseMemory, CauseOutputLimit,
		CausePatchFailed:
		return ClassNormal
	}
	return ""
}

// ClassOf returns the class of a cause ("" when it is not in the taxonomy).
func ClassOf(cause string) Class { return classOf(cause) }

// RouteOf returns the route of a class.
func RouteOf(c Class) string {
	switch c {
	case ClassInfra:
		return topics.RouteMasked
	case ClassDegenerate:
		return topics.RouteLastStepPenalty
	}
	return topics.RouteTrain
}

func isConfigurableCause(cause string) bool {
	c := classOf(cause)
	return (c == ClassInfra || c == ClassDegenerate) && (slices.Contains(Causes(), cause) || c == ClassInfra)
}

// classifier decides the cause of an execution before any judging.
type classifier struct {
	cfg      Config
	detector *RepetitionDetector
}

// Classify returns the failure cause of ex from the record alone. Judge and
// scorer failures (infra.judge, infra.scorer) are decided later, by the
// judges and scorer.
//
// Precedence: infrastructure (the candidate's infra_cause, the sandbox
// status, an episode out of context) before degeneration (repetition, then
// excessive steps or an episode's step budget, a missing tool call, then
// truncation) before the normal status. Degeneration is decided from the
// response alone, whatever the tests said. An agent episode's repetition is
// measured on its actions only: tool outputs are the environment's.
func (c *classifier) Classify(ex *topics.Execution) string {
	if ex.InfraCause != "" {
		switch ex.InfraCause {
		case CauseInference, CauseContextOverflow:
			return ex.InfraCause
		}
		if strings.HasPrefix(ex.InfraCause, "infra.") && !strings.ContainsAny(ex.InfraCause, " \t\n") && len(ex.InfraCause) <= 64 {
			return ex.InfraCause
		}
		return CauseInfraOther
	}
	switch ex.Status {
	case topics.StatusSandboxError:
		switch ex.SandboxErrorKind {
		case topics.SandboxErrorHarnessTimeout:
			return CauseHarnessTimeout
		case "":
		default:
			return CauseSandbox
		}
		// Records without a kind (another executor): the message decides.
		msg := strings.ToLower(ex.SandboxError)
		for _, m := range c.cfg.HarnessTimeoutMarkers {
			if m != "" && strings.Contains(msg, strings.ToLower(m)) {
				return CauseHarnessTimeout
			}
		}
		return CauseSandbox
	case topics.StatusNotRun:
		return CauseNotRun
	}
	if ex.EpisodeEnd == EpisodeEndContext {
		return CauseContextExhausted
	}
	if text, ids := actionsOf(&ex.Candidate); c.detector.Looping(text, ids) {
		return CauseRepetition
	}
	switch {
	case ex.EpisodeEnd == EpisodeEndStepBudget:
		return CauseExcessiveSteps
	case ex.EpisodeEnd == EpisodeEndNoToolCall:
		return CauseNoToolCall
	case c.cfg.MaxSteps > 0 && len(StepSpans(&ex.Candidate)) > c.cfg.MaxSteps:
		return CauseExcessiveSteps
	}
	if slices.Contains(c.cfg.TruncationReasons, ex.FinishReason) {
		return CauseTruncated
	}
	return ex.Status
}

// Episode ends (topics.Candidate.EpisodeEnd) that route an episode.
const (
	EpisodeEndStepBudget = "step_budget"
	EpisodeEndNoToolCall = "no_tool_call"
	EpisodeEndContext    = "context"
)

// actionsOf is what the repetition detector reads: the response, or for
// an agent episode its actions alone (each step's action tokens, and the
// text without the tool responses).
func actionsOf(c *topics.Candidate) (string, []int32) {
	if len(c.ToolSteps) == 0 {
		return c.ResponseText, c.ResponseTokenIDs
	}
	var ids []int32
	prev := 0
	for _, st := range c.ToolSteps {
		if st.ActionStart < prev || st.ActionEnd > len(c.ResponseTokenIDs) || st.ActionEnd < st.ActionStart {
			return toolResponses.ReplaceAllString(c.ResponseText, ""), nil
		}
		ids = append(ids, c.ResponseTokenIDs[st.ActionStart:st.ActionEnd]...)
		prev = st.End
	}
	if last := c.ToolSteps[len(c.ToolSteps)-1].End; last <= len(c.ResponseTokenIDs) {
		ids = append(ids, c.ResponseTokenIDs[last:]...) // a final answer without a call
	}
	return toolResponses.ReplaceAllString(c.ResponseText, ""), ids
}

// inGroupStats reports whether a sample of cause counts in its group's
// mean/std: normal causes always do, others per Config.GroupStats, by
// default DefaultInGroupStats.
func (c Config) inGroupStats(cause string) bool {
	if classOf(cause) == ClassNormal {
		return true
	}
	if v, ok := c.GroupStats[cause]; ok {
		return v
	}
	return DefaultInGroupStats(cause)
}

// DefaultInGroupStats reports whether a sample of cause counts in its
// group's mean/std when Config.GroupStats does not say. Everything counts
// (the signal-reshaping method's setting) except judge and scorer outages:
// their reward is a placeholder, not a verdict on the candidate, and counting
// it would put a real-looking zero into the baseline.
func DefaultInGroupStats(cause string) bool {
	switch cause {
	case CauseJudge, CauseScorer:
		return false
	}
	return true
}
