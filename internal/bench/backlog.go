package bench

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/stages/credit"
	"github.com/murphy-rl/murphy/stages/execute"
	"github.com/murphy-rl/murphy/stages/generate"
	"github.com/murphy-rl/murphy/stages/govern"
	"github.com/murphy-rl/murphy/tasks"
	"github.com/murphy-rl/murphy/topics"
)

// backlog builds the records of many trees without Kafka, through the
// stages' own handlers (generate's Generate, execute's Handle over the
// in-process verdict, govern's Handle, credit's tree assembly and Credit),
// in waves of trees processed turn by turn, so that a wave's records
// interleave on the topics as trees in flight do in a run.
type backlog struct {
	cfg  Config
	gen  *generate.Stage
	exec *execute.Stage
	gov  *govern.Stage
	cc   topics.CreditConfig
}

// backlogCatalog names the topics records are built for; sink retargets
// them.
var backlogCatalog = topics.Catalog{Prefix: "backlog.", Partitions: 1}

func newBacklog(c Config, ts []topics.Task) (*backlog, error) {
	lookup := tasks.NewMemory(ts)
	gen, err := generate.NewStage(c.Generate, lookup, backlogCatalog, nil)
	if err != nil {
		return nil, err
	}
	gov, err := govern.NewStage(c.Govern, lookup, nil, backlogCatalog, nil)
	if err != nil {
		return nil, err
	}
	ec := c.Execute
	ec.Concurrency = 1 // built sequentially; the stage's concurrency is not used
	exec, err := execute.NewStage(ec, NewVerdict(ts), lookup, backlogCatalog, nil)
	if err != nil {
		return nil, err
	}
	return &backlog{cfg: c, gen: gen, gov: gov, cc: c.Credit.CreditConfig(), exec: exec}, nil
}

// wave is the records of one wave of trees, by topic, in the order a run
// would write them.
type wave map[topics.Name][]kafka.Message

// build runs the trees of roots to completion.
func (b *backlog) build(ctx context.Context, roots []*topics.Prompt) (wave, error) {
	w := wave{}
	trees := map[string]*credit.Tree{}
	var prompts []pipeline.Out
	for _, p := range roots {
		v, err := topics.Encode(p)
		if err != nil {
			return nil, fmt.Errorf("root prompt %s: %w", p.TreeID, err)
		}
		prompts = append(prompts, pipeline.Out{Topic: backlogCatalog.Topic(topics.Prompts), Key: p.TreeID, Value: v})
		trees[p.TreeID] = credit.NewTree(p.TreeID)
	}
	w.add(prompts...)
	for len(prompts) > 0 {
		cands, err := parallel(ctx, prompts, b.generate)
		if err != nil {
			return nil, err
		}
		w.add(cands...)
		execs, err := parallel(ctx, cands, b.exec.Handle)
		if err != nil {
			return nil, err
		}
		w.add(execs...)
		governed, err := parallel(ctx, execs, b.gov.Handle)
		if err != nil {
			return nil, err
		}
		prompts = nil
		for _, o := range governed {
			w.add(o)
			if o.Topic == backlogCatalog.Topic(topics.Refinements) {
				prompts = append(prompts, o)
				continue
			}
			if err := b.credit(w, trees, o); err != nil {
				return nil, err
			}
		}
	}
	if len(trees) > 0 {
		return nil, fmt.Errorf("backlog: %d trees did not complete", len(trees))
	}
	return w, nil
}

// generate is generate's handling of one prompt without the admission
// cap, which waits for trees to be credited.
func (b *backlog) generate(ctx context.Context, rec pipeline.Record) ([]pipeline.Out, error) {
	var p topics.Prompt
	if err := topics.Decode(rec.Value, &p); err != nil {
		return nil, err
	}
	cands, err := b.gen.Generate(ctx, &p)
	if err != nil {
		return nil, err
	}
	outs := make([]pipeline.Out, len(cands))
	for i, c := range cands {
		v, err := topics.Encode(c)
		if err != nil {
			return nil, fmt.Errorf("candidate %s: %w", c.NodeID, err)
		}
		outs[i] = pipeline.Out{Topic: backlogCatalog.Topic(topics.Candidates), Key: c.TreeID, Value: v}
	}
	return outs, nil
}

// credit adds a sample to its tree and writes the credited tree once
// complete.
func (b *backlog) credit(w wave, trees map[string]*credit.Tree, o pipeline.Out) error {
	var s topics.Sample
	if err := topics.Decode(o.Value, &s); err != nil {
		return fmt.Errorf("sample: %w", err)
	}
	t, ok := trees[s.TreeID]
	if !ok {
		return fmt.Errorf("sample %s of unknown tree %s", s.NodeID, s.TreeID)
	}
	if _, err := t.Add(&s); err != nil {
		return err
	}
	if !t.Complete() {
		return nil
	}
	ct, _ := credit.Credit(t, b.cc)
	ct.CreditedAt = time.Now().UTC()
	v, err := topics.Encode(&ct)
	if err != nil {
		return fmt.Errorf("credited tree %s: %w", ct.TreeID, err)
	}
	w.add(pipeline.Out{Topic: backlogCatalog.Topic(topics.Credited), Key: ct.TreeID, Value: v})
	delete(trees, s.TreeID)
	return nil
}

func (w wave) add(outs ...pipeline.Out) {
	for _, o := range outs {
		n, ok := backlogCatalog.Lookup(o.Topic)
		if !ok {
			continue
		}
		w[n] = append(w[n], kafka.Message{Key: []byte(o.Key), Value: o.Value})
	}
}

// parallel applies h to every input on one goroutine per CPU and returns
// the outputs in input order.
func parallel(ctx context.Context, ins []pipeline.Out, h pipeline.Handler) ([]pipeline.Out, error) {
	outs := make([][]pipeline.Out, len(ins))
	errs := make([]error, len(ins))
	next := make(chan int)
	var wg sync.WaitGroup
	for range runtime.NumCPU() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				outs[i], errs[i] = h(ctx, pipeline.Record{Topic: ins[i].Topic, Key: []byte(ins[i].Key), Value: ins[i].Value})
			}
		}()
	}
	for i := range ins {
		next <- i
	}
	close(next)
	wg.Wait()
	var all []pipeline.Out
	for i := range ins {
		if errs[i] != nil {
			return nil, fmt.Errorf("backlog: %s record %s: %w", ins[i].Topic, ins[i].Key, errs[i])
		}
		all = append(all, outs[i]...)
	}
	return all, nil
}
