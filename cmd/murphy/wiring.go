package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/stages"
	"github.com/murphy-rl/murphy/tasks"
	"github.com/murphy-rl/murphy/topics"
	"github.com/spf13/pflag"
)

// Config is the whole configuration: the cluster, the topic catalog and one
// section per stage, each with its component's defaults and validation.
type Config struct {
	Kafka  pipeline.KafkaConfig `yaml:"kafka"`
	Topics topics.Catalog       `yaml:"topics"`
	// HTTPAddr serves /metrics, /healthz and /readyz ("" = off).
	HTTPAddr string `yaml:"http_addr"`
	// TaskCache bounds the tasks held in memory by each stage's task table.
	TaskCache int `yaml:"task_cache"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `yaml:"log_level"`
	// GC sets the process's garbage collector.
	GC pipeline.GCConfig `yaml:"gc"`
	// Configs holds one section per stage (generate, execute, govern,
	// credit, emit), at the top level of the configuration.
	stages.Configs `yaml:",inline,flatten,squash"`
}

// stageNames in dataflow order.
var stageNames = stages.Names()

func defaultConfig() Config {
	k := pipeline.DefaultKafkaConfig()
	return Config{
		Kafka: k, Topics: topics.DefaultCatalog(), TaskCache: 4096, LogLevel: "info", GC: pipeline.DefaultGCConfig(),
		Configs: stages.DefaultConfigs(),
	}
}

// bindCommon registers the flags shared by every command that talks to Kafka.
func bindCommon(fs *pflag.FlagSet, c *Config) {
	walkPrefix(fs, "kafka.", &c.Kafka)
	walkPrefix(fs, "topics.", &c.Topics)
	walkPrefix(fs, "gc.", &c.GC)
	fs.StringVar(&c.HTTPAddr, "http_addr", c.HTTPAddr, "serve /metrics, /healthz and /readyz on this address")
	fs.IntVar(&c.TaskCache, "task_cache", c.TaskCache, "tasks held in memory per stage")
	fs.StringVar(&c.LogLevel, "log_level", c.LogLevel, "debug, info, warn or error")
}

// bindStage registers the flags of one stage's section.
func bindStage(fs *pflag.FlagSet, c *Config, name string) {
	if d, err := stages.Get(name); err == nil {
		walkPrefix(fs, d.Name+".", d.Section(&c.Configs))
	}
}

func (c *Config) validate(names []string) error {
	return errors.Join(c.Kafka.Validate(), c.Topics.Validate(), c.GC.Validate(), c.Configs.Validate(names))
}

// applyGC sets the collector of a process running the stages names and
// says how it runs.
func (c *Config) applyGC(names []string) string {
	return c.GC.Apply(stages.MemoryLimitMB(names, c.Topics, &c.Configs))
}

func newLogger(level string, w io.Writer) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l}))
}

// stageSet builds stages on a runtime and releases what they hold.
type stageSet struct {
	closers []func()
	table   *pipeline.Table
}

func (s *stageSet) Close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
}

// addStages wires the named stages onto rt (see stages.Add); the task table
// is opened on first use.
func addStages(ctx context.Context, rt *pipeline.Runtime, cfg *Config, names []string) (*stageSet, error) {
	set := &stageSet{}
	lookup := func() tasks.Lookup {
		if set.table == nil {
			set.table = pipeline.NewTable(cfg.Kafka, cfg.Topics.Topic(topics.Tasks), cfg.TaskCache)
			set.closers = append(set.closers, set.table.Close)
		}
		return tasks.FromTable(set.table, pipeline.ErrNotFound)
	}
	release, err := stages.Add(ctx, stages.Wiring{
		Runtime: rt, Kafka: cfg.Kafka, Catalog: cfg.Topics, Lookup: lookup, Configs: cfg.Configs,
	}, names)
	set.closers = append(set.closers, release)
	if err != nil {
		set.Close()
		return nil, err
	}
	return set, nil
}

func stderrLogger(cfg *Config) *slog.Logger { return newLogger(cfg.LogLevel, os.Stderr) }
