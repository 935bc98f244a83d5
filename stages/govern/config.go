package govern

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/template"
	"time"

	"github.com/murphy-rl/murphy/compilefix"
	"github.com/murphy-rl/murphy/stages/govern/judge"
	"github.com/murphy-rl/murphy/tasks"
	"github.com/murphy-rl/murphy/topics"
)

// Judge names for Config.Judges and Config.CompileFixJudges.
const (
	JudgeTests          = judge.NameTests
	JudgeReferencePatch = judge.NameReferencePatch
	JudgeArtifact       = judge.NameArtifact
	JudgeLLM            = judge.NameLLM
)

// Scorer names for Config.Scorer.
const (
	ScorerNone      = "none"
	ScorerHeuristic = "heuristic"
	ScorerLLM       = "llm"
)

// What to do with a sample whose step scorer failed (Config.ScorerFailure).
const (
	// ScorerFailureMask routes the sample masked with cause infra.scorer.
	ScorerFailureMask = "mask"
	// ScorerFailureUnscored keeps the sample on its route with uniform
	// loss weights and no step scores.
	ScorerFailureUnscored = "unscored"
)

// Config configures the govern stage.
type Config struct {
	// RewardPolicy is the run default reward policy: pass_rate, binary or
	// tiered. A task's reward_policy overrides it, and a tree's
	// TreeSpec.RewardPolicy overrides both.
	RewardPolicy string `yaml:"reward_policy"`
	// Tiers are the rewards of the tiered policy.
	Tiers Tiers `yaml:"tiers"`
	// Judges is the chain of semantic judges, asked in order; the first one
	// that does not abstain decides whether a candidate is correct. When all
	// abstain the tests decide. Names: tests, reference_patch, llm.
	Judges []string `yaml:"judges"`
	// CompileFixJudges is the chain for compile-fix candidates whose patch
	// builds (and passes the task's tests command): the first judge that
	// does not abstain decides whether the repair is consistent with the
	// reference (1) or not (the middle tier); when all abstain it is not.
	// Names: reference_patch (token equality), artifact (equal compiled
	// artifacts, see artifact), llm. Add llm last for reference tokens, then
	// artifacts, then the LLM.
	CompileFixJudges []string `yaml:"compile_fix_judges"`
	// Artifact is the artifact judge's workspace store, snapshot cache and
	// build sandbox (its own uid range). An empty store: the artifact judge
	// abstains (murphy run sets it to execute's store).
	Artifact compilefix.Config `yaml:"artifact"`
	// TestsGate makes the tests a necessary condition: a candidate that
	// fails any test is wrong and the judge chain is asked only about
	// candidates that pass every test. Off, the chain also judges failing
	// candidates (for weak tests, e.g. a build that only has to compile).
	TestsGate bool `yaml:"tests_gate"`
	// ReferencePatch configures the reference-patch judge.
	ReferencePatch ReferencePatchConfig `yaml:"reference_patch"`
	// LLMJudge configures the LLM judge.
	LLMJudge LLMJudgeConfig `yaml:"llm_judge"`
	// LLM is the OpenAI-compatible server of the LLM judge and scorer, used
	// when the stage is not handed a ChatModel.
	LLM LLMConfig `yaml:"llm"`
	// Scorer is the step scorer of multi-step responses that are not agent
	// episodes, whose scores become loss weights: none, heuristic or llm.
	Scorer string `yaml:"scorer"`
	// EpisodeScorer is the step scorer of agent episodes (candidates with
	// tool steps): none, heuristic (by the tools' roles) or llm. Only
	// episodes whose patch compiled (passed, wrong_answer) are scored.
	EpisodeScorer string `yaml:"episode_scorer"`
	// Heuristic configures the heuristic step scorer.
	Heuristic HeuristicConfig `yaml:"heuristic"`
	// LLMScorer configures the LLM step scorer.
	LLMScorer LLMScorerConfig `yaml:"llm_scorer"`
	// ScorerFailure says what happens to a sample whose scorer failed:
	// mask (cause infra.scorer) or unscored (uniform weights).
	ScorerFailure string `yaml:"scorer_failure"`
	// ScorerWholeResponses asks the scorer about single-step responses
	// (no step boundaries) too, so that it may rescale the whole response.
	// Off, such a response keeps weight 1 and no scores.
	ScorerWholeResponses bool `yaml:"scorer_whole_responses"`
	// Repetition configures the repetition-loop detector.
	Repetition RepetitionConfig `yaml:"repetition"`
	// MaxSteps is the largest number of steps (tool calls/turns) a response
	// may have before it is degenerate (0 = no limit).
	MaxSteps int `yaml:"max_steps"`
	// TruncationReasons are the finish reasons that mean the response was
	// cut at max tokens (degenerate, cause degenerate.truncated).
	TruncationReasons []string `yaml:"truncation_reasons"`
	// HarnessTimeoutMarkers are lower-case fragments of a sandbox_error
	// message that mean the harness itself timed out (infra.harness_timeout)
	// rather than some other sandbox failure (infra.sandbox).
	HarnessTimeoutMarkers []string `yaml:"harness_timeout_markers"`
	// GroupStats overrides, per non-normal cause, whether a masked or
	// penalised sample counts in its group's mean/std. Keys are causes such
	// as infra.inference or degenerate.truncated. Causes not listed count,
	// except judge and scorer outages (infra.judge, infra.scorer): their
	// reward says nothing about the candidate, so by default they do not.
	GroupStats map[string]bool `yaml:"group_stats"`
	// MaskedReward is the reward recorded on masked samples. It matters only
	// where the cause counts in group statistics.
	MaskedReward float64 `yaml:"masked_reward"`
	// PenaltyReward is the reward of a last_step_penalty sample.
	PenaltyReward float64 `yaml:"penalty_reward"`
	// PenaltyWeight is the loss weight of the kept last step of a
	// last_step_penalty sample.
	PenaltyWeight float64 `yaml:"penalty_weight"`
	// Expansion configures refinement prompts.
	Expansion ExpansionConfig `yaml:"expansion"`
	// TaskWait is how long an execution waits for its task to appear in the
	// task lookup before it is dead-lettered as task_not_found (tasks.Await).
	TaskWait time.Duration `yaml:"task_wait"`
	// Concurrency is the number of executions governed at once per input
	// (LLM judges make this worth more than 1).
	Concurrency int `yaml:"concurrency"`
}

// Tiers are the rewards of the tiered policy.
type Tiers struct {
	// NoCompile is the reward of a candidate that does not compile or parse.
	NoCompile float64 `yaml:"no_compile"`
	// Wrong is the reward of a candidate that compiles and runs but is judged
	// semantically wrong.
	Wrong float64 `yaml:"wrong"`
	// Unsure is the reward of a candidate that compiles and runs and whose
	// judge answered unsure (the LLM judge's third verdict).
	Unsure float64 `yaml:"unsure"`
	// Correct is the reward of a correct candidate.
	Correct float64 `yaml:"correct"`
}

// ReferencePatchConfig configures the reference-patch judge.
type ReferencePatchConfig struct {
	// MismatchAbstains makes a candidate whose patch differs from the
	// reference pass to the next judge instead of being judged wrong
	// (another fix may be valid too). On by default.
	MismatchAbstains bool `yaml:"mismatch_abstains"`
}

// LLMJudgeConfig configures the LLM judge.
type LLMJudgeConfig struct {
	// Rubric is the system prompt; empty means DefaultJudgeRubric.
	Rubric string `yaml:"rubric"`
	// IncludeReference shows the task's reference patch, else its
	// reference solution, to the judge when the task has one. On by default.
	IncludeReference bool `yaml:"include_reference"`
	// MaxCodeBytes caps the candidate program shown to the judge.
	MaxCodeBytes int `yaml:"max_code_bytes"`
	// Attempts is how many times an unparsable answer is asked again before
	// the judgement fails (infrastructure).
	Attempts int `yaml:"attempts"`
	// CacheSize is the number of judgements kept, by (task, candidate hash).
	CacheSize int `yaml:"cache_size"`
	// Timeout bounds one judgement, all attempts together.
	Timeout time.Duration `yaml:"timeout"`
}

// LLMScorerConfig configures the LLM step scorer.
type LLMScorerConfig struct {
	// Rubric is the system prompt; empty means DefaultScorerRubric.
	Rubric string `yaml:"rubric"`
	// MaxStepBytes caps the text of one step shown to the scorer.
	MaxStepBytes int `yaml:"max_step_bytes"`
	// Attempts is how many times an unparsable answer is asked again.
	Attempts int `yaml:"attempts"`
	// CacheSize is the number of scored responses kept.
	CacheSize int `yaml:"cache_size"`
	// Timeout bounds one scoring, all attempts together.
	Timeout time.Duration `yaml:"timeout"`
}

// HeuristicConfig configures the heuristic step scorer.
type HeuristicConfig struct {
	// RepeatedInspectionScore scores a step that reads a file already read
	// with no edit to it in between.
	RepeatedInspectionScore float64 `yaml:"repeated_inspection_score"`
	// NoOpEditScore scores an edit that changes nothing (old == new, an
	// empty patch, or rewriting a file with the content it already got).
	NoOpEditScore float64 `yaml:"no_op_edit_score"`
	// RepeatedActionScore scores a step identical to an earlier one (same
	// tool and arguments, or the same tokens).
	RepeatedActionScore float64 `yaml:"repeated_action_score"`
	// InspectTools are tool names that read a file.
	InspectTools []string `yaml:"inspect_tools"`
	// EditTools are tool names that change a file.
	EditTools []string `yaml:"edit_tools"`
	// ShellTools are tool names whose "command" argument is a shell command;
	// cat/head/tail/less/more/nl/sed -n on a file count as inspections.
	ShellTools []string `yaml:"shell_tools"`
}

// ExpansionConfig configures refinement prompts.
type ExpansionConfig struct {
	// Enabled turns expansion on; off, every node is a leaf.
	Enabled bool `yaml:"enabled"`
	// Template is the text/template of a refinement prompt; empty means
	// DefaultRefinementTemplate. Fields: see RefinementData.
	Template string `yaml:"template"`
	// MaxPromptBytes caps a refinement prompt. The task is always kept
	// whole; the feedback and then the failed program are shortened
	// (head and tail kept) to fit.
	MaxPromptBytes int `yaml:"max_prompt_bytes"`
	// SkipCauses are normal causes that are never expanded (e.g. timeout,
	// whose feedback says little).
	SkipCauses []string `yaml:"skip_causes"`
}

// DefaultConfig returns the defaults: pass_rate rewards with the tests as the
// only judge, compile-fix repairs judged by reference tokens then compiled
// artifacts, heuristic process scores for agent episodes (none for other
// responses), expansion on, every cause but judge and scorer outages
// counting in group statistics.
func DefaultConfig() Config {
	return Config{
		RewardPolicy:     topics.RewardPassRate,
		Tiers:            Tiers{NoCompile: 0, Wrong: 0.5, Unsure: 0.5, Correct: 1},
		Judges:           []string{JudgeTests},
		CompileFixJudges: []string{JudgeReferencePatch, JudgeArtifact},
		Artifact:         defaultArtifactConfig(),
		TestsGate:        true,
		ReferencePatch:   ReferencePatchConfig{MismatchAbstains: true},
		LLMJudge: LLMJudgeConfig{
			IncludeReference: true,
			MaxCodeBytes:     12 << 10,
			Attempts:         2,
			CacheSize:        4096,
			Timeout:          2 * time.Minute,
		},
		LLM:           DefaultLLMConfig(),
		Scorer:        ScorerNone,
		EpisodeScorer: ScorerHeuristic,
		Heuristic: HeuristicConfig{
			RepeatedInspectionScore: 0.2,
			NoOpEditScore:           0,
			RepeatedActionScore:     0.1,
			InspectTools:            []string{"read_file", "view_file", "open_file", "view", "open", "read", "cat", "show_file", "inspect_file"},
			EditTools:               []string{"edit", "edit_file", "write_file", "create_file", "str_replace", "replace", "insert", "apply_patch", "patch"},
			ShellTools:              []string{"bash", "shell", "run", "execute", "terminal", "run_command"},
		},
		LLMScorer: LLMScorerConfig{
			MaxStepBytes: 2 << 10,
			Attempts:     2,
			CacheSize:    4096,
			Timeout:      2 * time.Minute,
		},
		ScorerFailure:         ScorerFailureMask,
		Repetition:            DefaultRepetitionConfig(),
		MaxSteps:              64,
		TruncationReasons:     []string{"length"},
		HarnessTimeoutMarkers: []string{"harness timeout", "harness timed out", "deadline exceeded", "worker timed out", "sandbox timeout"},
		MaskedReward:          0,
		PenaltyReward:         0,
		PenaltyWeight:         1,
		Expansion: ExpansionConfig{
			Enabled:        true,
			MaxPromptBytes: 16 << 10,
		},
		Concurrency: 32,
		TaskWait:    tasks.DefaultTaskWait,
	}
}

// Validate checks the configuration.
func (c Config) Validate() error {
	var errs []error
	errs = append(errs, c.rewardErrors()...)
	errs = append(errs, c.judgeErrors()...)
	errs = append(errs, c.scorerErrors()...)
	errs = append(errs, c.shapingErrors()...)
	errs = append(errs, c.expansionErrors()...)
	if c.usesLLM() {
		if err := c.LLM.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.TaskWait < 0 {
		errs = append(errs, fmt.Errorf("task_wait must be >= 0, got %s", c.TaskWait))
	}
	if c.Concurrency < 1 {
		errs = append(errs, fmt.Errorf("concurrency must be >= 1, got %d", c.Concurrency))
	}
	if len(errs) > 0 {
		return fmt.Errorf("govern config: %w", errors.Join(errs...))
	}
	return nil
}

// rewardErrors checks the reward policy and its tiers.
func (c Config) rewardErrors() []error {
	var errs []error
	if !validPolicy(c.RewardPolicy) {
		errs = append(errs, fmt.Errorf("reward_policy %q: want pass_rate, binary or tiered", c.RewardPolicy))
	}
	for _, v := range []float64{c.Tiers.NoCompile, c.Tiers.Wrong, c.Tiers.Unsure, c.Tiers.Correct} {
		if v < 0 || v > 1 {
			errs = append(errs, fmt.Errorf("tiers must lie in [0,1], got %+v", c.Tiers))
			break
		}
	}
	if !(c.Tiers.NoCompile <= c.Tiers.Wrong && c.Tiers.Wrong <= c.Tiers.Correct) {
		errs = append(errs, fmt.Errorf("tiers must be ordered no_compile <= wrong <= correct, got %+v", c.Tiers))
	}
	if !(c.Tiers.NoCompile <= c.Tiers.Unsure && c.Tiers.Unsure <= c.Tiers.Correct) {
		errs = append(errs, fmt.Errorf("tiers must be ordered no_compile <= unsure <= correct, got %+v", c.Tiers))
	}
	return errs
}

// judgeErrors checks the two judge lists, the artifact judge's config
// when it is listed with a store, and the LLM judge's when compile-fix
// lists it.
func (c Config) judgeErrors() []error {
	errs := judgeListErrors("judges", c.Judges, []string{JudgeTests, JudgeReferencePatch, JudgeLLM}, "tests, reference_patch, llm")
	errs = append(errs, judgeListErrors("compile_fix_judges", c.CompileFixJudges, []string{JudgeReferencePatch, JudgeArtifact, JudgeLLM}, "reference_patch, artifact, llm")...)
	if c.Artifact.Store != "" && slices.Contains(c.CompileFixJudges, JudgeArtifact) {
		if err := c.Artifact.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("artifact: %w", err))
		}
	}
	return errs
}

// judgeListErrors checks that a judge list names only known judges
// (listed in hint), each once.
func judgeListErrors(field string, judges, known []string, hint string) []error {
	var errs []error
	seen := map[string]bool{}
	for _, j := range judges {
		if !slices.Contains(known, j) {
			errs = append(errs, fmt.Errorf("%s: unknown judge %q (%s)", field, j, hint))
		}
		if seen[j] {
			errs = append(errs, fmt.Errorf("%s: %q listed twice", field, j))
		}
		seen[j] = true
	}
	return errs
}

// scorerErrors checks the step and episode scorers, what a scorer's
// failure does, the heuristic scorer's scores, the LLM judge's config
// when compile-fix lists it, and the LLM scorer's when one is used.
func (c Config) scorerErrors() []error {
	var errs []error
	for name, v := range map[string]string{"scorer": c.Scorer, "episode_scorer": c.EpisodeScorer} {
		switch v {
		case ScorerNone, ScorerHeuristic, ScorerLLM:
		default:
			errs = append(errs, fmt.Errorf("%s %q: want none, heuristic or llm", name, v))
		}
	}
	switch c.ScorerFailure {
	case ScorerFailureMask, ScorerFailureUnscored:
	default:
		errs = append(errs, fmt.Errorf("scorer_failure %q: want mask or unscored", c.ScorerFailure))
	}
	h := c.Heuristic
	for _, v := range []float64{h.RepeatedInspectionScore, h.NoOpEditScore, h.RepeatedActionScore} {
		if v < 0 || v > 1 {
			errs = append(errs, fmt.Errorf("heuristic scores must lie in [0,1], got %+v", h))
			break
		}
	}
	if slices.Contains(c.CompileFixJudges, JudgeLLM) {
		errs = append(errs, c.LLMJudge.validate("llm_judge")...)
	}
	if c.Scorer == ScorerLLM || c.EpisodeScorer == ScorerLLM {
		if c.LLMScorer.MaxStepBytes < 64 {
			errs = append(errs, fmt.Errorf("llm_scorer.max_step_bytes must be >= 64, got %d", c.LLMScorer.MaxStepBytes))
		}
		errs = append(errs, llmCommon("llm_scorer", c.LLMScorer.Attempts, c.LLMScorer.CacheSize, c.LLMScorer.Timeout)...)
	}
	return errs
}

// shapingErrors checks what shapes a reward after the judges: the
// repetition detector, the step cap, the group-stats causes, the penalty
// weight and the masked and penalty rewards.
func (c Config) shapingErrors() []error {
	var errs []error
	if err := c.Repetition.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.MaxSteps < 0 {
		errs = append(errs, fmt.Errorf("max_steps must be >= 0, got %d", c.MaxSteps))
	}
	for cause := range c.GroupStats {
		if !isConfigurableCause(cause) {
			errs = append(errs, fmt.Errorf("group_stats: %q is not an infrastructure or degeneration cause", cause))
		}
	}
	if c.PenaltyWeight < 0 || c.PenaltyWeight > 1 {
		errs = append(errs, fmt.Errorf("penalty_weight must lie in [0,1], got %g", c.PenaltyWeight))
	}
	for _, v := range []float64{c.MaskedReward, c.PenaltyReward} {
		if v != v || v < -1e9 || v > 1e9 {
			errs = append(errs, fmt.Errorf("masked_reward/penalty_reward must be finite, got %g", v))
		}
	}
	return errs
}

// expansionErrors checks the expansion prompts' size, template and
// skipped causes.
func (c Config) expansionErrors() []error {
	var errs []error
	if c.Expansion.MaxPromptBytes < 256 {
		errs = append(errs, fmt.Errorf("expansion.max_prompt_bytes must be >= 256, got %d", c.Expansion.MaxPromptBytes))
	}
	if _, err := parseTemplate(c.Expansion.Template); err != nil {
		errs = append(errs, err)
	}
	for _, cause := range c.Expansion.SkipCauses {
		if classOf(cause) != ClassNormal || cause == CausePassed {
			errs = append(errs, fmt.Errorf("expansion.skip_causes: %q is not a normal failure cause", cause))
		}
	}
	return errs
}

// usesLLM reports whether the LLM judge or the LLM scorer is configured.
func (c Config) usesLLM() bool {
	return slices.Contains(c.Judges, JudgeLLM) || slices.Contains(c.CompileFixJudges, JudgeLLM) || c.Scorer == ScorerLLM ||
		c.EpisodeScorer == ScorerLLM
}

// DefaultArtifactUIDBase is the first uid of the artifact judge's build
// sandbox: apart from execute's (63000) and the episodes' (64000).
const DefaultArtifactUIDBase = 66000

func defaultArtifactConfig() compilefix.Config {
	c := compilefix.DefaultConfig()
	c.Builder.UIDBase = DefaultArtifactUIDBase
	// Two builds per comparison at most, only for candidates that build:
	// a small pool.
	c.Builder.Workers = 2
	return c
}

func (c LLMJudgeConfig) validate(name string) []error {
	var errs []error
	if c.MaxCodeBytes < 64 {
		errs = append(errs, fmt.Errorf("%s.max_code_bytes must be >= 64, got %d", name, c.MaxCodeBytes))
	}
	return append(errs, llmCommon(name, c.Attempts, c.CacheSize, c.Timeout)...)
}

func llmCommon(name string, attempts, cache int, timeout time.Duration) []error {
	var errs []error
	if attempts < 1 {
		errs = append(errs, fmt.Errorf("%s.attempts must be >= 1, got %d", name, attempts))
	}
	if cache < 0 {
		errs = append(errs, fmt.Errorf("%s.cache_size must be >= 0, got %d", name, cache))
	}
	if timeout <= 0 {
		errs = append(errs, fmt.Errorf("%s.timeout must be > 0, got %s", name, timeout))
	}
	return errs
}

func validPolicy(p string) bool {
	switch p {
	case topics.RewardPassRate, topics.RewardBinary, topics.RewardTiered:
		return true
	}
	return false
}

func parseTemplate(text string) (*template.Template, error) {
	if strings.TrimSpace(text) == "" {
		text = DefaultRefinementTemplate
	}
	t, err := template.New("refinement").Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, fmt.Errorf("expansion.template: %w", err)
	}
	// Execute once on empty data so that references to unknown fields fail
	// at configuration time, not on the first record.
	var sb strings.Builder
	if err := t.Execute(&sb, RefinementData{}); err != nil {
		return nil, fmt.Errorf("expansion.template: %w", err)
	}
	return t, nil
}
