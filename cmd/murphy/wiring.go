package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/stages"
	"github.com/murphy-rl/murphy/stages/credit"
	"github.com/murphy-rl/murphy/stages/emit"
	"github.com/murphy-rl/murphy/stages/execute"
	"github.com/murphy-rl/murphy/stages/generate"
	"github.com/murphy-rl/murphy/stages/govern"
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
	GC       pipeline.GCConfig `yaml:"gc"`
	Execute  execute.Config    `yaml:"execute"`
	Generate generate.Config   `yaml:"generate"`
	Govern   govern.Config     `yaml:"govern"`
	Credit   credit.Config     `yaml:"credit"`
	Emit     emit.Config       `yaml:"emit"`
}

// stageNames in dataflow order.
var stageNames = stages.Names

func defaultConfig() Config {
	k := pipeline.DefaultKafkaConfig()
	return Config{
		Kafka: k, Topics: topics.DefaultCatalog(), TaskCache: 4096, LogLevel: "info", GC: pipeline.DefaultGCConfig(),
		Execute: execute.DefaultConfig(), Generate: generate.DefaultConfig(), Govern: govern.DefaultConfig(),
		Credit: credit.DefaultConfig(), Emit: emit.DefaultConfig(),
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
	switch name {
	case "generate":
		walkPrefix(fs, "generate.", &c.Generate)
	case "execute":
		walkPrefix(fs, "execute.", &c.Execute)
	case "govern":
		walkPrefix(fs, "govern.", &c.Govern)
	case "credit":
		walkPrefix(fs, "credit.", &c.Credit)
	case "emit":
		walkPrefix(fs, "emit.", &c.Emit)
	}
}

func (c *Config) validate(stages []string) error {
	errs := []error{c.Kafka.Validate(), c.Topics.Validate(), c.GC.Validate()}
	for _, s := range stages {
		var err error
		switch s {
		case "generate":
			err = c.Generate.Validate()
		case "execute":
			err = c.Execute.Validate()
		case "govern":
			err = c.Govern.Validate()
		case "credit":
			err = c.Credit.Validate()
		case "emit":
			err = c.Emit.Validate()
		default:
			err = fmt.Errorf("unknown stage %q (stages: %s)", s, strings.Join(stageNames, ", "))
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s, err))
		}
	}
	return errors.Join(errs...)
}

// applyGC sets the collector of a process running the stages names and
// says how it runs.
func (c *Config) applyGC(names []string) string {
	return c.GC.Apply(stages.MemoryLimitMB(names, c.Topics, c.Emit.MaxBytes))
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
		Runtime: rt, Kafka: cfg.Kafka, Catalog: cfg.Topics, Lookup: lookup,
		Generate: cfg.Generate, Execute: cfg.Execute, Govern: cfg.Govern, Credit: cfg.Credit, Emit: cfg.Emit,
	}, names)
	set.closers = append(set.closers, release)
	if err != nil {
		set.Close()
		return nil, err
	}
	return set, nil
}

func stderrLogger(cfg *Config) *slog.Logger { return newLogger(cfg.LogLevel, os.Stderr) }
