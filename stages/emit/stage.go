// Package emit is the last stage: it packs credited trees (topic credited,
// one topics.CreditedTree per record) into Arrow record batches, one row per
// response, and writes them as self-contained Arrow IPC streams to the
// batches topic and/or as rotated Arrow IPC and Parquet files. SCHEMA.md
// documents the columns.
//
// It keeps one open batch per credited partition. Batch ids are derived from
// the source offsets they cover; a restarted stage reads its outputs back
// and resumes after the last batch each of them holds, so no batch is
// written twice and no tree is lost or split.
package emit

import (
	"context"
	"errors"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/topics"
)

// StageName names the stage in metrics, logs and its consumer group.
const StageName = "emit"

// Stage is the emit stage.
type Stage struct {
	cfg     Config
	prod    pipeline.Producer
	cat     topics.Catalog
	kcfg    pipeline.KafkaConfig
	metrics *Metrics
	mem     memory.Allocator
	now     func() time.Time
	// newest is the newest policy version known (Follow).
	newest newestVersion
	// readRange reads a credited partition back (the dedupe window).
	readRange func(ctx context.Context, cfg pipeline.KafkaConfig, topic string, partition int, from, to int64, fn func(pipeline.Record) error) error
}

// NewStage builds the emit stage. prod produces to the batches topic and
// kcfg locates the cluster to read it back on assignment; both are unused
// when cfg.Topic is false (prod may then be nil).
func NewStage(cfg Config, prod pipeline.Producer, cat topics.Catalog, kcfg pipeline.KafkaConfig, reg prometheus.Registerer) (*Stage, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := cat.Validate(); err != nil {
		return nil, err
	}
	if cfg.Topic && prod == nil {
		return nil, errors.New("emit: topic sink enabled without a producer")
	}
	if cfg.Topic && len(kcfg.Brokers) == 0 {
		return nil, errors.New("emit: topic sink enabled without brokers to read it back")
	}
	m, err := NewMetrics(reg)
	if err != nil {
		return nil, err
	}
	return &Stage{cfg: cfg, prod: prod, cat: cat, kcfg: kcfg, metrics: m, mem: memory.DefaultAllocator, now: time.Now,
		readRange: pipeline.ReadRange}, nil
}

// Spec describes the stage for pipeline.Runtime.AddPartitionStage: one
// processor per partition of the credited topic.
func (s *Stage) Spec() pipeline.PartitionStage {
	return pipeline.PartitionStage{
		Name:         StageName,
		Input:        s.cat.Topic(topics.Credited),
		Assigned:     s.assign,
		TickInterval: s.cfg.tick(),
	}
}
