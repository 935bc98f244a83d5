package pipeline

import (
	"fmt"

	"github.com/murphy-rl/murphy/topics"
	"github.com/twmb/franz-go/pkg/kfake"
)

// EmbeddedConfig configures the in-process Kafka-protocol broker.
type EmbeddedConfig struct {
	// Port to listen on (0 = any free port).
	Port int `yaml:"port"`
	// DataDir, if set, persists the broker's state across restarts.
	DataDir string `yaml:"data_dir"`
	// Partitions is the default partition count of auto-created topics.
	Partitions int `yaml:"partitions"`
}

// Embedded is franz-go's kfake broker running in this process. It speaks the
// Kafka protocol, so every stage uses the same kafka-go code paths as in
// production; only the broker differs.
type Embedded struct {
	c *kfake.Cluster
}

// StartEmbedded starts an in-process broker.
func StartEmbedded(cfg EmbeddedConfig) (*Embedded, error) {
	opts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.AllowAutoTopicCreation(),
		kfake.BrokerConfigs(map[string]string{
			"message.max.bytes": fmt.Sprint(topics.DefaultMaxMessageBytes + 1<<20),
			// One broker: it replicates nothing (kfake's own default says 3).
			"default.replication.factor": "1",
		}),
	}
	if cfg.Partitions > 0 {
		opts = append(opts, kfake.DefaultNumPartitions(cfg.Partitions))
	}
	if cfg.Port > 0 {
		opts = append(opts, kfake.Ports(cfg.Port))
	}
	if cfg.DataDir != "" {
		opts = append(opts, kfake.DataDir(cfg.DataDir))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return nil, fmt.Errorf("start embedded broker: %w", err)
	}
	return &Embedded{c: c}, nil
}

// Brokers returns the listen addresses.
func (e *Embedded) Brokers() []string { return e.c.ListenAddrs() }

// Close stops the broker.
func (e *Embedded) Close() { e.c.Close() }
