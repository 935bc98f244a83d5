package pipeline_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/pipeline/pipelinetest"
	"github.com/murphy-rl/murphy/topics"
)

// TestReplicationSingleBroker: on one broker the default replication is
// the broker's (1), and a factor beyond the broker count fails at once
// with an error naming the setting and the count, creating nothing.
func TestReplicationSingleBroker(t *testing.T) {
	brokers := pipelinetest.Brokers(t)
	kc := pipelinetest.Kafka(brokers)
	cl, err := pipeline.DescribeCluster(context.Background(), kc)
	if err != nil {
		t.Fatal(err)
	}
	if len(cl.Brokers) != 1 {
		t.Skipf("MURPHY_KAFKA_BROKERS is a cluster of %d brokers", len(cl.Brokers))
	}
	cat := pipelinetest.Catalog(t, brokers, 2)
	infos, err := pipeline.DescribeTopics(context.Background(), kc, cat)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range infos {
		if !in.Exists || in.ReplicationFactor != 1 || in.Leaderless != 0 {
			t.Errorf("%s: %+v, want it replicated once with a leader", in.Name, in)
		}
	}

	bad := topics.Catalog{Prefix: pipelinetest.Unique(t) + ".", Partitions: 2, ReplicationFactor: 3}
	kc.StartupTimeout = time.Minute
	start := time.Now()
	err = pipeline.EnsureTopics(context.Background(), kc, bad)
	if err == nil || !strings.Contains(err.Error(), "replication factor 3 (topics.replication_factor) exceeds the cluster's 1 broker(s)") {
		t.Fatalf("EnsureTopics with replication 3 on one broker: %v", err)
	}
	if time.Since(start) > 30*time.Second {
		t.Errorf("the invalid replication took %s to report: it must fail at once", time.Since(start))
	}
	infos, err = pipeline.DescribeTopics(context.Background(), kc, bad)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range infos {
		if in.Exists {
			t.Errorf("%s was created despite the invalid replication", in.Name)
		}
	}
}

// TestReplicationCluster: on a cluster of three (MURPHY_KAFKA_CLUSTER_BROKERS,
// deploy/kafka/kafka.sh cluster) the topics murphy creates take the
// cluster's default replication (3) and min.insync.replicas RF-1, through
// EnsureTopics and through the Watermill publisher's create path alike; a
// configured factor is used as it is.
func TestReplicationCluster(t *testing.T) {
	v := os.Getenv("MURPHY_KAFKA_CLUSTER_BROKERS")
	if v == "" {
		t.Skip("MURPHY_KAFKA_CLUSTER_BROKERS not set: no three-broker cluster (deploy/kafka/kafka.sh cluster start)")
	}
	brokers := strings.Split(v, ",")
	kc := pipelinetest.Kafka(brokers)
	ctx := context.Background()
	cl, err := pipeline.DescribeCluster(ctx, kc)
	if err != nil {
		t.Fatal(err)
	}
	if len(cl.Brokers) < 3 || cl.DefaultReplicationFactor < 3 {
		t.Skipf("cluster %+v: want 3 brokers with default.replication.factor 3", cl)
	}
	check := func(cat topics.Catalog, rf, isr int) {
		t.Helper()
		infos, err := pipeline.DescribeTopics(ctx, kc, cat)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range infos {
			if !in.Exists || in.ReplicationFactor != rf || in.MinInsyncReplicas != isr {
				t.Errorf("%s: replication %d, min.insync %d (exists %v); want %d, %d", in.Name, in.ReplicationFactor, in.MinInsyncReplicas, in.Exists, rf, isr)
			}
		}
	}
	def := pipelinetest.Catalog(t, brokers, 2)
	check(def, 3, 2)

	two := topics.Catalog{Prefix: pipelinetest.Unique(t) + ".", Partitions: 2, ReplicationFactor: 2, MinInsyncReplicas: 1}
	if err := pipeline.EnsureTopics(ctx, kc, two); err != nil {
		t.Fatal(err)
	}
	check(two, 2, 1)

	four := topics.Catalog{Prefix: pipelinetest.Unique(t) + ".", Partitions: 2, ReplicationFactor: 4}
	if err := pipeline.EnsureTopics(ctx, kc, four); err == nil || !strings.Contains(err.Error(), "exceeds the cluster's 3 broker(s)") {
		t.Fatalf("replication 4 on 3 brokers: %v", err)
	}

	topic := pipelinetest.Unique(t)
	pub, err := pipeline.NewPublisher(pipeline.PublisherConfig{Kafka: kc, CreatePartitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	if err := pub.Publish(topic, message.NewMessage("1", []byte("x"))); err != nil {
		t.Fatal(err)
	}
	infos, err := pipeline.DescribeTopicNames(ctx, kc, topic)
	if err != nil {
		t.Fatal(err)
	}
	if in := infos[0]; !in.Exists || in.ReplicationFactor != 3 || in.MinInsyncReplicas != 2 {
		t.Errorf("the publisher created %s as %+v, want replication 3, min.insync 2", topic, in)
	}
}
