package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

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
			return describeTopics(ctx, cmd.OutOrStdout(), cfg)
		},
	}
	create.Flags().StringVar(&path, "config", "", "YAML configuration file")
	walkPrefix(create.Flags(), "kafka.", &cfg.Kafka)
	walkPrefix(create.Flags(), "topics.", &cfg.Topics)
	cmd.AddCommand(create)

	dcfg := defaultConfig()
	var dpath string
	describe := &cobra.Command{
		Use:   "describe",
		Short: "Show the catalog's topics as the cluster has them (partitions, replication, min.insync.replicas) against the configuration",
		Long: `Show every topic of the catalog as the cluster has it: partitions,
replication factor, min.insync.replicas, cleanup policy, under-replicated and
leaderless partitions, beside what the configuration would create
(topics.partitions, topics.replication_factor resolved against the cluster's
default.replication.factor and broker count, topics.min_insync_replicas).
It exits 1 when the configured replication cannot be met by the cluster.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := loadConfig(cmd.Flags(), dpath, &dcfg); err != nil {
				return &exitError{code: 2, err: err}
			}
			if err := dcfg.validate(nil); err != nil {
				return &exitError{code: 2, err: err}
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Minute)
			defer cancel()
			return describeTopics(ctx, cmd.OutOrStdout(), dcfg)
		},
	}
	describe.Flags().StringVar(&dpath, "config", "", "YAML configuration file")
	walkPrefix(describe.Flags(), "kafka.", &dcfg.Kafka)
	walkPrefix(describe.Flags(), "topics.", &dcfg.Topics)
	cmd.AddCommand(describe)
	return cmd
}

// describeTopics prints the cluster, the replication the configuration
// resolves to on it, and every catalog topic as the cluster has it.
func describeTopics(ctx context.Context, w io.Writer, cfg Config) error {
	repl, cl, rerr := pipeline.ReplicationOf(ctx, cfg.Kafka, cfg.Topics)
	if rerr != nil && len(cl.Brokers) == 0 {
		return rerr
	}
	def := "unknown (not readable)"
	if cl.DefaultReplicationFactor > 0 {
		def = strconv.Itoa(cl.DefaultReplicationFactor)
	}
	fmt.Fprintf(w, "cluster: %d broker(s) %v, controller %d, default.replication.factor %s\n", len(cl.Brokers), cl.Brokers, cl.Controller, def)
	if rerr != nil {
		fmt.Fprintf(w, "configured replication: %v\n", rerr)
	} else {
		fmt.Fprintf(w, "configured replication: factor %s, min.insync.replicas %s\n", orDefault(repl.Factor), orDefault(repl.MinInsync))
	}
	infos, err := pipeline.DescribeTopics(ctx, cfg.Kafka, cfg.Topics)
	if err != nil {
		return err
	}
	for i, n := range topics.All() {
		s, in := cfg.Topics.Spec(n), infos[i]
		if !in.Exists {
			fmt.Fprintf(w, "%-32s missing (would be created: %d partitions, key %s)\n", in.Name, s.Partitions, s.Key)
			continue
		}
		extra := ""
		if in.Compacted {
			extra += ", compacted"
		}
		if in.UnderReplicated > 0 {
			extra += fmt.Sprintf(", %d under-replicated", in.UnderReplicated)
		}
		if in.Leaderless > 0 {
			extra += fmt.Sprintf(", %d without a leader", in.Leaderless)
		}
		if rerr == nil && repl.Factor > 0 && in.ReplicationFactor != repl.Factor {
			extra += fmt.Sprintf(" (configured: replication %d; an existing topic keeps its own)", repl.Factor)
		}
		fmt.Fprintf(w, "%-32s %2d partitions, replication %d, min.insync.replicas %d, key %s%s\n",
			in.Name, in.Partitions, in.ReplicationFactor, in.MinInsyncReplicas, s.Key, extra)
	}
	if rerr != nil {
		return &exitError{code: 1, err: rerr}
	}
	return nil
}

func orDefault(n int) string {
	if n <= 0 {
		return "the broker's default"
	}
	return strconv.Itoa(n)
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
