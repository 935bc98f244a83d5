package emit

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/pipeline/pipelinetest"
	"github.com/murphy-rl/murphy/topics"
)

// The stage on the real broker (delivery, a poison record, kill -9 and
// restart with its files and the trainers reading its batches) is in the
// shared stage suite: stages.TestStageSuite/emit.

// counter reads a counter's value (-1 when it cannot be read).
func counter(c prometheus.Counter) float64 {
	var d dto.Metric
	if err := c.Write(&d); err != nil {
		return -1
	}
	return d.GetCounter().GetValue()
}

// TestFollowVersionsOnBroker: the stage learns the newest policy version
// from the policy-versions topic, records published before and after it
// started following, a bad record skipped, an older version ignored.
func TestFollowVersionsOnBroker(t *testing.T) {
	for _, bc := range []struct {
		name    string
		brokers func(testing.TB) []string
	}{{"embedded", pipelinetest.Embedded}, {"kafka", pipelinetest.Brokers}} {
		t.Run(bc.name, func(t *testing.T) {
			brokers := bc.brokers(t)
			cat := pipelinetest.Catalog(t, brokers, 1)
			kcfg := pipelinetest.Kafka(brokers)
			cfg := DefaultConfig()
			cfg.Topic, cfg.Dir = false, t.TempDir()
			s, err := NewStage(cfg, nil, cat, kcfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			pipelinetest.Produce(t, brokers, pipelinetest.VersionOut(t, cat, 1), pipelinetest.VersionOut(t, cat, 2))
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			s.Follow(ctx, kcfg)
			waitVersion := func(want int64) {
				t.Helper()
				deadline := time.Now().Add(30 * time.Second)
				for s.NewestVersion() != want {
					if time.Now().After(deadline) {
						t.Fatalf("newest version %d after 30s, want %d", s.NewestVersion(), want)
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
			waitVersion(2)
			pipelinetest.Produce(t, brokers,
				pipeline.Out{Topic: cat.Topic(topics.PolicyVersions), Key: "bad", Value: []byte("not a record")},
				pipelinetest.VersionOut(t, cat, 5), pipelinetest.VersionOut(t, cat, 3))
			waitVersion(5)
			time.Sleep(200 * time.Millisecond)
			if s.NewestVersion() != 5 {
				t.Fatalf("newest version %d after an older one, want 5", s.NewestVersion())
			}
		})
	}
}
