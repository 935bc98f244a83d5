package main

import (
	"fmt"
	"time"

	"context"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/topics"
	"github.com/spf13/cobra"
)

func newTopicsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "topics", Short: "Manage the topic catalog"}
	cfg := defaultConfig()
	var path string
	create := &cobra.Command{
		Use:   "create",
		Short: "Create every topic of the catalog (existing ones are left alone)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := loadConfig(cmd.Flags(), path, &cfg); err != nil {
				return &exitError{code: 2, err: err}
			}
			if err := cfg.validate(nil); err != nil {
				return &exitError{code: 2, err: err}
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Minute)
			defer cancel()
			if err := pipeline.EnsureTopics(ctx, cfg.Kafka, cfg.Topics); err != nil {
				return err
			}
			for _, n := range topics.All() {
				s := cfg.Topics.Spec(n)
				compact := ""
				if s.Compacted {
					compact = ", compacted"
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%-32s %2d partitions, key %s%s\n", cfg.Topics.Topic(n), s.Partitions, s.Key, compact)
			}
			return nil
		},
	}
	create.Flags().StringVar(&path, "config", "", "YAML configuration file")
	walkPrefix(create.Flags(), "kafka.", &cfg.Kafka)
	walkPrefix(create.Flags(), "topics.", &cfg.Topics)
	cmd.AddCommand(create)
	return cmd
}

func newBrokerCmd() *cobra.Command {
	cfg := pipeline.EmbeddedConfig{Port: 9092, Partitions: topics.DefaultCatalog().Partitions}
	cmd := &cobra.Command{
		Use:   "broker",
		Short: "Run the embedded Kafka-protocol broker (franz-go kfake) until interrupted",
		Long: `Run an in-process Kafka-protocol broker for local use and demos. With
--data-dir its state persists across restarts. Production uses a real Kafka
cluster (deploy/).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := pipeline.StartEmbedded(cfg)
			if err != nil {
				return err
			}
			defer b.Close()
			fmt.Fprintf(cmd.OutOrStdout(), "embedded broker listening on %v\n", b.Brokers())
			<-cmd.Context().Done()
			return nil
		},
	}
	cmd.Flags().IntVar(&cfg.Port, "port", cfg.Port, "port to listen on (0 = any)")
	cmd.Flags().StringVar(&cfg.DataDir, "data-dir", "", "persist the broker's state in this directory")
	cmd.Flags().IntVar(&cfg.Partitions, "partitions", cfg.Partitions, "partitions of auto-created topics")
	return cmd
}
