package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/topics"
)

// The raw baseline replays what a pipeline run put on its topics: the same
// records (keys, values, headers) through the same hops, each hop a
// hand-written kafka-go loop (consumer group, batched acks=all writes, a
// commit per batch) that looks its outputs up instead of computing them.

// headerID carries the id a raw hop looks its outputs up by: the group id
// on prompts, the node id on candidates and executions.
const headerID = "bench_id"

// readTopic reads every record of topic, from the first offset of each
// partition up to its high watermark at the time of the call.
func readTopic(ctx context.Context, kc pipeline.KafkaConfig, topic string) ([]kafka.Message, error) {
	d := kc.Dialer()
	conn, err := d.DialContext(ctx, "tcp", kc.Brokers[0])
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", topic, err)
	}
	parts, err := conn.ReadPartitions(topic)
	conn.Close()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", topic, err)
	}
	var (
		mu   sync.Mutex
		all  []kafka.Message
		errs []error
		wg   sync.WaitGroup
	)
	for _, p := range parts {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			msgs, err := readPartition(ctx, d, kc.Brokers, topic, p)
			mu.Lock()
			defer mu.Unlock()
			all = append(all, msgs...)
			if err != nil {
				errs = append(errs, err)
			}
		}(p.ID)
	}
	wg.Wait()
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].Partition != all[j].Partition {
			return all[i].Partition < all[j].Partition
		}
		return all[i].Offset < all[j].Offset
	})
	return all, errors.Join(errs...)
}

func readPartition(ctx context.Context, d *kafka.Dialer, brokers []string, topic string, p int) ([]kafka.Message, error) {
	lc, err := d.DialLeader(ctx, "tcp", brokers[0], topic, p)
	if err != nil {
		return nil, fmt.Errorf("read %s/%d: %w", topic, p, err)
	}
	first, last, err := lc.ReadOffsets()
	lc.Close()
	if err != nil {
		return nil, fmt.Errorf("read %s/%d offsets: %w", topic, p, err)
	}
	if last <= first {
		return nil, nil
	}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Dialer: d, Topic: topic, Partition: p,
		MaxBytes: topics.DefaultMaxMessageBytes + 1<<20, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	if err := r.SetOffset(first); err != nil {
		return nil, err
	}
	var msgs []kafka.Message
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return msgs, fmt.Errorf("read %s/%d at %d of %d: %w", topic, p, len(msgs), last-first, err)
		}
		msgs = append(msgs, m)
		if m.Offset >= last-1 {
			return msgs, nil
		}
	}
}

// ids are the identity fields every record of a tree carries.
type ids struct {
	TreeID   string `json:"tree_id"`
	GroupID  string `json:"group_id"`
	NodeID   string `json:"node_id"`
	ParentID string `json:"parent_id"`
}

// plan is the causal structure of a finished pipeline run, from its topics:
// what each hop produced for each input.
type plan struct {
	// roots are the root prompts, the chain's input.
	roots []kafka.Message
	// candidates by prompt group, executions by node, govern's outputs
	// (sample and, for an expanded node, its refinement prompt) by node.
	candidates map[string][]kafka.Message
	executions map[string]kafka.Message
	governed   map[string][]kafka.Message
	// treeSamples counts the samples of each tree; credited holds each
	// tree's credited record and completions its completion.
	treeSamples map[string]int
	credited    map[string]kafka.Message
	completions map[string]kafka.Message
	batches     []kafka.Message
	// Totals over every hop.
	trees, samples, records int
	bytes                   int64
}

// buildPlan reads the run's topics back and retargets every record to
// the raw catalog.
func buildPlan(ctx context.Context, kc pipeline.KafkaConfig, from, to topics.Catalog) (*plan, error) {
	read := map[topics.Name][]kafka.Message{}
	for _, n := range []topics.Name{topics.Prompts, topics.Refinements, topics.Candidates, topics.Executions, topics.Samples, topics.Credited, topics.Completions, topics.Batches} {
		msgs, err := readTopic(ctx, kc, from.Topic(n))
		if err != nil {
			return nil, err
		}
		read[n] = msgs
	}
	p := &plan{candidates: map[string][]kafka.Message{}, executions: map[string]kafka.Message{},
		governed: map[string][]kafka.Message{}, treeSamples: map[string]int{}, credited: map[string]kafka.Message{},
		completions: map[string]kafka.Message{}}
	seen := map[string]bool{}
	// each decodes the ids of a topic's records once per id (the pipeline
	// is at-least-once: a retried record may be there twice).
	each := func(n topics.Name, key func(ids) string, f func(ids, kafka.Message)) error {
		for _, m := range read[n] {
			var id ids
			if err := json.Unmarshal(m.Value, &id); err != nil {
				return fmt.Errorf("plan: %s at %d/%d: %w", n, m.Partition, m.Offset, err)
			}
			k := string(n) + "/" + key(id)
			if seen[k] {
				continue
			}
			seen[k] = true
			f(id, retarget(m, to.Topic(n), key(id)))
		}
		return nil
	}
	byGroup := func(id ids) string { return id.GroupID }
	byNode := func(id ids) string { return id.NodeID }
	errs := []error{
		each(topics.Prompts, byGroup, func(_ ids, m kafka.Message) { p.roots = append(p.roots, m) }),
		each(topics.Candidates, byNode, func(id ids, m kafka.Message) { p.candidates[id.GroupID] = append(p.candidates[id.GroupID], m) }),
		each(topics.Executions, byNode, func(id ids, m kafka.Message) { p.executions[id.NodeID] = m }),
		// Samples before refinements: govern's outputs in its order.
		each(topics.Samples, byNode, func(id ids, m kafka.Message) {
			p.governed[id.NodeID] = append(p.governed[id.NodeID], m)
			p.treeSamples[id.TreeID]++
			p.samples++
		}),
		// A refinement prompt's group is the failed node it expands.
		each(topics.Refinements, byGroup, func(id ids, m kafka.Message) {
			p.governed[id.ParentID] = append(p.governed[id.ParentID], m)
		}),
		each(topics.Credited, func(id ids) string { return id.TreeID }, func(id ids, m kafka.Message) { p.credited[id.TreeID] = m }),
		each(topics.Completions, func(id ids) string { return id.TreeID }, func(id ids, m kafka.Message) { p.completions[id.TreeID] = m }),
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for _, m := range read[topics.Batches] {
		p.batches = append(p.batches, retarget(m, to.Topic(topics.Batches), ""))
	}
	p.trees = len(p.credited)
	count := func(msgs ...kafka.Message) {
		p.records += len(msgs)
		for _, m := range msgs {
			p.bytes += int64(len(m.Key) + len(m.Value))
		}
	}
	count(p.roots...)
	for _, ms := range p.candidates {
		count(ms...)
	}
	for _, m := range p.executions {
		count(m)
	}
	for _, ms := range p.governed {
		count(ms...)
	}
	for _, m := range p.credited {
		count(m)
	}
	for _, m := range p.completions {
		count(m)
	}
	count(p.batches...)
	if len(p.roots) == 0 || p.samples == 0 || len(p.batches) == 0 {
		return nil, fmt.Errorf("plan: run left %d root prompts, %d samples, %d batches", len(p.roots), p.samples, len(p.batches))
	}
	return p, nil
}

// retarget copies m for topic with the look-up id as a header.
func retarget(m kafka.Message, topic, id string) kafka.Message {
	h := make([]kafka.Header, 0, len(m.Headers)+1)
	for _, x := range m.Headers {
		if x.Key != headerID {
			h = append(h, x)
		}
	}
	if id != "" {
		h = append(h, kafka.Header{Key: headerID, Value: []byte(id)})
	}
	return kafka.Message{Topic: topic, Key: m.Key, Value: m.Value, Headers: h}
}

func idOf(m kafka.Message) string {
	for _, h := range m.Headers {
		if h.Key == headerID {
			return string(h.Value)
		}
	}
	return ""
}

// hop is one raw stage: its inputs and what it writes for one input. out
// runs on the hop's own goroutine.
type hop struct {
	name   string
	inputs []string
	out    func(m kafka.Message) []kafka.Message
}

// hops are the five raw stages over the plan.
func (p *plan) hops(cat topics.Catalog) []hop {
	perTree := map[string]int{}
	emitted, consumed := 0, 0
	return []hop{
		{name: "generate", inputs: []string{cat.Topic(topics.Prompts), cat.Topic(topics.Refinements)},
			out: func(m kafka.Message) []kafka.Message { return p.candidates[idOf(m)] }},
		{name: "execute", inputs: []string{cat.Topic(topics.Candidates)},
			out: func(m kafka.Message) []kafka.Message {
				e, ok := p.executions[idOf(m)]
				if !ok {
					return nil
				}
				return []kafka.Message{e}
			}},
		{name: "govern", inputs: []string{cat.Topic(topics.Executions)},
			out: func(m kafka.Message) []kafka.Message { return p.governed[idOf(m)] }},
		// A tree and its completion are written once all its samples
		// were read.
		{name: "credit", inputs: []string{cat.Topic(topics.Samples)},
			out: func(m kafka.Message) []kafka.Message {
				tree := string(m.Key)
				perTree[tree]++
				if perTree[tree] != p.treeSamples[tree] {
					return nil
				}
				c, ok := p.credited[tree]
				if !ok {
					return nil
				}
				if d, ok := p.completions[tree]; ok {
					return []kafka.Message{c, d}
				}
				return []kafka.Message{c}
			}},
		// Batches go out in proportion to the trees read.
		{name: "emit", inputs: []string{cat.Topic(topics.Credited)},
			out: func(kafka.Message) []kafka.Message {
				consumed++
				upTo := len(p.batches) * consumed / p.trees
				if consumed >= p.trees {
					upTo = len(p.batches)
				}
				outs := p.batches[emitted:max(upTo, emitted)]
				emitted = max(upTo, emitted)
				return outs
			}},
	}
}

// runRaw runs the raw hops over the plan's root prompts until every batch
// is on the raw batches topic.
func runRaw(ctx context.Context, b *Broker, cat topics.Catalog, p *plan, timeout time.Duration) (Run, error) {
	defer labelSide(ctx, "raw")()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	w := rawWriter(b.Kafka)
	defer closeRawWriter(w)
	for i := 0; i < len(p.roots); i += 1000 {
		if err := w.WriteMessages(ctx, p.roots[i:min(i+1000, len(p.roots))]...); err != nil {
			return Run{}, fmt.Errorf("raw: seed prompts: %w", err)
		}
	}
	wt, err := startWatch(ctx, b.Kafka, cat)
	if err != nil {
		return Run{}, err
	}
	hctx, stop := context.WithCancel(ctx)
	var (
		wg      sync.WaitGroup
		once    sync.Once
		hopErr  error
		stopped = make(chan struct{})
	)
	start, cpu0 := time.Now(), cpuTime()
	for _, h := range p.hops(cat) {
		wg.Add(1)
		go func(h hop) {
			defer wg.Done()
			if err := runHop(hctx, b.Kafka, cat.Prefix+"raw-"+h.name, h); err != nil {
				once.Do(func() { hopErr = err; close(stopped) })
			}
		}(h)
	}
	res, werr := wt.wait(ctx, p.trees, stopped)
	res.CPU = cpuTime() - cpu0
	stop()
	wg.Wait()
	res.Wall = wt.last.Sub(start)
	if werr != nil && hopErr != nil {
		werr = fmt.Errorf("%w: %w", werr, hopErr)
	}
	return res, werr
}

// rawWriter is a plain kafka-go writer on kc's transport (TLS, SASL); the
// caller closes it with closeRawWriter.
func rawWriter(kc pipeline.KafkaConfig) *kafka.Writer {
	return &kafka.Writer{Addr: kafka.TCP(kc.Brokers...), Balancer: kafka.Murmur2Balancer{},
		RequiredAcks: kafka.RequireAll, BatchSize: 1000, BatchTimeout: 2 * time.Millisecond,
		BatchBytes: topics.DefaultMaxMessageBytes + 1<<20, AllowAutoTopicCreation: true,
		Transport: kc.Transport()}
}

// closeRawWriter closes w and its transport's connections.
func closeRawWriter(w *kafka.Writer) {
	_ = w.Close()
	w.Transport.(*kafka.Transport).CloseIdleConnections()
}

// runHop is one raw stage: fetch a batch (full, or nothing more for 2 ms),
// write its outputs (acks=all), commit, repeat until ctx ends.
func runHop(ctx context.Context, kc pipeline.KafkaConfig, group string, h hop) error {
	rc := kafka.ReaderConfig{Brokers: kc.Brokers, Dialer: kc.Dialer(), GroupID: group, StartOffset: kafka.FirstOffset,
		MinBytes: 1, MaxBytes: topics.DefaultMaxMessageBytes + 1<<20, MaxWait: 250 * time.Millisecond,
		QueueCapacity: 1000, JoinGroupBackoff: 500 * time.Millisecond}
	if len(h.inputs) == 1 {
		rc.Topic = h.inputs[0]
	} else {
		rc.GroupTopics = h.inputs
	}
	r := kafka.NewReader(rc)
	defer r.Close()
	w := rawWriter(kc)
	defer closeRawWriter(w)
	batch := make([]kafka.Message, 0, 1000)
	for {
		fctx, cancel := ctx, context.CancelFunc(func() {})
		if len(batch) > 0 {
			fctx, cancel = context.WithTimeout(ctx, 2*time.Millisecond)
		}
		m, err := r.FetchMessage(fctx)
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			batch = append(batch, m)
		} else if len(batch) == 0 {
			return fmt.Errorf("raw %s: fetch: %w", h.name, err)
		}
		if len(batch) == 0 || (err == nil && len(batch) < cap(batch)) {
			continue
		}
		var outs []kafka.Message
		for _, in := range batch {
			outs = append(outs, h.out(in)...)
		}
		if len(outs) > 0 {
			if err := w.WriteMessages(ctx, outs...); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("raw %s: write: %w", h.name, err)
			}
		}
		if err := r.CommitMessages(ctx, batch...); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("raw %s: commit: %w", h.name, err)
		}
		batch = batch[:0]
	}
}
