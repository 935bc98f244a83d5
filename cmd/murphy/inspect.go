package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/murphy-rl/murphy/internal/inspect"
	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/topics"
	"github.com/spf13/cobra"
)

// inspectConfig is the configuration `murphy inspect --from-topic` reads
// (the same kafka and topics sections, flags and environment as the stages).
type inspectConfig struct {
	Kafka  pipeline.KafkaConfig `yaml:"kafka"`
	Topics topics.Catalog       `yaml:"topics"`
}

func newInspectCmd() *cobra.Command {
	cfg := inspectConfig{Kafka: pipeline.DefaultKafkaConfig(), Topics: topics.DefaultCatalog()}
	cfg.Kafka.ClientID = "murphy-inspect"
	var (
		path, htmlOut, title string
		fromTopic            bool
		maxTrees             int
		timeout              time.Duration
	)
	cmd := &cobra.Command{
		Use:   "inspect (OUT_DIR | --from-topic) --html FILE",
		Short: "Draw credited trees as one self-contained HTML page",
		Long: `Inspect writes one self-contained HTML file (inline CSS and JavaScript, no
network access) that shows every credited tree as a tree: nodes coloured by
reward, credited reward or advantage (a selector chooses), shaped by route
(train, masked, last-step penalty) and labelled by failure cause; members that
pruning removed are faded placeholders with their count. Clicking a node shows
its prompt, response, feedback and the line diff to its parent's response. Per
run: histograms of reward and credited reward per turn, and how many failed
nodes received credit from a passing descendant.

It reads the Arrow IPC (or Parquet) files of OUT_DIR (murphy run --out, the
emit stage's directory), or with --from-topic the credited topic of a cluster,
every partition up to its current high watermark, then stops.`,
		Example: `  murphy inspect out --html out/inspect.html
  murphy inspect --from-topic --kafka.brokers 127.0.0.1:9092 --html trees.html
  murphy inspect out --html - --max-trees 20 > first20.html`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if htmlOut == "" {
				return &exitError{code: 2, err: errors.New("inspect: --html FILE is required (- for stdout)")}
			}
			var (
				in  *inspect.Input
				err error
			)
			switch {
			case fromTopic && len(args) > 0:
				return &exitError{code: 2, err: errors.New("inspect: give OUT_DIR or --from-topic, not both")}
			case fromTopic:
				if err := loadConfig(cmd.Flags(), path, &cfg); err != nil {
					return &exitError{code: 2, err: err}
				}
				if len(cfg.Kafka.Brokers) == 0 {
					return &exitError{code: 2, err: errors.New("inspect: --kafka.brokers is empty")}
				}
				ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
				defer cancel()
				in, err = inspect.ReadTopic(ctx, cfg.Kafka, cfg.Topics.Topic(topics.Credited))
			case len(args) == 1:
				in, err = inspect.ReadDir(args[0])
			default:
				return &exitError{code: 2, err: errors.New("inspect: give one OUT_DIR, or --from-topic")}
			}
			if err != nil {
				return err
			}
			page, err := inspect.Build(in, inspect.Options{Title: title, MaxTrees: maxTrees})
			if err != nil {
				return err
			}
			if htmlOut == "-" {
				w := bufio.NewWriterSize(cmd.OutOrStdout(), 1<<20)
				if err := inspect.Render(w, page); err != nil {
					return fmt.Errorf("inspect: %w", err)
				}
				return w.Flush()
			}
			if err := inspect.WriteFile(htmlOut, page); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "%s: %d trees (of %d), %d nodes, %d placeholders for missing members, from %s\n",
				htmlOut, len(page.Trees), page.TotalTrees, page.Nodes, page.Placeholders, page.Source)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&htmlOut, "html", "", "write the page to FILE (- for stdout)")
	f.BoolVar(&fromTopic, "from-topic", false, "read the credited topic (--kafka.brokers, --topics.prefix) instead of OUT_DIR")
	f.IntVar(&maxTrees, "max-trees", 0, "draw only the first N trees by tree id (0 = all)")
	f.StringVar(&title, "title", "", "page title (default: murphy inspect: <source>)")
	f.DurationVar(&timeout, "timeout", 5*time.Minute, "give up reading the topic after this long")
	f.StringVar(&path, "config", "", "YAML configuration file (kafka and topics sections)")
	walkPrefix(f, "kafka.", &cfg.Kafka)
	walkPrefix(f, "topics.", &cfg.Topics)
	return cmd
}
