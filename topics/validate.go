package topics

import "math"

func (r *Task) recordName() string         { return "task" }
func (r *Prompt) recordName() string       { return "prompt" }
func (r *Candidate) recordName() string    { return "candidate" }
func (r *Execution) recordName() string    { return "execution" }
func (r *Sample) recordName() string       { return "sample" }
func (r *CreditedTree) recordName() string { return "credited_tree" }
func (r *Completion) recordName() string   { return "completion" }
func (r *DeadLetter) recordName() string   { return "dead_letter" }
func (r *Task) version() int               { return r.SchemaVersion }
func (r *Prompt) version() int             { return r.SchemaVersion }
func (r *Candidate) version() int          { return r.SchemaVersion }
func (r *Execution) version() int          { return r.SchemaVersion }
func (r *Sample) version() int             { return r.SchemaVersion }
func (r *CreditedTree) version() int       { return r.SchemaVersion }
func (r *Completion) version() int         { return r.SchemaVersion }
func (r *DeadLetter) version() int         { return r.SchemaVersion }
func (r *Task) setVersion(v int)           { r.SchemaVersion = v }
func (r *Prompt) setVersion(v int)         { r.SchemaVersion = v }
func (r *Candidate) setVersion(v int)      { r.SchemaVersion = v }
func (r *Execution) setVersion(v int)      { r.SchemaVersion = v }
func (r *Sample) setVersion(v int)         { r.SchemaVersion = v }
func (r *CreditedTree) setVersion(v int)   { r.SchemaVersion = v }
func (r *Completion) setVersion(v int)     { r.SchemaVersion = v }
func (r *DeadLetter) setVersion(v int)     { r.SchemaVersion = v }

// Validate implements Record.
func (r *Task) Validate() error {
	const n = "task"
	if r.TaskID == "" {
		return missing(n, "task_id")
	}
	switch r.Kind {
	case KindPythonFunction, KindStdio, KindCompileFix:
	case "":
		return missing(n, "kind")
	default:
		return invalid(n, "kind", "unknown task kind %q", r.Kind)
	}
	if r.Prompt == "" {
		return missing(n, "prompt")
	}
	if len(r.Tests) == 0 && r.Check == "" && r.Kind != KindCompileFix {
		return missing(n, "tests")
	}
	if r.Kind == KindPythonFunction && r.EntryPoint == "" {
		return missing(n, "entry_point")
	}
	if r.Kind == KindCompileFix {
		if err := r.CompileFix.validate(n); err != nil {
			return err
		}
	}
	if r.TimeoutMS < 0 || r.CalibratedTimeoutMS < 0 || r.MemoryMB < 0 {
		return invalid(n, "timeout_ms", "limits must not be negative")
	}
	if err := validRewardPolicy(n, r.RewardPolicy); err != nil {
		return err
	}
	return nil
}

func validRewardPolicy(rec, p string) error {
	switch p {
	case "", RewardPassRate, RewardBinary, RewardTiered:
		return nil
	}
	return invalid(rec, "reward_policy", "unknown reward policy %q", p)
}

func (s *TreeSpec) validate(rec string) error {
	if s.MaxTurns == 0 {
		return missing(rec, "max_turns")
	}
	if s.MaxTurns < 1 {
		return invalid(rec, "max_turns", "must be >= 1, got %d", s.MaxTurns)
	}
	if len(s.GroupSizes) == 0 {
		return missing(rec, "group_sizes")
	}
	for _, g := range s.GroupSizes {
		if g < 1 {
			return invalid(rec, "group_sizes", "group size must be >= 1, got %d", g)
		}
	}
	return validRewardPolicy(rec, s.RewardPolicy)
}

func validIDs(rec, treeID, taskID string) error {
	if treeID == "" {
		return missing(rec, "tree_id")
	}
	if taskID == "" {
		return missing(rec, "task_id")
	}
	return nil
}

func validTreePos(rec, treeID, taskID string, turn, maxTurns int) error {
	if err := validIDs(rec, treeID, taskID); err != nil {
		return err
	}
	if turn < 1 || turn > maxTurns {
		return invalid(rec, "turn", "turn %d outside 1..%d", turn, maxTurns)
	}
	return nil
}

// Validate implements Record.
func (r *Prompt) Validate() error {
	const n = "prompt"
	if err := validIDs(n, r.TreeID, r.TaskID); err != nil {
		return err
	}
	if err := r.TreeSpec.validate(n); err != nil {
		return err
	}
	if err := validTreePos(n, r.TreeID, r.TaskID, r.Turn, r.MaxTurns); err != nil {
		return err
	}
	if r.GroupID != ParentNode(r.TreeID, r.ParentID) {
		return invalid(n, "group_id", "group_id %q is not the parent node %q", r.GroupID, ParentNode(r.TreeID, r.ParentID))
	}
	if r.GroupSize < 1 {
		return invalid(n, "group_size", "must be >= 1, got %d", r.GroupSize)
	}
	return nil
}

// Validate implements Record.
func (r *Candidate) Validate() error { return r.validate("candidate") }

func (r *Candidate) validate(n string) error {
	if err := validIDs(n, r.TreeID, r.TaskID); err != nil {
		return err
	}
	if r.NodeID == "" {
		return missing(n, "node_id")
	}
	if err := r.TreeSpec.validate(n); err != nil {
		return err
	}
	if err := validTreePos(n, r.TreeID, r.TaskID, r.Turn, r.MaxTurns); err != nil {
		return err
	}
	if r.GroupID != ParentNode(r.TreeID, r.ParentID) {
		return invalid(n, "group_id", "group_id %q is not the parent node", r.GroupID)
	}
	if r.GroupSize < 1 || r.Index < 0 || r.Index >= r.GroupSize {
		return invalid(n, "index", "index %d outside group of %d", r.Index, r.GroupSize)
	}
	if r.NodeID != NodeID(r.TreeID, r.GroupID, r.Index) {
		return invalid(n, "node_id", "node_id %q is not derived from (tree_id, parent, index)", r.NodeID)
	}
	if len(r.ResponseLogprobs) != 0 && len(r.ResponseLogprobs) != len(r.ResponseTokenIDs) {
		return invalid(n, "response_logprobs", "%d logprobs for %d tokens", len(r.ResponseLogprobs), len(r.ResponseTokenIDs))
	}
	prev := 0
	for _, e := range r.StepEnds {
		if e <= prev || e > len(r.ResponseTokenIDs) {
			return invalid(n, "step_ends", "step end %d out of order or past %d tokens", e, len(r.ResponseTokenIDs))
		}
		prev = e
	}
	prev = 0
	for i, s := range r.ToolSteps {
		if s.Tool == "" {
			return invalid(n, "tool_steps", "step %d names no tool", i)
		}
		if s.ActionStart < prev || s.ActionEnd < s.ActionStart || s.End < s.ActionEnd || s.End > len(r.ResponseTokenIDs) {
			return invalid(n, "tool_steps", "step %d spans [%d,%d,%d) out of order or past %d tokens",
				i, s.ActionStart, s.ActionEnd, s.End, len(r.ResponseTokenIDs))
		}
		prev = s.End
	}
	return nil
}

// validate checks a compile-fix task's setting.
func (c *CompileFix) validate(n string) error {
	if c == nil {
		return missing(n, "compile_fix")
	}
	if !ValidDigest(c.Workspace) {
		return invalid(n, "compile_fix.workspace", "workspace %q is not a sha256:<64 hex> digest", c.Workspace)
	}
	if len(c.Build) == 0 || c.Build[0] == "" {
		return missing(n, "compile_fix.build")
	}
	if c.DiskMB < 0 {
		return invalid(n, "compile_fix.disk_mb", "must not be negative")
	}
	if c.Dependencies != "" && !ValidDigest(c.Dependencies) {
		return invalid(n, "compile_fix.dependencies", "dependencies %q is not a sha256:<64 hex> digest", c.Dependencies)
	}
	for i, d := range c.Targets {
		if d.Message == "" && d.Code == "" {
			return invalid(n, "compile_fix.target_diagnostics", "target %d has neither a message nor a code", i)
		}
	}
	return nil
}

// ValidDigest reports whether d is a workspace digest: "sha256:" and 64
// lower-case hex digits.
func ValidDigest(d string) bool {
	const p = "sha256:"
	if len(d) != len(p)+64 || d[:len(p)] != p {
		return false
	}
	for _, c := range d[len(p):] {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Validate implements Record.
func (r *Execution) Validate() error { return r.validate("execution") }

func (r *Execution) validate(n string) error {
	if err := r.Candidate.validate(n); err != nil {
		return err
	}
	return r.validateOwn(n)
}

// validateOwn checks the fields Execution adds to its candidate.
func (r *Execution) validateOwn(n string) error {
	switch r.Status {
	case StatusPassed, StatusWrongAnswer, StatusRuntimeError, StatusCompileError, StatusTimeout,
		StatusMemory, StatusOutputLimit, StatusSandboxError, StatusNotRun, StatusPatchFailed:
	case "":
		return missing(n, "status")
	default:
		return invalid(n, "status", "unknown status %q", r.Status)
	}
	if r.TestsPassed < 0 || r.TestsTotal < 0 || r.TestsPassed > r.TestsTotal {
		return invalid(n, "tests_passed", "%d of %d", r.TestsPassed, r.TestsTotal)
	}
	return nil
}

// Validate implements Record.
func (r *Sample) Validate() error {
	if err := r.Execution.validate("sample"); err != nil {
		return err
	}
	return r.validateOwn()
}

// validateOwn checks the fields Sample adds to its execution.
func (r *Sample) validateOwn() error {
	const n = "sample"
	switch r.Route {
	case RouteTrain, RouteMasked, RouteLastStepPenalty:
	case "":
		return missing(n, "route")
	default:
		return invalid(n, "route", "unknown route %q", r.Route)
	}
	if math.IsNaN(r.Reward) || math.IsInf(r.Reward, 0) {
		return invalid(n, "reward", "not finite")
	}
	if r.ChildrenRequested < 0 {
		return invalid(n, "children_requested", "negative")
	}
	if len(r.LossWeights) != 0 && len(r.LossWeights) != len(r.ResponseTokenIDs) {
		return invalid(n, "loss_weights", "%d weights for %d tokens", len(r.LossWeights), len(r.ResponseTokenIDs))
	}
	return nil
}

// Validate implements Record.
func (r *CreditedTree) Validate() error {
	const n = "credited_tree"
	if r.TreeID == "" {
		return missing(n, "tree_id")
	}
	for i := range r.Samples {
		s := &r.Samples[i]
		if s.TreeID != r.TreeID {
			return invalid(n, "samples", "sample %s belongs to tree %q", s.NodeID, s.TreeID)
		}
		if math.IsNaN(s.Advantage) || math.IsNaN(s.CreditedReward) {
			return invalid(n, "samples", "sample %s has a NaN credit", s.NodeID)
		}
	}
	return nil
}

// Validate implements Record.
func (r *Completion) Validate() error {
	const n = "completion"
	if r.TreeID == "" {
		return missing(n, "tree_id")
	}
	if r.Samples < 0 {
		return invalid(n, "samples", "negative")
	}
	return nil
}

// Validate implements Record.
func (r *DeadLetter) Validate() error {
	if r.Reason == "" {
		return missing("dead_letter", "reason")
	}
	return nil
}
