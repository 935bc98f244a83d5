package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/sandbox"
	"github.com/murphy-rl/murphy/tasks"
	"github.com/murphy-rl/murphy/tasks/submit"
	"github.com/murphy-rl/murphy/topics"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func newSubmitCmd() *cobra.Command {
	cfg := submit.DefaultConfig()
	cfg.RunID = ""
	var (
		file, format, prefix string
		ks                   *kafkaSettings
		partitions           int
		timeout              time.Duration
		calibrated           = true
	)
	cmd := &cobra.Command{
		Use:   "submit --tasks FILE",
		Short: "Publish tasks and one root prompt per tree to Kafka",
		Long: `Submit reads a task file, publishes every task to the compacted tasks topic
(key task_id) and one root prompt per tree to the prompts topic (key tree_id),
K trees per task with G samples in the root group. Tree ids are
<run-id>/<task-id>/<k>, unique per run. A broken line of the task file is
reported with its line number and skipped; the other tasks still go.`,
		Example: "  murphy submit --tasks HumanEval.jsonl.gz --group-size 8 --trees-per-task 2 --brokers 127.0.0.1:9092",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return &exitError{code: 2, err: errors.New("submit: --tasks is required")}
			}
			if cfg.RunID == "" {
				cfg.RunID = "run-" + time.Now().UTC().Format("20060102T150405")
			}
			if err := cfg.Validate(); err != nil {
				return &exitError{code: 2, err: err}
			}
			cat := topics.Catalog{Prefix: prefix, Partitions: partitions}
			if err := cat.Validate(); err != nil {
				return &exitError{code: 2, err: err}
			}
			kcfg, err := ks.config(cmd.Flags(), "murphy-submit")
			if err != nil {
				return &exitError{code: 2, err: fmt.Errorf("submit: %w", err)}
			}
			ts, lineErrs, err := tasks.Load(file, format)
			if err != nil {
				return fmt.Errorf("submit: %w", err)
			}
			stderr := cmd.ErrOrStderr()
			for _, le := range lineErrs {
				fmt.Fprintf(stderr, "%s:%d: skipped: %v\n", file, le.Line, le.Err)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			if calibrated {
				if err := calibrate(ctx, sandbox.DefaultConfig(), ts, stderr); err != nil {
					return fmt.Errorf("submit: %w (--calibrate=false publishes the tasks' fixed limits)", err)
				}
			}
			if err := pipeline.EnsureTopics(ctx, kcfg, cat); err != nil {
				return fmt.Errorf("submit: %w", err)
			}
			prod := pipeline.NewProducer(kcfg)
			defer prod.Close()
			rep, err := submit.Publish(ctx, prod, cat, cfg, ts, 0)
			for _, e := range rep.Skipped {
				fmt.Fprintf(stderr, "%s: skipped: %v\n", file, e)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "run %s: %d tasks to %s, %d root prompts (G=%d, K=%d, %d turns) to %s; %d records skipped\n",
				cfg.RunID, rep.Tasks, cat.Topic(topics.Tasks), rep.Trees, cfg.GroupSize, cfg.TreesPerTask, cfg.MaxTurns,
				cat.Topic(topics.Prompts), len(lineErrs)+len(rep.Skipped))
			if rep.Tasks == 0 {
				return &exitError{code: 1, err: errors.New("submit: no valid task in " + file)}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&file, "tasks", "", "task file (JSONL, JSONL.gz or JSON array)")
	f.StringVar(&format, "format", "", "task format: "+strings.Join(tasks.Formats(), ", ")+" (default: detected)")
	addTreeFlags(f, &cfg, "run-<UTC time>")
	ks = addKafkaFlags(f)
	f.StringVar(&prefix, "topic-prefix", topics.DefaultCatalog().Prefix, "topic name prefix")
	f.IntVar(&partitions, "partitions", topics.DefaultCatalog().Partitions, "partitions of topics created by submit")
	f.DurationVar(&timeout, "timeout", 5*time.Minute, "give up publishing after this long")
	f.BoolVar(&calibrated, "calibrate", calibrated, "derive each task's CPU time limit from its reference in a local sandbox pool before publishing (as murphy run); needs root and bubblewrap")
	return cmd
}

// kafkaSettings are the Kafka client settings of a publishing command
// (murphy submit, murphy backfill submit): the kafka.* settings every
// stage takes (brokers, SASL, TLS), from --config, MURPHY_KAFKA__* and
// --kafka.* flags, with --brokers kept as the short form of
// --kafka.brokers.
type kafkaSettings struct {
	Kafka   pipeline.KafkaConfig `yaml:"kafka"`
	path    string
	brokers []string
}

// addKafkaFlags registers --config, --brokers and the kafka.* flags.
func addKafkaFlags(f *pflag.FlagSet) *kafkaSettings {
	s := &kafkaSettings{Kafka: pipeline.DefaultKafkaConfig()}
	f.StringVar(&s.path, "config", "", "YAML configuration file: its kafka section (brokers, sasl, tls) is used")
	f.StringSliceVar(&s.brokers, "brokers", brokersDefault(), "Kafka bootstrap brokers (env MURPHY_BROKERS; the short form of --kafka.brokers)")
	walkPrefix(f, "kafka.", &s.Kafka)
	return s
}

// config resolves the settings (defaults, file, environment, flags) into
// a validated KafkaConfig named clientID.
func (s *kafkaSettings) config(f *pflag.FlagSet, clientID string) (pipeline.KafkaConfig, error) {
	if err := loadConfig(f, s.path, s); err != nil {
		return pipeline.KafkaConfig{}, err
	}
	kc := s.Kafka
	if f.Changed("brokers") || (!f.Changed("kafka.brokers") && os.Getenv("MURPHY_BROKERS") != "") {
		kc.Brokers = s.brokers
	}
	kc.ClientID = clientID
	if err := kc.Validate(); err != nil {
		return pipeline.KafkaConfig{}, err
	}
	return kc, nil
}

// addTreeFlags registers the flags of the trees a submission starts (G,
// K, turns, run id, reward policy, node cap, seed) on cfg.
func addTreeFlags(f *pflag.FlagSet, cfg *submit.Config, runIDDefault string) {
	f.IntVarP(&cfg.GroupSize, "group-size", "g", cfg.GroupSize, "G: samples in the root group")
	f.IntSliceVar(&cfg.GroupSizes, "group-sizes", nil, "group size per turn, the last repeating (overrides --group-size)")
	f.IntVarP(&cfg.TreesPerTask, "trees-per-task", "k", cfg.TreesPerTask, "K: trees (root prompts) per task")
	f.IntVar(&cfg.MaxTurns, "max-turns", cfg.MaxTurns, "T: turns per tree")
	f.StringVar(&cfg.RunID, "run-id", "", "run id in tree ids (default: "+runIDDefault+")")
	f.StringVar(&cfg.RewardPolicy, "reward-policy", "", "override the tasks' reward policy: pass_rate, binary or tiered")
	f.IntVar(&cfg.MaxNodes, "max-nodes", 0, "cap on the nodes of one tree (0 = none)")
	f.Int64Var(&cfg.Seed, "seed", cfg.Seed, "seed carried by every tree")
}

func brokersDefault() []string {
	if v := os.Getenv("MURPHY_BROKERS"); v != "" {
		return strings.Split(v, ",")
	}
	return pipeline.DefaultKafkaConfig().Brokers
}
