package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/spf13/cobra"
)

func newStageCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "stage NAME",
		Short: "Run one stage as its own process on a Kafka cluster (" + strings.Join(stageNames, ", ") + ")",
		Long: `Run one stage of the pipeline against a Kafka cluster. Scale a stage by
starting more processes: replicas of a stage share its consumer group and
split the partitions. SIGINT/SIGTERM finish in-flight records, commit and exit 0.

Configuration: defaults < --config YAML < MURPHY_SECTION__FIELD environment < flags.`,
	}
	for _, name := range stageNames {
		cmd.AddCommand(newOneStageCmd(name))
	}
	return cmd
}

func newOneStageCmd(name string) *cobra.Command {
	cfg := defaultConfig()
	var path string
	c := &cobra.Command{
		Use:   name,
		Short: "Run the " + name + " stage",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := loadConfig(cmd.Flags(), path, &cfg); err != nil {
				return &exitError{code: 2, err: err}
			}
			if err := cfg.validate([]string{name}); err != nil {
				return &exitError{code: 2, err: err}
			}
			log := stderrLogger(&cfg).With("stage", name)
			log.Info("collector", "settings", cfg.applyGC([]string{name}))
			ctx := cmd.Context()
			if cfg.Kafka.ClientID == "murphy" {
				cfg.Kafka.ClientID = "murphy-" + name
			}
			if err := pipeline.EnsureTopics(ctx, cfg.Kafka, cfg.Topics); err != nil {
				return fmt.Errorf("topics: %w", err)
			}
			rt, err := pipeline.NewRuntime(pipeline.RuntimeConfig{
				Kafka: cfg.Kafka, Catalog: cfg.Topics, Name: name, HTTPAddr: cfg.HTTPAddr, Logger: log,
			})
			if err != nil {
				return err
			}
			set, err := addStages(ctx, rt, &cfg, []string{name})
			if err != nil {
				return err
			}
			defer set.Close()
			log.Info("stage running", "brokers", cfg.Kafka.Brokers, "prefix", cfg.Topics.Prefix)
			if err := rt.Run(ctx); err != nil && !errors.Is(err, ctx.Err()) {
				return err
			}
			log.Info("stage stopped")
			return nil
		},
	}
	c.Flags().StringVar(&path, "config", "", "YAML configuration file")
	bindCommon(c.Flags(), &cfg)
	bindStage(c.Flags(), &cfg, name)
	return c
}
