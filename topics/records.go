package topics

import "time"

// SchemaVersion is the version of every record type in this package, the
// one this build writes. It reads MinSchemaVersion up to SchemaVersion; a
// record with another version is rejected (DLQ) rather than misread.
//
// Version 2 packs the token columns (Int32s, Float32s) as base64 strings;
// version 1 wrote them as JSON arrays. Nothing else differs, so a version 1
// record is read as is and upgraded in memory.
const (
	SchemaVersion    = 2
	MinSchemaVersion = 1
)

// Task kinds.
const (
	KindPythonFunction = "python-function"
	KindStdio          = "stdio"
	KindCompileFix     = "compile-fix"
)

// Reward policies.
const (
	RewardPassRate = "pass_rate"
	RewardBinary   = "binary"
	RewardTiered   = "tiered"
)

// Routes assigned by govern.
const (
	RouteTrain           = "train"
	RouteMasked          = "masked"
	RouteLastStepPenalty = "last_step_penalty"
)

// Execution statuses.
const (
	StatusPassed       = "passed"
	StatusWrongAnswer  = "wrong_answer"
	StatusRuntimeError = "runtime_error"
	StatusCompileError = "compile_error"
	StatusTimeout      = "timeout"
	StatusMemory       = "memory"
	StatusOutputLimit  = "output_limit"
	StatusSandboxError = "sandbox_error"
	// StatusPatchFailed marks a compile-fix candidate whose patch could not
	// be applied to the task's workspace (malformed, unsafe paths, hunks
	// that match nothing); the feedback says why.
	StatusPatchFailed = "patch_failed"
	// StatusNotRun marks a candidate that was never executed because it
	// carries an infrastructure failure from an earlier stage.
	StatusNotRun = "not_run"
)

// Kinds of sandbox_error (Execution.SandboxErrorKind).
const (
	SandboxErrorHarnessTimeout = "harness_timeout" // the harness did not finish the job in time after it ended or was killed
	SandboxErrorWorker         = "worker"          // the worker or the judge died or broke the protocol
	SandboxErrorHarness        = "harness"         // the harness did not start the job or report its end
	SandboxErrorRestart        = "restart"         // a replacement sandbox could not be started
	SandboxErrorCanceled       = "canceled"        // the job was canceled (shutdown)
	SandboxErrorInvalidJob     = "invalid_job"     // the job could not be built (unsupported task kind, bad tests)
	SandboxErrorInternal       = "internal"        // any other failure of the sandbox itself
)

// Failure causes carried by candidates from generate.
const (
	InfraInference       = "infra.inference"
	InfraContextOverflow = "infra.context_overflow"
)

// TestCase is one test of a task. For python-function tasks a case is either a
// call (Args evaluated as the argument list, return value compared with
// Expected, both Python literals/expressions) or a raw assertion over
// `candidate`. For stdio tasks Stdin is fed and stdout compared with Expected.
type TestCase struct {
	Name     string `json:"name,omitempty"`
	Args     string `json:"args,omitempty"`
	Expected string `json:"expected,omitempty"`
	Stdin    string `json:"stdin,omitempty"`
	Assert   string `json:"assert,omitempty"`
	// Hidden tests count for the reward only and never appear in feedback.
	Hidden bool `json:"hidden,omitempty"`
}

// Task is a problem, published on the compacted tasks topic keyed by task_id.
// The native task format of the project is one Task JSON object per line.
type Task struct {
	SchemaVersion int    `json:"schema_version"`
	TaskID        string `json:"task_id"`
	Kind          string `json:"kind"`
	Source        string `json:"source,omitempty"`
	// Prompt is the problem statement shown to the policy. For HumanEval it
	// is the function signature and docstring.
	Prompt     string `json:"prompt"`
	EntryPoint string `json:"entry_point,omitempty"`
	// Reference is a whole reference program that passes every test.
	Reference string `json:"reference,omitempty"`
	// Setup is code run before the candidate's tests (MBPP test_setup_code).
	Setup string     `json:"setup,omitempty"`
	Tests []TestCase `json:"tests"`
	// Check holds original whole-test code (HumanEval `check(candidate)`)
	// when it could not be split into cases; treated as one hidden test.
	Check string `json:"check,omitempty"`
	// FloatTolerance is the absolute/relative tolerance for stdio tokens.
	FloatTolerance float64 `json:"float_tolerance,omitempty"`
	// TimeoutMS is the task's explicit CPU-time limit per run; it caps a
	// calibrated one.
	TimeoutMS int `json:"timeout_ms,omitempty"`
	// CalibratedTimeoutMS is the CPU-time limit derived from the reference
	// solution's measured CPU time (a factor over it, with a floor), set
	// by calibration and kept with the task.
	CalibratedTimeoutMS int    `json:"calibrated_timeout_ms,omitempty"`
	MemoryMB            int    `json:"memory_mb,omitempty"`
	RewardPolicy        string `json:"reward_policy,omitempty"`
	// ReferencePatch is the known-good patch of a repair task, used by the
	// reference-patch judge.
	ReferencePatch string `json:"reference_patch,omitempty"`
	// Language is the task's programming language (python, c, go, java...);
	// "" means python for python-function and stdio tasks.
	Language string `json:"language,omitempty"`
	// CompileFix is the repair setting of a compile-fix task.
	CompileFix *CompileFix `json:"compile_fix,omitempty"`
}

// TaskLanguage is the task's language, python where a python-function or
// stdio task names none.
func (r *Task) TaskLanguage() string {
	if r.Language == "" && (r.Kind == KindPythonFunction || r.Kind == KindStdio) {
		return "python"
	}
	return r.Language
}

// Diagnostic is one compiler or build tool message, as a log states it or
// as execute parsed it from a build.
type Diagnostic struct {
	// Tool is the producer: gcc, clang, go, javac, maven, gradle, rustc,
	// tsc, python.
	Tool string `json:"tool,omitempty"`
	// Severity is error, warning or note.
	Severity string `json:"severity,omitempty"`
	// File is relative to the workspace root.
	File   string `json:"file,omitempty"`
	Line   int    `json:"line,omitempty"`
	Column int    `json:"column,omitempty"`
	// Code is the tool's diagnostic code where it has one (E0425, TS2304,
	// -Wimplicit-function-declaration, compiler.err.cant.resolve...).
	Code    string `json:"code,omitempty"`
	Message string `json:"message"`
	// Excerpt is source context around the location (feedback only).
	Excerpt string `json:"excerpt,omitempty"`
}

// CompileFix is the setting of a compile-fix task: a workspace snapshot
// that fails to build, how to build it, and what the failing build said.
type CompileFix struct {
	// Workspace is the snapshot's digest in the workspace store,
	// "sha256:<64 hex>" (never the snapshot itself).
	Workspace string `json:"workspace"`
	// Build is the build command (argv), run at the workspace root, offline.
	Build []string `json:"build"`
	// Toolchain names the build tools (gcc, make, go, javac, maven, python).
	Toolchain string `json:"toolchain,omitempty"`
	// Targets are the diagnostics the failing build reports; a repair makes
	// them go away without a new error.
	Targets []Diagnostic `json:"target_diagnostics"`
	// Scope lists workspace paths (files or directories) whose diagnostics
	// count (as targets still present or new errors, and in feedback);
	// empty means the whole workspace. The build's exit status decides
	// whether it compiles either way.
	Scope []string `json:"compile_scope,omitempty"`
	// Tests is an optional tests command (argv) run after a successful
	// build; when it fails the candidate scores at most the middle tier.
	Tests []string `json:"tests_command,omitempty"`
	// DiskMB caps the job's writable workspace (0 = the executor's default).
	DiskMB int `json:"disk_mb,omitempty"`
	// Dependencies is the digest, in the same workspace store, of the
	// read-only dependency cache the build reads offline (Maven
	// repository, Go module cache, Python packages, Gradle cache, as
	// backfill resolved them); "" = the build needs none or the
	// executor's own.
	Dependencies string `json:"dependencies,omitempty"`
}

// TreeSpec is the per-tree configuration that travels with every record of
// the tree so that stateless stages need no side channel.
type TreeSpec struct {
	MaxTurns int `json:"max_turns"`
	// GroupSizes[t-1] is the number of children sampled at turn t; the last
	// entry repeats for later turns.
	GroupSizes   []int  `json:"group_sizes"`
	RewardPolicy string `json:"reward_policy,omitempty"`
	// MaxNodes caps the nodes of one tree (0 = no cap).
	MaxNodes int    `json:"max_nodes,omitempty"`
	RunID    string `json:"run_id,omitempty"`
	Seed     int64  `json:"seed,omitempty"`
}

// GroupSizeAt returns the group size for turn t (1-based).
func (s TreeSpec) GroupSizeAt(t int) int {
	if len(s.GroupSizes) == 0 || t < 1 {
		return 0
	}
	if t > len(s.GroupSizes) {
		return s.GroupSizes[len(s.GroupSizes)-1]
	}
	return s.GroupSizes[t-1]
}

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Prompt asks generate for a group of GroupSize children of node ParentID.
// Root prompts have ParentID == "" and GroupID == RootID(TreeID).
type Prompt struct {
	SchemaVersion int `json:"schema_version"`
	TreeSpec
	TreeID   string `json:"tree_id"`
	TaskID   string `json:"task_id"`
	ParentID string `json:"parent_id"`
	GroupID  string `json:"group_id"`
	// Turn of the children this prompt asks for (1 for the root group).
	Turn      int       `json:"turn"`
	GroupSize int       `json:"group_size"`
	Text      string    `json:"prompt_text"`
	Messages  []Message `json:"messages,omitempty"`
	TokenIDs  Int32s    `json:"prompt_token_ids,omitempty"`
	// Feedback is the executor feedback the refinement prompt was built from
	// ("" for root prompts); policies may condition on it.
	Feedback string `json:"feedback,omitempty"`
	// ParentCode is the failed program being refined ("" for root prompts).
	ParentCode string `json:"parent_code,omitempty"`
	// PolicyVersion is the policy version the tree's parent node was
	// generated at (0 for root prompts and from builds that predate it);
	// generate finishes a tree on its version (VERSIONS.md).
	PolicyVersion int64     `json:"policy_version,omitempty"`
	CreatedAt     time.Time `json:"created_at"`
}

// Candidate is one sampled response: a node of the tree.
type Candidate struct {
	SchemaVersion int `json:"schema_version"`
	TreeSpec
	TreeID   string `json:"tree_id"`
	TaskID   string `json:"task_id"`
	NodeID   string `json:"node_id"`
	ParentID string `json:"parent_id"`
	GroupID  string `json:"group_id"`
	Turn     int    `json:"turn"`
	// Index is the sample index within its group; GroupSize the children
	// requested for the group.
	Index            int      `json:"index"`
	GroupSize        int      `json:"group_size"`
	PromptText       string   `json:"prompt_text"`
	PromptTokenIDs   Int32s   `json:"prompt_token_ids"`
	ResponseText     string   `json:"response_text"`
	ResponseTokenIDs Int32s   `json:"response_token_ids"`
	ResponseLogprobs Float32s `json:"response_logprobs"`
	// StepEnds are exclusive end offsets (in response tokens) of the
	// response's steps (tool-call/turn segments). Empty means one step.
	StepEnds []int `json:"step_ends,omitempty"`
	// ToolSteps are the steps of an agent episode, one per tool call, in
	// order; step i ends at StepEnds[i]. Empty for a single response.
	ToolSteps []ToolStep `json:"tool_steps,omitempty"`
	// EpisodeEnd says how an agent episode ended: submitted, step_budget,
	// no_tool_call, context or error ("" for a single response).
	EpisodeEnd string `json:"episode_end,omitempty"`
	// Code is the program extracted from the response.
	Code          string `json:"code"`
	FinishReason  string `json:"finish_reason"`
	Policy        string `json:"policy"`
	PolicyVersion int64  `json:"policy_version"`
	// InfraCause is set when the candidate is an infrastructure failure of
	// generate (infra.inference, infra.context_overflow); InfraError says why.
	InfraCause  string    `json:"infra_cause,omitempty"`
	InfraError  string    `json:"infra_error,omitempty"`
	GeneratedAt time.Time `json:"generated_at"`
}

// ToolStep is one step of an agent episode: the model's action (a tool
// call) and the tool's output. Response tokens [ActionStart, ActionEnd) are
// the model's; [ActionEnd, End) are the tool's output, in the response for
// the next step's context but masked from the loss.
type ToolStep struct {
	Tool string `json:"tool"`
	// Role is what the tool does, as the episode's tool specs declare it
	// (ToolRole* constants; "" when unknown): govern's step scorer reads it.
	Role string `json:"role,omitempty"`
	// Arguments is the call's JSON arguments object.
	Arguments   string `json:"arguments,omitempty"`
	ActionStart int    `json:"action_start"`
	ActionEnd   int    `json:"action_end"`
	End         int    `json:"end"`
	// Output is the tool's answer as the model saw it (capped).
	Output string `json:"output,omitempty"`
}

// Roles of an agent's tools (ToolStep.Role): the contract between the
// episode's tool specs and the step scorer.
const (
	// ToolRoleRead reads a file (arguments path, and optionally a range).
	ToolRoleRead = "read"
	// ToolRoleSearch searches files.
	ToolRoleSearch = "search"
	// ToolRoleList lists files.
	ToolRoleList = "list"
	// ToolRoleEdit changes a file (path; old and new text, or content).
	ToolRoleEdit = "edit"
	// ToolRoleVerify runs the build or the tests on the current edits.
	ToolRoleVerify = "verify"
	// ToolRoleSubmit ends the episode with the current edits.
	ToolRoleSubmit = "submit"
)

// TestResult is the verdict of one test case.
type TestResult struct {
	Index  int    `json:"index"`
	Hidden bool   `json:"hidden,omitempty"`
	Status string `json:"status"` // passed, wrong_answer, error, timeout
	Actual string `json:"actual,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Execution is a candidate with its sandboxed test run.
type Execution struct {
	Candidate
	Status      string       `json:"status"`
	TestsPassed int          `json:"tests_passed"`
	TestsTotal  int          `json:"tests_total"`
	PassRate    float64      `json:"pass_rate"`
	Feedback    string       `json:"feedback"`
	DurationMS  int64        `json:"duration_ms"`
	Results     []TestResult `json:"results,omitempty"`
	// SandboxError explains a sandbox_error status.
	SandboxError string `json:"sandbox_error,omitempty"`
	// SandboxErrorKind classifies a sandbox_error (SandboxError* constants)
	// so that govern routes it without reading the message.
	SandboxErrorKind string `json:"sandbox_error_kind,omitempty"`
	// Diagnostics are a compile-fix build's error diagnostics that are not
	// in the unpatched baseline or are targets still present.
	Diagnostics []Diagnostic `json:"diagnostics,omitempty"`
	// TargetsFixed and TargetsTotal count the task's target diagnostics
	// gone from the patched build.
	TargetsFixed int       `json:"targets_fixed,omitempty"`
	TargetsTotal int       `json:"targets_total,omitempty"`
	ExecutedAt   time.Time `json:"executed_at"`
}

// Sample is a governed execution: routed, rewarded and weighted.
type Sample struct {
	Execution
	Route        string  `json:"route"`
	FailureCause string  `json:"failure_cause"`
	Reward       float64 `json:"reward"`
	// InGroupStats says whether this member counts in its group's mean/std.
	InGroupStats bool `json:"in_group_stats"`
	// ChildrenRequested is the size of the group sampled from this node
	// (0 for a leaf).
	ChildrenRequested int `json:"children_requested"`
	// PatchSimilarity is the similarity ratio (0..1) of a compile-fix
	// candidate's diff and the reference patch: a diagnostic, never the
	// reward. Nil when not computed.
	PatchSimilarity *float64 `json:"patch_similarity,omitempty"`
	// StepScores are process scores s_i in [0,1], one per step.
	StepScores Float32s `json:"step_scores,omitempty"`
	// LossWeights are per response token; they never enter the reward.
	LossWeights Float32s  `json:"loss_weights"`
	GovernedAt  time.Time `json:"governed_at"`
}

// CreditConfig is the credit configuration; it travels with every credited tree.
type CreditConfig struct {
	Strategy  string  `json:"strategy"` // mars | mers | grpo-mt
	Gamma     float64 `json:"gamma"`
	Z         string  `json:"z"` // 1 | remaining_turns | one_plus_gamma
	Advantage string  `json:"advantage"`
	Epsilon   float64 `json:"epsilon"`
	// UnbiasedStd divides by n−1 instead of n in the std advantage.
	UnbiasedStd bool `json:"unbiased_std,omitempty"`
	// PruneOrder lists the pruning passes in order ("intrap", "interp").
	PruneOrder      []string `json:"prune_order,omitempty"`
	IntrapK         int      `json:"intrap_k,omitempty"`
	InterpM         int      `json:"interp_m,omitempty"`
	InterpThreshold float64  `json:"interp_threshold,omitempty"`
	DropZeroSignal  bool     `json:"drop_zero_signal,omitempty"`
}

// CreditedSample is a sample with its propagated reward and group advantage.
type CreditedSample struct {
	Sample
	CreditedReward float64 `json:"credited_reward"`
	Advantage      float64 `json:"advantage"`
}

// CreditedTree is one completed (or closed-incomplete) tree; credit emits
// each tree exactly once, as one record keyed by tree_id.
type CreditedTree struct {
	SchemaVersion int              `json:"schema_version"`
	TreeID        string           `json:"tree_id"`
	TaskID        string           `json:"task_id"`
	Incomplete    bool             `json:"incomplete,omitempty"`
	Config        CreditConfig     `json:"credit_config"`
	Samples       []CreditedSample `json:"samples"`
	PrunedNodes   int              `json:"pruned_nodes"`
	CreditedAt    time.Time        `json:"credited_at"`
}

// Completion tells that credit is done with a tree, keyed by its tree id:
// emitted (complete, or closed incomplete and flagged), or closed at its
// deadline and dropped (Dropped: no credited record follows). Generate's
// admission frees the tree's slot; murphy run counts dropped trees as
// finished. It repeats a few fields of the credited tree and nothing else,
// so that a reader of completions need not fetch credited trees.
type Completion struct {
	SchemaVersion int    `json:"schema_version"`
	TreeID        string `json:"tree_id"`
	TaskID        string `json:"task_id"`
	Incomplete    bool   `json:"incomplete,omitempty"`
	// Dropped: the tree was closed incomplete and not written (credit's
	// incomplete: drop).
	Dropped    bool      `json:"dropped,omitempty"`
	Samples    int       `json:"samples"`
	CreditedAt time.Time `json:"credited_at"`
}

// DeadLetter is a record that a stage could not process.
type DeadLetter struct {
	SchemaVersion int       `json:"schema_version"`
	Stage         string    `json:"stage"`
	Reason        string    `json:"reason"`
	SourceTopic   string    `json:"source_topic"`
	Partition     int       `json:"source_partition"`
	Offset        int64     `json:"source_offset"`
	Key           []byte    `json:"key,omitempty"`
	Value         []byte    `json:"value"`
	FailedAt      time.Time `json:"failed_at"`
}
