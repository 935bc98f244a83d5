package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/cenkalti/backoff/v5"
	"github.com/murphy-rl/murphy/topics"
	"github.com/segmentio/kafka-go"
)

// Metadata keys that carry Kafka coordinates on Watermill messages. Other
// metadata travels as Kafka headers.
const (
	MetaKey       = "_kafka_key"
	MetaTopic     = "_kafka_topic"
	MetaPartition = "_kafka_partition"
	MetaOffset    = "_kafka_offset"
	// metaUUID carries the Watermill message UUID as a header.
	metaUUID = "_watermill_uuid"
)

// PublisherConfig configures the Watermill publisher.
type PublisherConfig struct {
	Kafka KafkaConfig
	// CreatePartitions, when > 0, creates a topic with this many partitions
	// on first publish if it does not exist yet.
	CreatePartitions int
	// Replication of the topics it creates: ReplicationFactor and
	// MinInsyncReplicas as in topics.Catalog (0: the cluster's default).
	Replication topics.Catalog
}

// Publisher is a Watermill message.Publisher on kafka-go.
type Publisher struct {
	cfg     PublisherConfig
	w       *kafka.Writer
	mu      sync.Mutex
	created map[string]bool
	closed  chan struct{}
	once    sync.Once
}

var _ message.Publisher = (*Publisher)(nil)

// NewPublisher returns a Publisher. It is safe for concurrent use.
func NewPublisher(cfg PublisherConfig) (*Publisher, error) {
	if err := cfg.Kafka.Validate(); err != nil {
		return nil, err
	}
	return &Publisher{cfg: cfg, w: newWriter(cfg.Kafka), created: map[string]bool{}, closed: make(chan struct{})}, nil
}

// Publish writes messages synchronously (acks=all). The message key is the
// MetaKey metadata; the other metadata become headers.
func (p *Publisher) Publish(topic string, msgs ...*message.Message) error {
	select {
	case <-p.closed:
		return errors.New("publisher closed")
	default:
	}
	if len(msgs) == 0 {
		return nil
	}
	ctx := msgs[0].Context()
	if err := p.ensure(ctx, topic); err != nil {
		return err
	}
	kms := make([]kafka.Message, len(msgs))
	for i, m := range msgs {
		km := kafka.Message{Topic: topic, Value: m.Payload}
		if k := m.Metadata.Get(MetaKey); k != "" {
			km.Key = []byte(k)
		}
		km.Headers = append(km.Headers, kafka.Header{Key: metaUUID, Value: []byte(m.UUID)})
		for k, v := range m.Metadata {
			if k == MetaKey || k == MetaTopic || k == MetaPartition || k == MetaOffset {
				continue
			}
			km.Headers = append(km.Headers, kafka.Header{Key: k, Value: []byte(v)})
		}
		kms[i] = km
	}
	if err := p.w.WriteMessages(ctx, kms...); err != nil {
		return fmt.Errorf("publish to %s: %w", topic, err)
	}
	return nil
}

func (p *Publisher) ensure(ctx context.Context, topic string) error {
	if p.cfg.CreatePartitions <= 0 {
		return nil
	}
	p.mu.Lock()
	done := p.created[topic]
	p.mu.Unlock()
	if done {
		return nil
	}
	err := createTopicConfigsWith(ctx, p.cfg.Kafka, p.w.Transport, p.cfg.Replication, kafka.TopicConfig{Topic: topic, NumPartitions: p.cfg.CreatePartitions})
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.created[topic] = true
	p.mu.Unlock()
	return nil
}

// Close flushes and closes the writer; it is idempotent.
func (p *Publisher) Close() error {
	var err error
	p.once.Do(func() {
		close(p.closed)
		err = p.w.Close()
		closeTransport(p.w)
	})
	return err
}

// SubscriberConfig configures the Watermill subscriber.
type SubscriberConfig struct {
	Kafka KafkaConfig
	// ConsumerGroup is the Kafka consumer group. Required.
	ConsumerGroup string
	// MaxInFlight is how many messages of one subscription may be awaiting
	// Ack at once. 1 (the default) gives strict order and ack-before-next;
	// more lets handlers run concurrently, committing the contiguous prefix
	// of acked offsets per partition.
	MaxInFlight int
	// CommitInterval, when > 0, spaces commits: after one the next waits at
	// least this long (0: ack → commit at once, as Watermill expects).
	CommitInterval time.Duration
	// NackResendSleep is the pause before a nacked message is redelivered.
	NackResendSleep time.Duration
	// MaxWait bounds how long a fetch waits for new data (latency).
	MaxWait time.Duration
	// SessionTimeout is the consumer group session timeout.
	SessionTimeout time.Duration
	// CloseTimeout bounds Close; a Close never hangs longer.
	CloseTimeout time.Duration
	// CreatePartitions, when > 0, creates the topic with this many
	// partitions before subscribing if it does not exist yet.
	CreatePartitions int
	// Replication of the topics it creates: ReplicationFactor and
	// MinInsyncReplicas as in topics.Catalog (0: the cluster's default).
	Replication topics.Catalog
	// OnMessage, if set, is called for every fetched record (metrics: lag).
	OnMessage func(topic string, partition int, offset, highWaterMark int64)
	Logger    watermill.LoggerAdapter

	// handlerSettles: the consumer settles every message through its
	// delivery instead of Ack/Nack (the runtime's handlers).
	handlerSettles bool
}

func (c *SubscriberConfig) setDefaults() {
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = 1
	}
	if c.NackResendSleep <= 0 {
		c.NackResendSleep = 100 * time.Millisecond
	}
	if c.MaxWait <= 0 {
		c.MaxWait = 250 * time.Millisecond
	}
	if c.SessionTimeout <= 0 {
		c.SessionTimeout = 10 * time.Second
	}
	if c.CloseTimeout <= 0 {
		c.CloseTimeout = 15 * time.Second
	}
	if c.Logger == nil {
		c.Logger = watermill.NopLogger{}
	}
}

// Subscriber is a Watermill message.Subscriber on kafka-go: one reader per
// subscription in a consumer group; Ack commits synchronously, Nack redelivers.
type Subscriber struct {
	cfg     SubscriberConfig
	tr      *kafka.Transport // topic creation; one per subscriber
	closing chan struct{}
	once    sync.Once
	wg      sync.WaitGroup
}

var _ message.Subscriber = (*Subscriber)(nil)

// NewSubscriber returns a Subscriber.
func NewSubscriber(cfg SubscriberConfig) (*Subscriber, error) {
	if err := cfg.Kafka.Validate(); err != nil {
		return nil, err
	}
	if cfg.ConsumerGroup == "" {
		return nil, errors.New("subscriber: consumer group is required")
	}
	cfg.setDefaults()
	return &Subscriber{cfg: cfg, tr: cfg.Kafka.Transport(), closing: make(chan struct{})}, nil
}

// Subscribe starts a group member on topic. The channel closes when ctx is
// cancelled or the subscriber is closed.
func (s *Subscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	select {
	case <-s.closing:
		return nil, errors.New("subscriber closed")
	default:
	}
	if s.cfg.CreatePartitions > 0 {
		if err := s.SubscribeInitialize(topic); err != nil {
			return nil, err
		}
	}
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:           s.cfg.Kafka.Brokers,
		GroupID:           s.cfg.ConsumerGroup,
		Topic:             topic,
		Dialer:            s.cfg.Kafka.Dialer(),
		MinBytes:          1,
		MaxBytes:          topics.DefaultMaxMessageBytes + 1<<20,
		MaxWait:           s.cfg.MaxWait,
		QueueCapacity:     max(100, s.cfg.MaxInFlight),
		StartOffset:       kafka.FirstOffset,
		CommitInterval:    0, // synchronous commits
		HeartbeatInterval: s.cfg.SessionTimeout / 5,
		SessionTimeout:    s.cfg.SessionTimeout,
		RebalanceTimeout:  s.cfg.SessionTimeout,
		JoinGroupBackoff:  500 * time.Millisecond,
		ReadBackoffMin:    50 * time.Millisecond,
		ReadBackoffMax:    500 * time.Millisecond,
		MaxAttempts:       10,
		// A topic created or grown after the member joined is picked up.
		WatchPartitionChanges:  true,
		PartitionWatchInterval: 2 * time.Second,
	})
	// For the runtime, a buffer lets fetching run ahead of the router in
	// bursts (the buffered messages hold slots of the in-flight window).
	buffer := 0
	if s.cfg.handlerSettles && s.cfg.MaxInFlight > 1 {
		buffer = min(s.cfg.MaxInFlight, 256)
	}
	out := make(chan *message.Message, buffer)
	subCtx, cancel := context.WithCancel(ctx)
	sub := &subscription{s: s, r: r, out: out, ctx: subCtx, topic: topic}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer sub.closeOut()
		// Leave the group before the channel closes, so that a new
		// subscription of the same group gets the partitions at once.
		defer r.Close()
		defer cancel()
		go func() {
			select {
			case <-s.closing:
				cancel()
			case <-subCtx.Done():
			}
		}()
		sub.run()
	}()
	return out, nil
}

// SubscribeInitialize creates topic (with CreatePartitions partitions, or 1)
// if it does not exist yet.
func (s *Subscriber) SubscribeInitialize(topic string) error {
	n := max(s.cfg.CreatePartitions, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return createTopicConfigsWith(ctx, s.cfg.Kafka, s.tr, s.cfg.Replication, kafka.TopicConfig{Topic: topic, NumPartitions: n})
}

var _ message.SubscribeInitializer = (*Subscriber)(nil)

// Close stops every subscription and closes the readers (leaving the group).
// It is idempotent and returns within CloseTimeout.
func (s *Subscriber) Close() error {
	var err error
	s.once.Do(func() {
		close(s.closing)
		done := make(chan struct{})
		go func() {
			s.wg.Wait()
			s.tr.CloseIdleConnections()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(s.cfg.CloseTimeout):
			err = errors.New("subscriber: close timed out")
		}
	})
	return err
}

type subscription struct {
	s     *Subscriber
	r     *kafka.Reader
	out   chan *message.Message
	ctx   context.Context
	topic string

	mu           sync.Mutex
	pending      map[int][]*inflight // per partition, in offset order
	commitClosed bool                // commitC is closed; guarded by mu
	slots        chan struct{}
	commitC      chan struct{}
	open         sync.WaitGroup // delivered and not settled yet

	// outMu orders sends on out before its close: a late redelivery (a
	// timer) must find out closed rather than panic on it.
	outMu     sync.RWMutex
	outClosed bool
}

func (sub *subscription) closeOut() {
	sub.outMu.Lock()
	defer sub.outMu.Unlock()
	sub.outClosed = true
	close(sub.out)
}

// send hands msg to the consumer unless the subscription ended first.
func (sub *subscription) send(msg *message.Message) bool {
	sub.outMu.RLock()
	defer sub.outMu.RUnlock()
	if sub.outClosed || sub.ctx.Err() != nil {
		return false
	}
	select {
	case sub.out <- msg:
		return true
	case <-sub.ctx.Done():
		return false
	}
}

// inflight is one fetched record until it is settled.
type inflight struct {
	sub  *subscription
	km   kafka.Message
	done bool // acked; guarded by sub.mu
}

// delivery is one delivery of an inflight record, and the context of the
// message delivered for it: a context that ends with the subscription and
// through which the runtime finds the record without a lookup.
type delivery struct {
	context.Context
	it *inflight
	// later: the handler handed the settling to someone else (an
	// asynchronous produce); only the handler's goroutine touches it.
	later bool
}

type deliveryKey struct{}

func (d *delivery) Value(key any) any {
	if key == (deliveryKey{}) {
		return d
	}
	return d.Context.Value(key)
}

// deliveryOf returns the delivery a message context belongs to, or nil.
func deliveryOf(ctx context.Context) *delivery {
	d, _ := ctx.Value(deliveryKey{}).(*delivery)
	return d
}

// errNacked settles a message that its consumer nacked.
var errNacked = errors.New("nacked")

// settle reports the outcome of handling a delivery from a Subscriber with
// handlerSettles: nil acks it, an error redelivers it. The runtime calls it
// from the handler's goroutine (or from the producer once the handler's
// outputs are acknowledged), so that no goroutine per message waits on
// Watermill's ack channels.
func (d *delivery) settle(err error) { d.it.sub.settle(d.it, err) }

// run fetches records and delivers them in fetch order, at most MaxInFlight
// unsettled at once. A message is settled by its Ack or Nack (a goroutine per
// message watches them) or, for the runtime, through delivery.settle.
func (sub *subscription) run() {
	cfg := sub.s.cfg
	sub.pending = map[int][]*inflight{}
	sub.slots = make(chan struct{}, cfg.MaxInFlight)
	sub.commitC = make(chan struct{}, 1)
	commitDone := make(chan struct{})
	go func() {
		defer close(commitDone)
		sub.commitLoop()
	}()
	defer func() {
		// Records still being handled get a bounded time to settle, so that
		// what they finished is committed before the group is left.
		settled := make(chan struct{})
		go func() {
			sub.open.Wait()
			close(settled)
		}()
		deadline := time.After(cfg.CloseTimeout)
	wait:
		for {
			sub.drain()
			select {
			case <-settled:
				break wait
			case <-deadline:
				cfg.Logger.Error("records still unsettled at close; they will be redelivered", nil, watermill.LogFields{"topic": sub.topic})
				break wait
			case <-time.After(20 * time.Millisecond):
			}
		}
		sub.mu.Lock()
		sub.commitClosed = true
		close(sub.commitC)
		sub.mu.Unlock()
		<-commitDone
	}()
	for {
		select {
		case sub.slots <- struct{}{}:
		case <-sub.ctx.Done():
			return
		}
		km, err := sub.r.FetchMessage(sub.ctx)
		if err != nil {
			<-sub.slots
			if sub.ctx.Err() != nil {
				return
			}
			cfg.Logger.Error("fetch failed", err, watermill.LogFields{"topic": sub.topic})
			select {
			case <-sub.ctx.Done():
				return
			case <-time.After(500 * time.Millisecond):
			}
			continue
		}
		if cfg.OnMessage != nil {
			cfg.OnMessage(km.Topic, km.Partition, km.Offset, km.HighWaterMark)
		}
		it := &inflight{sub: sub, km: km}
		sub.mu.Lock()
		sub.pending[km.Partition] = append(sub.pending[km.Partition], it)
		sub.mu.Unlock()
		sub.open.Add(1)
		if !sub.deliver(it) {
			return
		}
	}
}

// drain gives up the messages still buffered for the runtime: with the
// subscription ending they reach no handler. (A Watermill consumer's
// messages are watched, and given up by their watchers.)
func (sub *subscription) drain() {
	if !sub.s.cfg.handlerSettles {
		return
	}
	for {
		select {
		case <-sub.out:
			sub.abandon()
		default:
			return
		}
	}
}

// deliver hands the message for it to the consumer; it returns false (and
// gives the record up, uncommitted) when the subscription ends first.
func (sub *subscription) deliver(it *inflight) bool {
	if !sub.s.cfg.handlerSettles {
		return sub.deliverWatched(it)
	}
	msg := toWatermill(it.km, false)
	msg.SetContext(&delivery{Context: sub.ctx, it: it})
	if !sub.send(msg) {
		sub.abandon()
		return false
	}
	return true
}

// deliverWatched delivers a message that the consumer acks or nacks, with a
// goroutine watching for the outcome. Per Watermill's contract the message's
// context ends once it is acked.
func (sub *subscription) deliverWatched(it *inflight) bool {
	msg := toWatermill(it.km, true)
	ctx, cancel := context.WithCancel(sub.ctx)
	msg.SetContext(&delivery{Context: ctx, it: it})
	if !sub.send(msg) {
		cancel()
		sub.abandon()
		return false
	}
	go func() {
		defer cancel()
		select {
		case <-msg.Acked():
			sub.settle(it, nil)
		case <-msg.Nacked():
			sub.settle(it, errNacked)
		case <-sub.ctx.Done():
			// An ack that came before the end still counts.
			select {
			case <-msg.Acked():
				sub.settle(it, nil)
			default:
				sub.abandon()
			}
		}
	}()
	return true
}

// settle records the outcome for it: an ack frees its slot and lets the
// commit advance; a failure redelivers it after NackResendSleep.
func (sub *subscription) settle(it *inflight, err error) {
	if err != nil {
		if sub.ctx.Err() != nil {
			sub.abandon()
			return
		}
		time.AfterFunc(sub.s.cfg.NackResendSleep, func() { sub.deliver(it) })
		return
	}
	strict := sub.s.cfg.MaxInFlight == 1 && !sub.s.cfg.handlerSettles
	sub.mu.Lock()
	it.done = true
	if !strict && !sub.commitClosed {
		select {
		case sub.commitC <- struct{}{}:
		default:
		}
	}
	sub.mu.Unlock()
	if strict {
		// Strict mode: the commit lands before the next record is fetched.
		// (The runtime settles from the producer's goroutine, which must not
		// wait for a commit: its commits go through the commit loop.)
		sub.commitNow()
	}
	<-sub.slots
	sub.open.Done()
}

// abandon gives up a delivered record as the subscription ends: it is not
// committed, so the group redelivers it.
func (sub *subscription) abandon() {
	<-sub.slots
	sub.open.Done()
}

func (sub *subscription) commitLoop() {
	for range sub.commitC {
		sub.commitNow()
		if iv := sub.s.cfg.CommitInterval; iv > 0 {
			// Settles in the meantime fold into the next commit.
			select {
			case <-time.After(iv):
			case <-sub.ctx.Done():
			}
		}
	}
	// Final commit of whatever was acked before the subscription ended.
	sub.commitNow()
}

// commitNow commits, per partition, the contiguous prefix of acked messages.
func (sub *subscription) commitNow() {
	sub.mu.Lock()
	var toCommit []kafka.Message
	for p, list := range sub.pending {
		n := 0
		for n < len(list) && list[n].done {
			n++
		}
		if n > 0 {
			toCommit = append(toCommit, list[n-1].km)
			sub.pending[p] = list[n:]
		}
	}
	sub.mu.Unlock()
	if len(toCommit) == 0 {
		return
	}
	// The commit must land even while the subscription is closing, but a
	// commit that cannot land (the group is rebalancing, the broker is gone)
	// must not hold Close: the records are then redelivered (at least once).
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := backoff.Retry(ctx, func() (struct{}, error) {
		err := sub.r.CommitMessages(ctx, toCommit...)
		if err != nil && sub.ctx.Err() != nil {
			return struct{}{}, backoff.Permanent(err)
		}
		return struct{}{}, err
	}, backoff.WithBackOff(newBackOff(50*time.Millisecond, time.Second)), backoff.WithMaxTries(6), backoff.WithMaxElapsedTime(0))
	if err != nil {
		sub.s.cfg.Logger.Error("commit failed", err, watermill.LogFields{"topic": sub.topic})
	}
}

// toWatermill builds the message for a record. With metadata, the headers,
// key, topic, partition and offset travel as metadata (for any Watermill
// consumer); the runtime reads them from the record itself (recordOf), so
// its messages carry only the payload and an id for Watermill's logs.
func toWatermill(km kafka.Message, metadata bool) *message.Message {
	uuid := ""
	for _, h := range km.Headers {
		if h.Key == metaUUID {
			uuid = string(h.Value)
		}
	}
	if uuid == "" {
		uuid = km.Topic + "/" + strconv.Itoa(km.Partition) + "/" + strconv.FormatInt(km.Offset, 10)
	}
	msg := message.NewMessage(uuid, km.Value)
	if !metadata {
		return msg
	}
	md := msg.Metadata
	for _, h := range km.Headers {
		if h.Key != metaUUID {
			md.Set(h.Key, string(h.Value))
		}
	}
	if km.Key != nil {
		md.Set(MetaKey, string(km.Key))
	}
	md.Set(MetaTopic, km.Topic)
	md.Set(MetaPartition, strconv.Itoa(km.Partition))
	md.Set(MetaOffset, strconv.FormatInt(km.Offset, 10))
	return msg
}

// recordOf is the record a runtime handler's message was delivered for.
func recordOf(msg *message.Message) Record {
	return fromKafka(deliveryOf(msg.Context()).it.km)
}
