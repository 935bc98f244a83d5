// Package pipeline is the stage runtime: Kafka transport (a Watermill
// Publisher/Subscriber on segmentio/kafka-go), the router with middleware
// (recover, retry, DLQ), a partition-aware consumer for stateful stages,
// metrics, health and graceful shutdown.
//
// Stages do not import Watermill or kafka-go: a stateless stage is a
// Handler over Records; a stateful stage is a PartitionProcessor.
package pipeline

import (
	"context"
	"errors"
	"time"

	"github.com/murphy-rl/murphy/topics"
)

// Record is one consumed Kafka record.
type Record struct {
	Topic     string
	Partition int
	Offset    int64
	Key       []byte
	Value     []byte
	Headers   map[string]string
	Time      time.Time
}

// Out is one record to produce. Key is the tree id (task id on the tasks topic).
type Out struct {
	Topic   string
	Key     string
	Value   []byte
	Headers map[string]string
	// Partition, when set (ToPartition), is the partition the record goes
	// to (modulo the topic's partition count); unset, the key's murmur2
	// hash decides, as Java and Python producers do.
	Partition PartitionChoice
}

// PartitionChoice is an Out's explicit partition; the zero value lets the
// key decide.
type PartitionChoice struct{ p int32 }

// ToPartition sends an Out to partition p (p >= 0).
func ToPartition(p int) PartitionChoice { return PartitionChoice{p: int32(p) + 1} }

// Get returns the explicit partition, false when the key decides.
func (c PartitionChoice) Get() (int, bool) { return int(c.p) - 1, c.p > 0 }

// Handler processes one record of a stateless stage. The returned records are
// produced (acks=all) and acknowledged before the input's offset may be
// committed (the handler returns first, freeing its Concurrency slot; the
// record counts against RuntimeConfig.MaxUnsettled until then), and a
// failed write redelivers the input.
// A poison error (see IsPoison) sends the input to the DLQ; a transient one
// (IsTransient) is retried with backoff and then redelivered; any other
// error is retried with backoff and, when retries are exhausted,
// dead-lettered.
type Handler func(ctx context.Context, rec Record) ([]Out, error)

// Stage describes a stateless stage for the runtime.
type Stage struct {
	// Name labels metrics, logs and the consumer group ("murphy-<name>").
	Name string
	// Inputs are the concrete topics consumed.
	Inputs []string
	// Handler processes one record.
	Handler Handler
	// Concurrency is the number of records processed at once per input
	// (0 = 1). Order within a partition is then not guaranteed; stages that
	// need it use a PartitionConsumer instead.
	Concurrency int
}

// Producer writes records with acks from all in-sync replicas.
type Producer interface {
	// Produce writes outs and returns once the brokers acknowledged them.
	Produce(ctx context.Context, outs ...Out) error
	// ProduceAsync queues outs and returns at once; done is called with the
	// outcome once the brokers acknowledged them (or the write failed), from
	// the producer's goroutine, so it must not block. After Close it is
	// called at once with an error.
	ProduceAsync(outs []Out, done func(error))
	Close() error
}

// PartitionProcessor is the per-partition state machine of a stateful stage.
// The runtime calls its methods from one goroutine per partition. A poison
// error from Process sends the record to the DLQ (the processor should then
// count it as consumed); any other error is retried with backoff until it
// succeeds, since dropping a record would leave its tree open.
type PartitionProcessor interface {
	// Process handles the next record of the partition, in offset order.
	Process(ctx context.Context, rec Record) error
	// Tick is called periodically, with or without records (deadlines,
	// time-bounded flushes).
	Tick(ctx context.Context, now time.Time) error
	// CommitOffset is the offset to commit: where a restarted consumer starts.
	// A stage holding open state commits its low watermark, not the last record.
	CommitOffset() (offset int64, ok bool)
	// Close releases the partition (revocation or shutdown).
	Close(ctx context.Context) error
}

// Assignment tells a stateful stage which partition it got and where the
// group's committed offset stands (-1 when nothing was committed).
type Assignment struct {
	Topic     string
	Partition int
	Committed int64
}

// PartitionStage describes a stateful stage for the runtime.
type PartitionStage struct {
	Name  string
	Input string
	// Assigned is called on partition assignment; the consumer starts at the
	// committed offset (or the earliest one).
	Assigned func(ctx context.Context, a Assignment) (PartitionProcessor, error)
	// Revoked is called after the processor of a revoked partition was closed.
	Revoked func(a Assignment)
	// TickInterval is how often Tick runs (0 = 1s).
	TickInterval time.Duration
}

// Decode decodes a record value into r (topics.Decode: schema version,
// JSON, validation). A value that does not decode is poison, dead-lettered
// with the codec's reason (PoisonReason).
func Decode(value []byte, r topics.Record) error {
	if err := topics.Decode(value, r); err != nil {
		return topics.Poison(PoisonReason(err), err)
	}
	return nil
}

// PoisonReason is the DLQ reason of a record error: the *topics.Error's
// reason, or "malformed".
func PoisonReason(err error) string {
	var te *topics.Error
	if errors.As(err, &te) {
		return te.Reason()
	}
	return "malformed"
}

// KafkaConfig locates the cluster and tunes the clients.
type KafkaConfig struct {
	// Brokers are host:port seed addresses.
	Brokers []string `yaml:"brokers"`
	// ClientID names this process to the brokers.
	ClientID string `yaml:"client_id"`
	// BatchTimeout bounds how long the producer waits to fill a batch.
	BatchTimeout time.Duration `yaml:"batch_timeout"`
	// StartupTimeout bounds how long creating and waiting for the topics may
	// take at startup, so a stage started while the brokers are down or
	// restarting waits for them instead of exiting. Zero means 2 minutes.
	// Brokers that refuse the client (SASL credentials, certificates) fail
	// it at once, with their error.
	StartupTimeout time.Duration `yaml:"startup_timeout"`
	// CommitInterval spaces a stateless stage's offset commits: after a
	// commit the next waits at least this long (the last one, at shutdown,
	// does not). Each commit is a write on the broker, so committing after
	// every settled record costs throughput; a crash redelivers at most
	// this much more. 0 commits as soon as the previous commit is done.
	CommitInterval time.Duration `yaml:"commit_interval"`
	// SASL authenticates every connection with a user name and password
	// (SCRAM or PLAIN); off unless a mechanism is set.
	SASL KafkaSASLConfig `yaml:"sasl"`
	// TLS encrypts every connection and checks the brokers' certificates,
	// optionally presenting a client certificate (mutual TLS).
	TLS KafkaTLSConfig `yaml:"tls"`
}

// KafkaSASLConfig is the SASL authentication of every Kafka client
// (SASL_SSL with KafkaConfig.TLS enabled, else SASL_PLAINTEXT). See
// deploy/kafka/README.md.
type KafkaSASLConfig struct {
	// Mechanism is SCRAM-SHA-512, SCRAM-SHA-256 or PLAIN ("" = no SASL).
	// PLAIN sends the password as it is: use it only with TLS.
	Mechanism string `yaml:"mechanism"`
	// Username is the SASL user (for Strimzi, the KafkaUser's name).
	Username string `yaml:"username"`
	// Password is the SASL password. Prefer password_file, or the environment
	// (MURPHY_KAFKA__SASL__PASSWORD), to keep it out of the YAML file; set
	// one of the two.
	Password string `yaml:"password"`
	// PasswordFile is a file holding the SASL password (a mounted Secret, e.g.
	// Strimzi's KafkaUser secret key "password"); a final newline is ignored.
	// It is read whenever a client is created.
	PasswordFile string `yaml:"password_file"`
}

// KafkaTLSConfig is the TLS of every Kafka client. See deploy/kafka/README.md.
type KafkaTLSConfig struct {
	// Enabled turns TLS on for every connection to the brokers.
	Enabled bool `yaml:"enabled"`
	// CAFile is a PEM file of the CA certificates the brokers' certificates
	// must chain to ("" = the system's roots); for Strimzi, the cluster CA's
	// ca.crt.
	CAFile string `yaml:"ca_file"`
	// CertFile is a PEM client certificate (chain) presented to the brokers
	// for mutual TLS, with key_file; for Strimzi, a TLS KafkaUser's user.crt.
	CertFile string `yaml:"cert_file"`
	// KeyFile is the PEM private key of cert_file (user.key for Strimzi).
	KeyFile string `yaml:"key_file"`
	// ServerName is the host name the brokers' certificates must carry
	// ("" = the host of the address dialled).
	ServerName string `yaml:"server_name"`
	// InsecureSkipVerify accepts any broker certificate, unchecked: for
	// debugging only, it defeats TLS's protection against impersonation.
	InsecureSkipVerify bool `yaml:"insecure_skip_verify"`
}

// DefaultKafkaConfig is a local single broker with low-latency batching.
func DefaultKafkaConfig() KafkaConfig {
	return KafkaConfig{Brokers: []string{"127.0.0.1:9092"}, ClientID: "murphy", BatchTimeout: 2 * time.Millisecond,
		StartupTimeout: 2 * time.Minute, CommitInterval: 100 * time.Millisecond}
}
