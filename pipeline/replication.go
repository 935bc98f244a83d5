package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"

	"github.com/murphy-rl/murphy/topics"
	"github.com/segmentio/kafka-go"
)

// replicationError is a replication setting the cluster cannot give:
// creating topics fails with it at once instead of waiting.
type replicationError struct{ error }

func (e replicationError) Unwrap() error { return e.error }

func invalidReplication(err error) bool {
	var re replicationError
	return errors.As(err, &re)
}

// Cluster is what murphy reads of a Kafka cluster to replicate its topics.
type Cluster struct {
	// Brokers are the ids of the brokers the metadata lists (the live ones).
	Brokers []int
	// Controller is the id of the broker acting as controller.
	Controller int
	// DefaultReplicationFactor is the brokers' default.replication.factor
	// (0 when this client may not read it).
	DefaultReplicationFactor int
	// MinInsyncReplicas is the brokers' min.insync.replicas (0: unknown).
	MinInsyncReplicas int
}

// DescribeCluster reads the brokers and their replication defaults.
func DescribeCluster(ctx context.Context, cfg KafkaConfig) (Cluster, error) {
	t := cfg.Transport()
	defer t.CloseIdleConnections()
	return describeCluster(ctx, &kafka.Client{Addr: kafka.TCP(cfg.Brokers...), Transport: t})
}

func describeCluster(ctx context.Context, client *kafka.Client) (Cluster, error) {
	md, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{}})
	if err != nil {
		return Cluster{}, fmt.Errorf("metadata: %w", err)
	}
	var c Cluster
	for _, b := range md.Brokers {
		c.Brokers = append(c.Brokers, b.ID)
	}
	sort.Ints(c.Brokers)
	c.Controller = md.Controller.ID
	if len(c.Brokers) == 0 {
		return c, errors.New("metadata lists no brokers")
	}
	// The brokers' settings, from one of them (a cluster keeps them alike;
	// a client without DescribeConfigs on the cluster does without them).
	resp, err := client.DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{Resources: []kafka.DescribeConfigRequestResource{{
		ResourceType: kafka.ResourceTypeBroker, ResourceName: strconv.Itoa(c.Brokers[0]),
		ConfigNames: []string{"default.replication.factor", "min.insync.replicas"},
	}}})
	if err != nil || len(resp.Resources) == 0 || resp.Resources[0].Error != nil {
		return c, nil
	}
	for _, e := range resp.Resources[0].ConfigEntries {
		v, _ := strconv.Atoi(e.ConfigValue)
		switch e.ConfigName {
		case "default.replication.factor":
			c.DefaultReplicationFactor = v
		case "min.insync.replicas":
			c.MinInsyncReplicas = v
		}
	}
	return c, nil
}

// Replication resolves the catalog's replication against the cluster: the
// configured factor or the cluster's default, validated against the
// brokers. Where the cluster's default cannot be read, the factor is -1
// (the broker applies its own default when it creates the topic).
func (c Cluster) Replication(cat topics.Catalog) (topics.Replication, error) {
	if cat.ReplicationFactor <= 0 && c.DefaultReplicationFactor <= 0 {
		return topics.Replication{Factor: -1, MinInsync: cat.MinInsyncReplicas}, nil
	}
	r, err := cat.Replication(c.DefaultReplicationFactor, len(c.Brokers))
	if err != nil {
		return r, replicationError{err}
	}
	return r, nil
}

// ReplicationOf resolves the catalog's replication on the cluster cfg
// reaches (what `murphy topics create` and the stages create topics with).
func ReplicationOf(ctx context.Context, cfg KafkaConfig, cat topics.Catalog) (topics.Replication, Cluster, error) {
	cl, err := DescribeCluster(ctx, cfg)
	if err != nil {
		return topics.Replication{}, cl, err
	}
	r, err := cl.Replication(cat)
	return r, cl, err
}

// applyReplication sets r on topic creation requests.
func applyReplication(reqs []kafka.TopicConfig, r topics.Replication) {
	for i := range reqs {
		reqs[i].ReplicationFactor = r.Factor
		entries := reqs[i].ConfigEntries[:0:0]
		for _, e := range reqs[i].ConfigEntries {
			if e.ConfigName != "min.insync.replicas" {
				entries = append(entries, e)
			}
		}
		if r.MinInsync > 0 {
			entries = append(entries, kafka.ConfigEntry{ConfigName: "min.insync.replicas", ConfigValue: strconv.Itoa(r.MinInsync)})
		}
		reqs[i].ConfigEntries = entries
	}
}

// TopicInfo is one topic as the cluster has it.
type TopicInfo struct {
	Name       string
	Exists     bool
	Partitions int
	// ReplicationFactor is the replica count of partition 0 (murphy
	// creates every partition alike).
	ReplicationFactor int
	// MinInsyncReplicas is the topic's min.insync.replicas.
	MinInsyncReplicas int
	Compacted         bool
	// UnderReplicated counts partitions with fewer in-sync replicas than
	// replicas; Leaderless those without a leader.
	UnderReplicated, Leaderless int
	// Leaders holds each partition's leader broker id (-1: none).
	Leaders []int
}

// DescribeTopics reads every catalog topic from the cluster, in the order
// of topics.All.
func DescribeTopics(ctx context.Context, cfg KafkaConfig, cat topics.Catalog) ([]TopicInfo, error) {
	names := make([]string, 0, len(topics.All()))
	for _, n := range topics.All() {
		names = append(names, cat.Topic(n))
	}
	return DescribeTopicNames(ctx, cfg, names...)
}

// DescribeTopicNames reads the named topics from the cluster.
func DescribeTopicNames(ctx context.Context, cfg KafkaConfig, names ...string) ([]TopicInfo, error) {
	t := cfg.Transport()
	defer t.CloseIdleConnections()
	client := &kafka.Client{Addr: kafka.TCP(cfg.Brokers...), Transport: t}
	md, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: names})
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	byName := map[string]kafka.Topic{}
	for _, tp := range md.Topics {
		if tp.Error == nil {
			byName[tp.Name] = tp
		}
	}
	infos := make([]TopicInfo, len(names))
	var res []kafka.DescribeConfigRequestResource
	for i, n := range names {
		infos[i].Name = n
		tp, ok := byName[n]
		if !ok {
			continue
		}
		infos[i].Exists = true
		infos[i].Partitions = len(tp.Partitions)
		infos[i].Leaders = make([]int, len(tp.Partitions))
		for _, p := range tp.Partitions {
			if p.ID >= 0 && p.ID < len(tp.Partitions) {
				infos[i].Leaders[p.ID] = p.Leader.ID
				if p.Leader.Host == "" {
					infos[i].Leaders[p.ID] = -1
				}
			}
			if p.ID == 0 {
				infos[i].ReplicationFactor = len(p.Replicas)
			}
			if len(p.Isr) < len(p.Replicas) {
				infos[i].UnderReplicated++
			}
			if p.Leader.Host == "" {
				infos[i].Leaderless++
			}
		}
		res = append(res, kafka.DescribeConfigRequestResource{ResourceType: kafka.ResourceTypeTopic, ResourceName: n,
			ConfigNames: []string{"min.insync.replicas", "cleanup.policy"}})
	}
	if len(res) == 0 {
		return infos, nil
	}
	resp, err := client.DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{Resources: res})
	if err != nil {
		return infos, fmt.Errorf("describe topic configs: %w", err)
	}
	idx := map[string]int{}
	for i, in := range infos {
		idx[in.Name] = i
	}
	for _, r := range resp.Resources {
		i, ok := idx[r.ResourceName]
		if !ok || r.Error != nil {
			continue
		}
		for _, e := range r.ConfigEntries {
			switch e.ConfigName {
			case "min.insync.replicas":
				infos[i].MinInsyncReplicas, _ = strconv.Atoi(e.ConfigValue)
			case "cleanup.policy":
				infos[i].Compacted = e.ConfigValue == "compact" || e.ConfigValue == "compact,delete" || e.ConfigValue == "delete,compact"
			}
		}
	}
	return infos, nil
}
