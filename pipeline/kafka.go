package pipeline

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/murphy-rl/murphy/topics"
	"github.com/segmentio/kafka-go"
)

// Validate checks the Kafka configuration.
func (c KafkaConfig) Validate() error {
	if len(c.Brokers) == 0 {
		return errors.New("kafka: no brokers configured")
	}
	for _, b := range c.Brokers {
		if _, _, err := net.SplitHostPort(b); err != nil {
			return fmt.Errorf("kafka: broker %q: %w", b, err)
		}
	}
	if c.BatchTimeout < 0 {
		return errors.New("kafka: batch_timeout must be >= 0")
	}
	if c.StartupTimeout < 0 {
		return errors.New("kafka: startup_timeout must be >= 0")
	}
	if c.CommitInterval < 0 {
		return errors.New("kafka: commit_interval must be >= 0")
	}
	// SASL and TLS: the mechanism and its credentials, the certificate files.
	if _, _, err := c.security(); err != nil {
		return err
	}
	return nil
}

func (c KafkaConfig) clientID() string {
	if c.ClientID == "" {
		return "murphy"
	}
	return c.ClientID
}

// newWriter is the one producer configuration of the project: acks from all
// in-sync replicas, the partitioner (an Out's explicit partition, else
// murmur2 of the key, so keyed records land where Java and Python producers
// put them) and a small batch timeout.
func newWriter(c KafkaConfig) *kafka.Writer {
	bt := c.BatchTimeout
	if bt == 0 {
		bt = 2 * time.Millisecond
	}
	return &kafka.Writer{
		Addr:         kafka.TCP(c.Brokers...),
		Balancer:     partitioner{},
		RequiredAcks: kafka.RequireAll,
		BatchTimeout: bt,
		BatchSize:    1000,
		BatchBytes:   topics.DefaultMaxMessageBytes + 1<<20,
		MaxAttempts:  10,
		// Unknown topics trigger a metadata request instead of failing from
		// the transport's cache (topics created by another process).
		AllowAutoTopicCreation: true,
		// Backoffs cover a broker restart (several seconds) before Produce fails.
		WriteBackoffMin: 100 * time.Millisecond,
		WriteBackoffMax: 2 * time.Second,
		ReadTimeout:     30 * time.Second,
		WriteTimeout:    30 * time.Second,
		Transport:       c.Transport(),
	}
}

// kafkaProducer implements Producer with group commit: concurrent Produce
// calls are gathered into one WriteMessages call while the previous one is in
// flight, so batches grow with load instead of waiting for a timer, and each
// caller returns when its own records are acknowledged.
type kafkaProducer struct {
	w    *kafka.Writer
	reqs chan *produceReq
	// mu guards closed: senders hold it shared while they enqueue, so that
	// once Close holds it every queued request is in reqs and gets written.
	mu        sync.RWMutex
	closed    bool
	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

type produceReq struct {
	msgs []kafka.Message
	done chan error  // Produce waits here
	cb   func(error) // or ProduceAsync's callback
}

const (
	// producerLoops write concurrently (NewProducer); each gathers its own
	// batches.
	producerLoops = 2
	// maxGroupRecords bounds one group-committed write.
	maxGroupRecords = 4096
)

var errProducerClosed = errors.New("producer closed")

// NewProducer returns the project's producer: acks=all, murmur2. Two
// writes may be in flight at once, so calls made one after the other can
// reach a partition in either order.
func NewProducer(cfg KafkaConfig) Producer { return newKafkaProducer(cfg, producerLoops) }

// NewOrderedProducer is NewProducer with one write in flight at a time:
// records reach each partition in the order of the calls that produced
// them (a call that fails may be followed by later calls that succeed).
// A stage whose restart logic reads its output back in log order, like
// credit, produces through it.
func NewOrderedProducer(cfg KafkaConfig) Producer { return newKafkaProducer(cfg, 1) }

func newKafkaProducer(cfg KafkaConfig, loops int) *kafkaProducer {
	p := &kafkaProducer{w: newWriter(cfg), reqs: make(chan *produceReq, 1024), stop: make(chan struct{})}
	// Batches form in the group-commit loops; the writer's own timer only
	// needs to let one call's records reach every partition batch.
	p.w.BatchTimeout = 100 * time.Microsecond
	// BatchSize caps the records of one partition's produce request, and
	// kafka-go allocates that capacity up front for every batch: a bigger
	// group simply becomes several requests per partition.
	p.w.BatchSize = 128
	for i := 0; i < loops; i++ {
		p.wg.Add(1)
		go p.loop()
	}
	return p
}

// request builds a pooled request for outs.
func request(outs []Out) *produceReq {
	r := reqPool.Get().(*produceReq)
	for _, o := range outs {
		r.msgs = append(r.msgs, toKafka(o))
	}
	return r
}

// enqueue hands r to the write loops; an error means the producer is
// closed (or ctx ended first) and r was not queued.
func (p *kafkaProducer) enqueue(ctx context.Context, r *produceReq) error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return errProducerClosed
	}
	select {
	case p.reqs <- r:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *kafkaProducer) Produce(ctx context.Context, outs ...Out) error {
	if len(outs) == 0 {
		return nil
	}
	r := request(outs)
	if err := p.enqueue(ctx, r); err != nil {
		r.release()
		return err
	}
	select {
	case err := <-r.done:
		// The loop is done with r: it can be reused.
		r.release()
		if err != nil {
			return fmt.Errorf("produce %d records to %s: %w", len(outs), outs[0].Topic, err)
		}
		return nil
	case <-ctx.Done():
		// The loop still holds r and will answer on done: not reused.
		return ctx.Err()
	}
}

func (p *kafkaProducer) ProduceAsync(outs []Out, done func(error)) {
	if len(outs) == 0 {
		done(nil)
		return
	}
	r := request(outs)
	r.cb = done
	if err := p.enqueue(context.Background(), r); err != nil {
		r.release()
		done(err)
	}
}

// reqPool recycles produce requests (their slice and channel).
var reqPool = sync.Pool{New: func() any { return &produceReq{done: make(chan error, 1)} }}

func (r *produceReq) release() {
	r.cb = nil
	clear(r.msgs)
	r.msgs = r.msgs[:0]
	reqPool.Put(r)
}

// loop writes groups of queued requests until Close, then writes what is
// still queued and returns.
func (p *kafkaProducer) loop() {
	defer p.wg.Done()
	for {
		var first *produceReq
		select {
		case first = <-p.reqs:
		case <-p.stop:
			select {
			case first = <-p.reqs:
			default:
				return
			}
		}
		group, n := p.gather(first)
		p.write(group, n)
	}
}

// gather collects the requests queued after first (those that arrived
// while the previous write was in flight) into one group of at most
// maxGroupRecords records.
func (p *kafkaProducer) gather(first *produceReq) ([]*produceReq, int) {
	group := []*produceReq{first}
	n := len(first.msgs)
	for n < maxGroupRecords {
		select {
		case r := <-p.reqs:
			group = append(group, r)
			n += len(r.msgs)
		default:
			return group, n
		}
	}
	return group, n
}

// write sends a group in one call and tells each caller its own outcome.
func (p *kafkaProducer) write(group []*produceReq, n int) {
	msgs := make([]kafka.Message, 0, n)
	for _, r := range group {
		msgs = append(msgs, r.msgs...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	err := p.w.WriteMessages(ctx, msgs...)
	cancel()
	var werrs kafka.WriteErrors
	perMessage := errors.As(err, &werrs) && len(werrs) == len(msgs)
	i := 0
	for _, r := range group {
		var rerr error
		switch {
		case err == nil:
		case perMessage:
			for j := range r.msgs {
				if werrs[i+j] != nil {
					rerr = werrs[i+j]
					break
				}
			}
		default:
			rerr = err
		}
		i += len(r.msgs)
		if r.cb != nil {
			if rerr != nil {
				rerr = fmt.Errorf("produce %d records to %s: %w", len(r.msgs), r.msgs[0].Topic, rerr)
			}
			cb := r.cb
			r.release()
			cb(rerr)
			continue
		}
		r.done <- rerr
	}
}

func (p *kafkaProducer) Close() error {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		p.closed = true
		p.mu.Unlock()
		close(p.stop)
		p.wg.Wait()
		p.closeErr = p.w.Close()
		closeTransport(p.w)
	})
	return p.closeErr
}

// closeTransport releases the connections of a closed writer's transport
// (a writer closes only a transport it created itself).
func closeTransport(w *kafka.Writer) {
	if t, ok := w.Transport.(*kafka.Transport); ok {
		t.CloseIdleConnections()
	}
}

// partitioner sends a message to the partition its Out chose, else by the
// murmur2 hash of its key. toKafka carries the choice in Message.Partition
// (p+1; 0 = none), which kafka-go's writer reads only through its balancer.
type partitioner struct{ murmur2 kafka.Murmur2Balancer }

func (b partitioner) Balance(msg kafka.Message, partitions ...int) int {
	if msg.Partition > 0 && len(partitions) > 0 {
		return partitions[(msg.Partition-1)%len(partitions)]
	}
	return b.murmur2.Balance(msg, partitions...)
}

func toKafka(o Out) kafka.Message {
	m := kafka.Message{Topic: o.Topic, Value: o.Value}
	if p, ok := o.Partition.Get(); ok {
		m.Partition = p + 1
	}
	if o.Key != "" {
		m.Key = []byte(o.Key)
	}
	for k, v := range o.Headers {
		m.Headers = append(m.Headers, kafka.Header{Key: k, Value: []byte(v)})
	}
	return m
}

func fromKafka(m kafka.Message) Record {
	r := Record{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset, Key: m.Key, Value: m.Value, Time: m.Time}
	if len(m.Headers) > 0 {
		r.Headers = make(map[string]string, len(m.Headers))
		for _, h := range m.Headers {
			r.Headers[h.Key] = string(h.Value)
		}
	}
	return r
}

// EnsureTopics creates every topic of the catalog that does not exist yet.
func EnsureTopics(ctx context.Context, cfg KafkaConfig, cat topics.Catalog) error {
	specs := make([]topics.Spec, 0, len(topics.All()))
	for _, n := range topics.All() {
		specs = append(specs, cat.Spec(n))
	}
	return createTopics(ctx, cfg, cat, specs...)
}

func createTopics(ctx context.Context, cfg KafkaConfig, cat topics.Catalog, specs ...topics.Spec) error {
	reqs := make([]kafka.TopicConfig, 0, len(specs))
	for _, s := range specs {
		tc := kafka.TopicConfig{
			Topic:         cat.Topic(s.Name),
			NumPartitions: s.Partitions,
			ConfigEntries: []kafka.ConfigEntry{
				{ConfigName: "max.message.bytes", ConfigValue: strconv.Itoa(s.MaxMessageBytes)},
			},
		}
		if s.Compacted {
			tc.ConfigEntries = append(tc.ConfigEntries, kafka.ConfigEntry{ConfigName: "cleanup.policy", ConfigValue: "compact"})
		}
		reqs = append(reqs, tc)
	}
	t := cfg.Transport()
	defer t.CloseIdleConnections()
	return createTopicConfigsWith(ctx, cfg, t, cat, reqs...)
}

// createTopicConfigsWith creates the topics of reqs that do not exist yet
// through rt (so that a writer sharing rt sees them in its metadata cache
// at once), replicated as repl's ReplicationFactor and MinInsyncReplicas
// say, resolved against the cluster (Cluster.Replication). Topics that
// exist are left as they are, so a stage restarting while a broker is down
// only waits for its topics' leaders.
func createTopicConfigsWith(ctx context.Context, cfg KafkaConfig, rt kafka.RoundTripper, repl topics.Catalog, reqs ...kafka.TopicConfig) error {
	timeout := cfg.StartupTimeout
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &kafka.Client{Addr: kafka.TCP(cfg.Brokers...), Timeout: 30 * time.Second, Transport: rt}
	names := make([]string, len(reqs))
	for i, r := range reqs {
		names[i] = r.Topic
	}
	created := false
	var lastErr error
	// Brokers that are down or restarting are waited for; brokers that
	// refuse this client (credentials, certificates) fail at once.
	permanent := func(err error) error {
		if authFailure(err) || invalidReplication(err) {
			return backoff.Permanent(err)
		}
		return err
	}
	_, err := backoff.Retry(ctx, func() (struct{}, error) {
		if !created {
			if lastErr = createMissing(ctx, client, repl, reqs); lastErr != nil {
				return struct{}{}, permanent(lastErr)
			}
			created = true
		}
		lastErr = topicsReady(ctx, client, names)
		return struct{}{}, permanent(lastErr)
	}, backoff.WithBackOff(newBackOff(50*time.Millisecond, 2*time.Second)), backoff.WithMaxElapsedTime(0))
	if err == nil {
		return nil
	}
	if lastErr == nil {
		lastErr = err
	}
	if authFailure(lastErr) {
		return authError(cfg, lastErr)
	}
	if invalidReplication(lastErr) {
		return lastErr
	}
	return fmt.Errorf("topics not ready within %s (kafka.startup_timeout): %w", timeout, lastErr)
}

// createMissing creates the topics of reqs the metadata does not list,
// replicated as repl says on this cluster.
func createMissing(ctx context.Context, client *kafka.Client, repl topics.Catalog, reqs []kafka.TopicConfig) error {
	names := make([]string, len(reqs))
	for i, r := range reqs {
		names[i] = r.Topic
	}
	md, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: names})
	if err != nil {
		return fmt.Errorf("create topics: metadata: %w", err)
	}
	exists := map[string]bool{}
	for _, t := range md.Topics {
		if t.Error == nil || !errors.Is(t.Error, kafka.UnknownTopicOrPartition) {
			exists[t.Name] = true
		}
	}
	var missing []kafka.TopicConfig
	for _, r := range reqs {
		if !exists[r.Topic] {
			missing = append(missing, r)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	cl, err := describeCluster(ctx, client)
	if err != nil {
		return fmt.Errorf("create topics: %w", err)
	}
	r, err := cl.Replication(repl)
	if err != nil {
		return err
	}
	missing = slices.Clone(missing)
	applyReplication(missing, r)
	return createOnce(ctx, client, missing)
}

// createOnce sends one CreateTopics request; topics that exist already are
// fine, and so are topics this client may not create (a user without the
// Create ACL, its topics made by an operator): topicsReady then says
// whether they exist.
func createOnce(ctx context.Context, client *kafka.Client, reqs []kafka.TopicConfig) error {
	resp, err := client.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: reqs})
	if errors.Is(err, kafka.BrokerNotAvailable) && len(reqs) > 0 {
		// kafka-go says so when it could not reach the controller; its
		// metadata request tells why (a refused connection, a failed TLS
		// handshake or SASL authentication).
		if _, merr := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{reqs[0].Topic}}); merr != nil {
			err = merr
		}
	}
	if err != nil {
		return fmt.Errorf("create topics: %w", err)
	}
	var errs []error
	for name, terr := range resp.Errors {
		if terr != nil && !errors.Is(terr, kafka.TopicAlreadyExists) &&
			!errors.Is(terr, kafka.TopicAuthorizationFailed) && !errors.Is(terr, kafka.ClusterAuthorizationFailed) {
			errs = append(errs, fmt.Errorf("create topic %s: %w", name, terr))
		}
	}
	return errors.Join(errs...)
}

// topicsReady reports whether the metadata shows every topic with a leader
// for each partition, and if not, which topic is missing what.
func topicsReady(ctx context.Context, client *kafka.Client, names []string) error {
	md, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: names})
	if err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	seen := map[string]bool{}
	for _, t := range md.Topics {
		seen[t.Name] = true
		switch {
		case t.Error != nil:
			return fmt.Errorf("topic %s: %w", t.Name, t.Error)
		case len(t.Partitions) == 0:
			return fmt.Errorf("topic %s: no partitions yet", t.Name)
		}
		for _, p := range t.Partitions {
			if p.Leader.Host == "" {
				return fmt.Errorf("topic %s partition %d: no leader yet", t.Name, p.ID)
			}
		}
	}
	for _, n := range names {
		if !seen[n] {
			return fmt.Errorf("topic %s: not in metadata yet", n)
		}
	}
	return nil
}

// newBackOff is the project's retry delay (cenkalti/backoff): exponential
// from initial, capped at max, with jitter, never giving up by itself.
func newBackOff(initial, max time.Duration) *backoff.ExponentialBackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxInterval = initial, max
	return b
}
