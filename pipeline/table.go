package pipeline

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"golang.org/x/sync/singleflight"

	"github.com/murphy-rl/murphy/topics"
)

// ErrNotFound is returned by Table.Get for a key the topic does not hold.
var ErrNotFound = errors.New("key not found")

// Table is a read view of a compacted topic (the tasks topic): the latest
// value per key. It follows the topic continuously and keeps an index of
// key → (partition, offset) for every key, but only a bounded number of
// values in memory (those it reads while there is room, then those asked
// for most recently); an evicted value is read back from Kafka by offset,
// once for all the callers asking for it at the same time.
type Table struct {
	cfg      KafkaConfig
	topic    string
	capacity int
	// client asks for high watermarks over pooled connections; reads
	// gathers concurrent read-backs of one key.
	client      *kafka.Client
	closeClient func()
	reads       singleflight.Group

	mu      sync.Mutex
	cond    *sync.Cond
	index   map[string]position
	lru     *list.List // of *entry, most recent first
	entries map[string]*list.Element
	// caughtUp[p] is the next offset the follower will read in partition p.
	caughtUp map[int]int64
	err      error

	start   sync.Once
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	started chan struct{}
}

type position struct {
	partition int
	offset    int64
}

type entry struct {
	key   string
	value []byte
}

// NewTable returns a table over topic holding at most capacity values in
// memory. It starts following the topic on first use.
func NewTable(cfg KafkaConfig, topic string, capacity int) *Table {
	if capacity <= 0 {
		capacity = 1024
	}
	client, closeClient := readBackClient(cfg)
	t := &Table{cfg: cfg, topic: topic, capacity: capacity, client: client, closeClient: closeClient, index: map[string]position{},
		lru: list.New(), entries: map[string]*list.Element{}, caughtUp: map[int]int64{}, started: make(chan struct{})}
	t.cond = sync.NewCond(&t.mu)
	return t
}

// Close stops following the topic.
func (t *Table) Close() {
	t.start.Do(func() { close(t.started) })
	if t.cancel != nil {
		t.cancel()
	}
	t.wg.Wait()
	t.closeClient()
}

func (t *Table) follow() {
	t.start.Do(func() {
		ctx, cancel := context.WithCancel(context.Background())
		t.cancel = cancel
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			t.run(ctx)
		}()
	})
}

func (t *Table) run(ctx context.Context) {
	parts := 0
	wait := newBackOff(100*time.Millisecond, 2*time.Second)
	for attempt := 0; ctx.Err() == nil; attempt++ {
		// Any live broker of the list answers.
		n, err := Partitions(ctx, t.cfg, t.topic)
		if err == nil {
			parts = n
			break
		}
		if attempt > 20 {
			t.mu.Lock()
			t.err = fmt.Errorf("table %s: read partitions: %v", t.topic, err)
			t.cond.Broadcast()
			t.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait.NextBackOff()):
		}
	}
	t.mu.Lock()
	for p := range parts {
		t.caughtUp[p] = 0
	}
	t.mu.Unlock()
	close(t.started)
	var wg sync.WaitGroup
	for p := range parts {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			t.followPartition(ctx, p)
		}(p)
	}
	wg.Wait()
}

func (t *Table) followPartition(ctx context.Context, p int) {
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: t.cfg.Brokers, Dialer: t.cfg.Dialer(), Topic: t.topic, Partition: p,
		MaxBytes: topics.DefaultMaxMessageBytes + 1<<20, MaxWait: 200 * time.Millisecond})
	defer r.Close()
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			time.Sleep(200 * time.Millisecond)
			continue
		}
		key := string(m.Key)
		t.mu.Lock()
		if m.Value == nil {
			delete(t.index, key) // tombstone
			t.evict(key)
		} else {
			t.index[key] = position{partition: m.Partition, offset: m.Offset}
			if el, ok := t.entries[key]; ok {
				el.Value.(*entry).value = m.Value
			} else if t.lru.Len() < t.capacity {
				t.entries[key] = t.lru.PushBack(&entry{key: key, value: m.Value})
			}
		}
		t.caughtUp[p] = m.Offset + 1
		t.cond.Broadcast()
		t.mu.Unlock()
	}
}

func (t *Table) evict(key string) {
	if el, ok := t.entries[key]; ok {
		t.lru.Remove(el)
		delete(t.entries, key)
	}
}

func (t *Table) remember(key string, v []byte) {
	if el, ok := t.entries[key]; ok {
		el.Value.(*entry).value = v
		t.lru.MoveToFront(el)
		return
	}
	t.entries[key] = t.lru.PushFront(&entry{key: key, value: v})
	for t.lru.Len() > t.capacity {
		last := t.lru.Back()
		t.lru.Remove(last)
		delete(t.entries, last.Value.(*entry).key)
	}
}

// Get returns the latest value of key. A key that is not known yet is waited
// for until the table has read everything the topic held when Get was
// called; then ErrNotFound is returned.
func (t *Table) Get(ctx context.Context, key string) ([]byte, error) {
	t.follow()
	select {
	case <-t.started:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	t.mu.Lock()
	if el, ok := t.entries[key]; ok {
		t.lru.MoveToFront(el)
		v := el.Value.(*entry).value
		t.mu.Unlock()
		return v, nil
	}
	pos, ok := t.index[key]
	t.mu.Unlock()
	if !ok {
		if err := t.waitCaughtUp(ctx, key); err != nil {
			return nil, err
		}
		t.mu.Lock()
		pos, ok = t.index[key]
		if el, cached := t.entries[key]; cached {
			v := el.Value.(*entry).value
			t.mu.Unlock()
			return v, nil
		}
		t.mu.Unlock()
		if !ok {
			return nil, fmt.Errorf("%s in %s: %w", key, t.topic, ErrNotFound)
		}
	}
	v, err, _ := t.reads.Do(key, func() (any, error) {
		v, err := t.readAt(ctx, key, pos)
		if err != nil {
			return nil, err
		}
		t.mu.Lock()
		t.remember(key, v)
		t.mu.Unlock()
		return v, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]byte), nil
}

// waitCaughtUp waits until every partition has been read up to the high
// watermark it had when the call started, or until key shows up.
func (t *Table) waitCaughtUp(ctx context.Context, key string) error {
	t.mu.Lock()
	reqs := make([]kafka.OffsetRequest, 0, len(t.caughtUp))
	for p := range t.caughtUp {
		reqs = append(reqs, kafka.LastOffsetOf(p))
	}
	t.mu.Unlock()
	target := make(map[int]int64, len(reqs))
	err := withRetry(ctx, func() error {
		res, err := t.client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{t.topic: reqs}})
		if err != nil {
			return fmt.Errorf("table %s: high watermarks: %w", t.topic, err)
		}
		for _, po := range res.Topics[t.topic] {
			if po.Error != nil {
				return fmt.Errorf("table %s: high watermark of partition %d: %w", t.topic, po.Partition, po.Error)
			}
			target[po.Partition] = po.LastOffset
		}
		if len(target) != len(reqs) {
			return fmt.Errorf("table %s: high watermarks of %d of %d partitions", t.topic, len(target), len(reqs))
		}
		return nil
	})
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() {
		t.mu.Lock()
		t.cond.Broadcast()
		t.mu.Unlock()
	})
	defer stop()
	t.mu.Lock()
	defer t.mu.Unlock()
	for {
		if _, ok := t.index[key]; ok {
			return nil
		}
		done := true
		for p, hwm := range target {
			if t.caughtUp[p] < hwm {
				done = false
			}
		}
		if done {
			return nil
		}
		if t.err != nil {
			return t.err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		t.cond.Wait()
	}
}

// readAt reads the record at pos (an evicted value).
func (t *Table) readAt(ctx context.Context, key string, pos position) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var v []byte
	found := false
	err := ReadRange(ctx, t.cfg, t.topic, pos.partition, pos.offset, pos.offset+1, func(r Record) error {
		if r.Offset == pos.offset && string(r.Key) == key {
			v, found = r.Value, true
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("table %s: read offset %d: %w", t.topic, pos.offset, err)
	}
	if !found {
		// Compacted away after a newer value the follower has not read yet.
		return nil, fmt.Errorf("table %s: key %s moved from offset %d; retry", t.topic, key, pos.offset)
	}
	return v, nil
}
