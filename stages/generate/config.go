// Package generate is the generate stage: prompts → candidates (DESIGN §4).
//
// It consumes root prompts (topic prompts, from `murphy submit` or a
// backfill) and refinement prompts (topic refinements, from govern) and
// emits exactly GroupSize candidates per prompt, with node ids
// topics.NodeID(tree, group, index), sampled from a policy.Policy. When the
// policy fails after its retries, the missing children are still emitted,
// marked infra.inference (or infra.context_overflow), so that every tree can
// complete. Refinements are served before root prompts, and root prompts are
// held back while the number of trees in flight is at its cap; see README.md.
// With Config.Episodes enabled, the children of compile-fix prompts are agent
// episodes over the task's workspace (episode.go).
package generate

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/murphy-rl/murphy/stages/generate/policy"
	"github.com/murphy-rl/murphy/tasks"
)

// Policy kinds.
const (
	PolicySimulated = "simulated"
	PolicyOpenAI    = "openai"
)

// PolicyConfig selects and configures the policy.
type PolicyConfig struct {
	// Kind is "simulated" (not a model: demos and tests) or "openai" (an
	// OpenAI-compatible inference server).
	Kind string `yaml:"kind"`
	// Simulated configures the simulated policy.
	Simulated policy.SimulatedConfig `yaml:"simulated"`
	// OpenAI configures the OpenAI-compatible policy.
	OpenAI policy.OpenAIConfig `yaml:"openai"`
}

// Config configures the generate stage.
type Config struct {
	// Policy is the policy candidates are sampled from.
	Policy PolicyConfig `yaml:"policy"`
	// Concurrency is the number of prompts generated at once (root and
	// refinement together). A free slot goes to a waiting refinement
	// before a waiting root prompt.
	Concurrency int `yaml:"concurrency"`
	// MaxTreesInFlight caps the trees this process has started (root
	// prompt generated) and not yet seen completed. Root prompts wait while
	// the cap is reached; refinements never wait. 0 disables the cap.
	MaxTreesInFlight int `yaml:"max_trees_in_flight"`
	// BackfillShare is the share of generation capacity (slot time, and
	// trees under max_trees_in_flight) that backfill root prompts (topic
	// backfill-prompts) get while live root prompts wait too; refinements
	// are served first whatever it says, and a stream waiting alone may use
	// every slot. 0 serves backfill only when no live root prompt waits; 1
	// serves it before live root prompts.
	BackfillShare float64 `yaml:"backfill_share"`
	// TreeTTL releases a tree's slot when no completion was seen for it
	// this long after its last prompt, so a lost completion cannot
	// hold the cap forever.
	TreeTTL time.Duration `yaml:"tree_ttl"`
	// TaskWait is how long a prompt waits for its task to appear in the
	// task lookup before it is dead-lettered as task_not_found (only
	// policies that need the task look it up; tasks.Await).
	TaskWait time.Duration `yaml:"task_wait"`
	// InstanceID names this process's own consumer group of the
	// completions topic, which every generate process reads whole to learn which trees
	// completed. It must be unique per process and should be stable across
	// restarts (a pod name), so a restarted process resumes its group
	// instead of reading the topic from the start; empty means the host
	// name (set it when several generate processes share a host).
	InstanceID string `yaml:"instance_id"`
	// Episodes configures agent episodes for compile-fix tasks
	// (episode.go): off by default.
	Episodes EpisodesConfig `yaml:"episodes"`
	// Versions follows the policy-versions topic (VERSIONS.md): off by default.
	Versions VersionsConfig `yaml:"versions"`
	// Staleness bounds generation to the trainers' max_staleness
	// (VERSIONS.md): off by default.
	Staleness StalenessConfig `yaml:"staleness"`
}

// DefaultConfig is the simulated policy with a cap of 256 trees in flight.
func DefaultConfig() Config {
	oa := policy.DefaultOpenAIConfig()
	return Config{
		Policy: PolicyConfig{
			Kind:      PolicySimulated,
			Simulated: policy.DefaultSimulatedConfig(),
			OpenAI:    oa,
		},
		Concurrency:      16,
		MaxTreesInFlight: 256,
		BackfillShare:    0.25,
		TreeTTL:          30 * time.Minute,
		TaskWait:         tasks.DefaultTaskWait,
		Episodes:         DefaultEpisodesConfig(),
		Versions:         DefaultVersionsConfig(),
		Staleness:        DefaultStalenessConfig(),
	}
}

// Validate checks the configuration.
func (c Config) Validate() error {
	var errs []error
	switch c.Policy.Kind {
	case PolicySimulated:
		if err := c.Policy.Simulated.Validate(); err != nil {
			errs = append(errs, err)
		}
	case PolicyOpenAI:
		if err := c.Policy.OpenAI.Validate(); err != nil {
			errs = append(errs, err)
		}
	default:
		errs = append(errs, fmt.Errorf("policy.kind must be %q or %q, got %q", PolicySimulated, PolicyOpenAI, c.Policy.Kind))
	}
	if c.Concurrency < 1 {
		errs = append(errs, fmt.Errorf("concurrency must be >= 1, got %d", c.Concurrency))
	}
	if c.MaxTreesInFlight < 0 {
		errs = append(errs, fmt.Errorf("max_trees_in_flight must be >= 0, got %d", c.MaxTreesInFlight))
	}
	if !(c.BackfillShare >= 0 && c.BackfillShare <= 1) {
		errs = append(errs, fmt.Errorf("backfill_share must be in [0, 1], got %v", c.BackfillShare))
	}
	if c.TreeTTL <= 0 {
		errs = append(errs, fmt.Errorf("tree_ttl must be > 0, got %s", c.TreeTTL))
	}
	if c.TaskWait < 0 {
		errs = append(errs, fmt.Errorf("task_wait must be >= 0, got %s", c.TaskWait))
	}
	if err := c.Episodes.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Versions.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Staleness.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.Episodes.Enabled && c.Policy.Kind == PolicyOpenAI && c.Policy.OpenAI.Client.TokenizePath == "" {
		errs = append(errs, errors.New("episodes need the server's tokenize endpoint (policy.openai.client.tokenize_path) to tokenize tool outputs"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("generate config: %w", errors.Join(errs...))
	}
	return nil
}

func (c Config) instanceID() string {
	if c.InstanceID != "" {
		return c.InstanceID
	}
	h, err := os.Hostname()
	if err != nil || h == "" {
		return fmt.Sprintf("pid%d", os.Getpid())
	}
	return h
}

// NewPolicy builds the policy cfg selects.
func NewPolicy(cfg PolicyConfig) (policy.Policy, error) {
	switch cfg.Kind {
	case PolicySimulated:
		return policy.NewSimulated(cfg.Simulated)
	case PolicyOpenAI:
		return policy.NewOpenAI(cfg.OpenAI)
	}
	return nil, fmt.Errorf("generate: unknown policy kind %q", cfg.Kind)
}
