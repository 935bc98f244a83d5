// Package topics is the contract between stages: topic names, partition
// counts, keys, record types, the codec and its validation.
package topics

import (
	"fmt"
	"strings"
)

// Name identifies a topic in the catalog independently of its prefix.
type Name string

// The catalog. Every record of one tree is keyed by tree_id so that a tree
// stays on one partition end to end; tasks are keyed by task_id and compacted.
const (
	Tasks   Name = "tasks"
	Prompts Name = "prompts" // root prompts (seeding)
	// BackfillPrompts holds the root prompts of backfill jobs (`murphy
	// backfill submit`): generate consumes it beside prompts and gives it
	// its configured share of capacity.
	BackfillPrompts Name = "backfill-prompts"
	Refinements     Name = "refinements" // refinement prompts from govern; served before root prompts
	Candidates      Name = "candidates"
	Executions      Name = "executions"
	Samples         Name = "samples"
	Credited        Name = "credited"
	// Completions holds one small record per tree credit emitted, so that
	// generate's admission learns of completed trees without reading them.
	Completions Name = "completions"
	Batches     Name = "batches"
	DLQ         Name = "dlq"
	// PolicyVersions (compacted, key: the version number) holds every
	// policy version a trainer published; generate follows the newest.
	PolicyVersions Name = "policy-versions"
	// TrainerProgressTopic (compacted, key: trainer id / rank) holds each
	// trainer rank's latest progress: its version, staleness bound and the
	// credited positions it consumed; generate's staleness bound reads it.
	TrainerProgressTopic Name = "trainer-progress"
	// Admissions is the admission log: one record per tree a generate
	// process proposes to start under the staleness bound, on one partition
	// (0) so that every generate process reads them in one order and makes
	// the same decision on each (topics.Admission).
	Admissions Name = "admissions"
)

// All lists every topic in dataflow order (a fresh slice).
func All() []Name {
	return []Name{Tasks, Prompts, BackfillPrompts, Refinements, Candidates, Executions, Samples, Credited, Completions, Batches, DLQ,
		PolicyVersions, TrainerProgressTopic, Admissions}
}

// Spec describes how a topic is created.
type Spec struct {
	Name       Name
	Partitions int
	Compacted  bool
	// Key names the record field used as the Kafka key.
	Key string
	// MaxMessageBytes is the topic's max.message.bytes.
	MaxMessageBytes int
}

// DefaultMaxMessageBytes bounds one record on the wire. A credited tree of
// G=8 over 3 turns with 2,000-token responses stays well below it.
const DefaultMaxMessageBytes = 64 << 20

// Catalog resolves catalog names to concrete topic names and specs.
type Catalog struct {
	// Prefix is prepended to every catalog name to make the topic name
	// (prefix "murphy." gives murphy.prompts, murphy.samples, ...).
	Prefix string `yaml:"prefix"`
	// Partitions is the partition count of the topics murphy creates (a
	// topic that already exists keeps its own); the unit of parallelism of
	// every stage.
	Partitions int `yaml:"partitions"`
	// ReplicationFactor is the replica count of the topics murphy creates
	// (a topic that already exists keeps its own). 0 takes the cluster's
	// default.replication.factor. It may not exceed the cluster's broker
	// count: creating topics fails with an error saying so.
	ReplicationFactor int `yaml:"replication_factor"`
	// MinInsyncReplicas is the min.insync.replicas of the topics murphy
	// creates: an acks=all write (every producer of murphy) succeeds only
	// while this many replicas have it. 0 takes RF-1 when the replication
	// factor is 3 or more (one broker may be down without blocking writes
	// or losing an acknowledged one), else the cluster's own setting.
	MinInsyncReplicas int `yaml:"min_insync_replicas"`
}

// Replication is how the topics murphy creates are replicated.
type Replication struct {
	// Factor is the replica count of every partition.
	Factor int
	// MinInsync is the topics' min.insync.replicas; 0 leaves the cluster's.
	MinInsync int
}

// Replication resolves the catalog's replication against a cluster whose
// default.replication.factor is clusterDefault and which has brokers
// brokers (0: unknown, not checked). It fails when the factor exceeds the
// brokers or min.insync.replicas exceeds the factor.
func (c Catalog) Replication(clusterDefault, brokers int) (Replication, error) {
	r := Replication{Factor: c.ReplicationFactor, MinInsync: c.MinInsyncReplicas}
	from := "topics.replication_factor"
	if r.Factor <= 0 {
		r.Factor = max(clusterDefault, 1)
		from = "the cluster's default.replication.factor"
	}
	if brokers > 0 && r.Factor > brokers {
		return r, fmt.Errorf("topics: replication factor %d (%s) exceeds the cluster's %d broker(s): "+
			"set topics.replication_factor to at most %d, or add brokers", r.Factor, from, brokers, brokers)
	}
	if r.MinInsync <= 0 && r.Factor >= 3 {
		r.MinInsync = r.Factor - 1
	}
	if r.MinInsync > r.Factor {
		return r, fmt.Errorf("topics: min_insync_replicas %d exceeds the replication factor %d (%s): "+
			"no write could ever be acknowledged", r.MinInsync, r.Factor, from)
	}
	return r, nil
}

// DefaultCatalog is the catalog used when nothing is configured.
func DefaultCatalog() Catalog { return Catalog{Prefix: "murphy.", Partitions: 8} }

// Topic returns the concrete topic name for n.
func (c Catalog) Topic(n Name) string { return c.Prefix + string(n) }

// Lookup maps a concrete topic name back to its catalog name.
func (c Catalog) Lookup(topic string) (Name, bool) {
	if !strings.HasPrefix(topic, c.Prefix) {
		return "", false
	}
	n := Name(strings.TrimPrefix(topic, c.Prefix))
	for _, k := range All() {
		if k == n {
			return n, true
		}
	}
	return "", false
}

// Spec returns the creation spec of n.
func (c Catalog) Spec(n Name) Spec {
	p := c.Partitions
	if p <= 0 {
		p = 8
	}
	s := Spec{Name: n, Partitions: p, Key: "tree_id", MaxMessageBytes: DefaultMaxMessageBytes}
	switch n {
	case Tasks:
		s.Compacted = true
		s.Key = "task_id"
	case DLQ:
		s.Key = "source key"
	case PolicyVersions:
		s.Compacted = true
		s.Key = "version"
	case TrainerProgressTopic:
		s.Compacted = true
		s.Key = "trainer_id/rank"
	case Admissions:
		s.Partitions = 1 // one order for every reader (an existing topic's partition 0 is used)
	}
	return s
}

// Validate checks the catalog configuration.
func (c Catalog) Validate() error {
	if c.Partitions < 1 {
		return fmt.Errorf("topics: partitions must be >= 1, got %d", c.Partitions)
	}
	if c.ReplicationFactor < 0 {
		return fmt.Errorf("topics: replication_factor must be >= 0 (0: the cluster's default), got %d", c.ReplicationFactor)
	}
	if c.MinInsyncReplicas < 0 {
		return fmt.Errorf("topics: min_insync_replicas must be >= 0 (0: RF-1 from RF 3, else the cluster's), got %d", c.MinInsyncReplicas)
	}
	if c.ReplicationFactor > 0 && c.MinInsyncReplicas > c.ReplicationFactor {
		return fmt.Errorf("topics: min_insync_replicas %d exceeds replication_factor %d: no write could ever be acknowledged",
			c.MinInsyncReplicas, c.ReplicationFactor)
	}
	if strings.ContainsAny(c.Prefix, " /\\") {
		return fmt.Errorf("topics: prefix %q contains invalid characters", c.Prefix)
	}
	return nil
}
