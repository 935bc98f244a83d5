// Package submit seeds trees: it publishes tasks to the compacted tasks topic
// and one root prompt per tree to the prompts topic.
package submit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/topics"
)

// Config says how trees are seeded from tasks.
type Config struct {
	// RunID names the run; tree ids are topics.TreeID(RunID, task, k), so
	// they are unique per run.
	RunID string `yaml:"run_id"`
	// GroupSize is G, the number of children sampled at turn 1.
	GroupSize int `yaml:"group_size"`
	// GroupSizes optionally sets the group size per turn (the last entry
	// repeats); empty means GroupSize at every turn.
	GroupSizes []int `yaml:"group_sizes"`
	// TreesPerTask is K, the number of trees (root prompts) per task.
	TreesPerTask int `yaml:"trees_per_task"`
	// MaxTurns is the depth of a tree.
	MaxTurns int `yaml:"max_turns"`
	// RewardPolicy overrides the tasks' reward policy ("" keeps theirs).
	RewardPolicy string `yaml:"reward_policy"`
	// MaxNodes caps the nodes of one tree (0 = no cap).
	MaxNodes int `yaml:"max_nodes"`
	// Seed travels with every tree (TreeSpec.Seed).
	Seed int64 `yaml:"seed"`
}

// DefaultConfig is G=8, one tree per task, three turns.
func DefaultConfig() Config {
	return Config{RunID: "run", GroupSize: 8, TreesPerTask: 1, MaxTurns: 3, Seed: 1}
}

// Validate checks the configuration.
func (c Config) Validate() error {
	var errs []error
	if c.RunID == "" || strings.ContainsAny(c.RunID, "/ \t\n") {
		errs = append(errs, fmt.Errorf("run_id %q must be non-empty, without '/' or spaces", c.RunID))
	}
	if c.GroupSize < 1 {
		errs = append(errs, fmt.Errorf("group_size must be >= 1, got %d", c.GroupSize))
	}
	for _, g := range c.GroupSizes {
		if g < 1 {
			errs = append(errs, fmt.Errorf("group_sizes entries must be >= 1, got %d", g))
		}
	}
	if c.TreesPerTask < 1 {
		errs = append(errs, fmt.Errorf("trees_per_task must be >= 1, got %d", c.TreesPerTask))
	}
	if c.MaxTurns < 1 {
		errs = append(errs, fmt.Errorf("max_turns must be >= 1, got %d", c.MaxTurns))
	}
	switch c.RewardPolicy {
	case "", topics.RewardPassRate, topics.RewardBinary, topics.RewardTiered:
	default:
		errs = append(errs, fmt.Errorf("reward_policy %q unknown", c.RewardPolicy))
	}
	if c.MaxNodes < 0 {
		errs = append(errs, fmt.Errorf("max_nodes must be >= 0, got %d", c.MaxNodes))
	}
	if len(errs) > 0 {
		return fmt.Errorf("submit config: %w", errors.Join(errs...))
	}
	return nil
}

// RootPromptText is the turn-1 prompt for a task: an instruction by task
// kind followed by the task's own prompt. A compile-fix task asks for a
// unified diff against the files the prompt shows, not for a program.
func RootPromptText(t *topics.Task) string {
	var instr string
	switch t.Kind {
	case topics.KindStdio:
		instr = "Write a complete Python program that reads from standard input and writes the answer to standard output."
	case topics.KindCompileFix:
		goal := "builds"
		if t.CompileFix != nil && len(t.CompileFix.Tests) > 0 {
			goal = "builds and its tests pass"
		}
		return "Fix the code below so that it " + goal + ", changing as little as possible." +
			" Reply with a unified diff (git style: --- a/<path> and +++ b/<path> headers, paths relative to the" +
			" repository root, @@ hunks with three lines of context) against the files as shown, in one ```diff code block.\n\n" +
			t.Prompt
	default:
		instr = "Complete the Python function below."
	}
	return instr + " Reply with the whole program in one ```python code block.\n\n" + t.Prompt
}

// RootPrompts builds the K root prompts of task t.
func RootPrompts(cfg Config, t *topics.Task, now time.Time) []*topics.Prompt {
	sizes := cfg.GroupSizes
	if len(sizes) == 0 {
		sizes = []int{cfg.GroupSize}
	}
	rp := cfg.RewardPolicy
	if rp == "" {
		rp = t.RewardPolicy
	}
	text := RootPromptText(t)
	out := make([]*topics.Prompt, cfg.TreesPerTask)
	for k := range out {
		tree := topics.TreeID(cfg.RunID, t.TaskID, k)
		out[k] = &topics.Prompt{
			SchemaVersion: topics.SchemaVersion,
			TreeSpec: topics.TreeSpec{MaxTurns: cfg.MaxTurns, GroupSizes: append([]int(nil), sizes...),
				RewardPolicy: rp, MaxNodes: cfg.MaxNodes, RunID: cfg.RunID, Seed: cfg.Seed},
			TreeID: tree, TaskID: t.TaskID, ParentID: "", GroupID: topics.RootID(tree),
			Turn: 1, GroupSize: sizes[0], Text: text,
			Messages:  []topics.Message{{Role: "user", Content: text}},
			CreatedAt: now.UTC(),
		}
	}
	return out
}

// Report says what Publish published.
type Report struct {
	Tasks   int
	Trees   int
	Skipped []error // tasks that failed validation
	// AlreadyTasks and AlreadyTrees count the task records and root
	// prompts left out because SkipPublished said they were on the broker.
	AlreadyTasks int
	AlreadyTrees int
}

// Option changes where Publish publishes and what it leaves out.
type Option func(*options)

type options struct {
	prompts   topics.Name
	published func(topic, key string) bool
}

// PromptsTo publishes the root prompts to topic n of the catalog instead of
// prompts (a backfill job: topics.BackfillPrompts).
func PromptsTo(n topics.Name) Option {
	return func(o *options) { o.prompts = n }
}

// SkipPublished leaves out every record for which published(topic, key)
// is true (key: the task id on the tasks topic, the tree id on the prompts
// topic), so that a resumed job publishes each record once; they are
// counted in Report.AlreadyTasks and AlreadyTrees.
func SkipPublished(published func(topic, key string) bool) Option {
	return func(o *options) { o.published = published }
}

// Publish publishes tasks to the compacted tasks topic (key task_id), then
// one root prompt per tree to the prompts topic (key tree_id). A task that
// fails validation is skipped and reported; the others still go. Records
// are produced in batches of batch (0 = 500). Options change the prompts'
// topic (PromptsTo) and leave out what is already published
// (SkipPublished).
func Publish(ctx context.Context, prod pipeline.Producer, cat topics.Catalog, cfg Config, tasks []topics.Task, batch int, opts ...Option) (Report, error) {
	var rep Report
	o := options{prompts: topics.Prompts, published: func(string, string) bool { return false }}
	for _, opt := range opts {
		opt(&o)
	}
	taskTopic, promptTopic := cat.Topic(topics.Tasks), cat.Topic(o.prompts)
	if err := cfg.Validate(); err != nil {
		return rep, err
	}
	if batch <= 0 {
		batch = 500
	}
	var outs []pipeline.Out
	flush := func() error {
		if len(outs) == 0 {
			return nil
		}
		if err := prod.Produce(ctx, outs...); err != nil {
			return fmt.Errorf("submit: produce: %w", err)
		}
		outs = outs[:0]
		return nil
	}
	var good []*topics.Task
	seen := map[string]bool{}
	for i := range tasks {
		t := &tasks[i]
		if t.SchemaVersion == 0 {
			t.SchemaVersion = topics.SchemaVersion
		}
		if seen[t.TaskID] {
			rep.Skipped = append(rep.Skipped, fmt.Errorf("task %q: duplicate task id", t.TaskID))
			continue
		}
		b, err := topics.Encode(t)
		if err != nil {
			rep.Skipped = append(rep.Skipped, fmt.Errorf("task %q: %w", t.TaskID, err))
			continue
		}
		seen[t.TaskID] = true
		good = append(good, t)
		if o.published(taskTopic, t.TaskID) {
			rep.AlreadyTasks++
			continue
		}
		outs = append(outs, pipeline.Out{Topic: taskTopic, Key: t.TaskID, Value: b})
		rep.Tasks++
		if len(outs) >= batch {
			if err := flush(); err != nil {
				return rep, err
			}
		}
	}
	// Every task is on the broker before the first prompt that needs it.
	if err := flush(); err != nil {
		return rep, err
	}
	now := time.Now()
	for _, t := range good {
		for _, p := range RootPrompts(cfg, t, now) {
			if o.published(promptTopic, p.TreeID) {
				rep.AlreadyTrees++
				continue
			}
			b, err := topics.Encode(p)
			if err != nil {
				return rep, fmt.Errorf("submit: prompt for %s: %w", p.TreeID, err)
			}
			outs = append(outs, pipeline.Out{Topic: promptTopic, Key: p.TreeID, Value: b})
			rep.Trees++
			if len(outs) >= batch {
				if err := flush(); err != nil {
					return rep, err
				}
			}
		}
	}
	return rep, flush()
}
