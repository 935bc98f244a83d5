package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/murphy-rl/murphy/openai"
	"github.com/murphy-rl/murphy/openai/fakeserver"
	"github.com/murphy-rl/murphy/stages/generate"
	"github.com/murphy-rl/murphy/topics"
)

// SaturationTarget is the least pipeline samples/s over the servers' own
// greatest throughput measured in the same run.
const SaturationTarget = 0.9

// SaturationConfig sizes the saturation benchmark.
type SaturationConfig struct {
	// Servers is the number of fake inference servers.
	Servers int
	// MaxSeqs, Tokens and TokenRate are each server's capacity
	// (fakeserver.Config): MaxSeqs sequences at once, each Tokens tokens at
	// TokenRate tokens/s.
	MaxSeqs   int
	Tokens    int
	TokenRate float64
	// TreesPerTask sizes the pipeline run.
	TreesPerTask int
	// Baseline is how long each server is driven directly.
	Baseline time.Duration
	// Concurrency is generate's concurrency: only an upper bound with a
	// server pool (the slots follow the pool's capacity).
	Concurrency int
}

// DefaultSaturationConfig is two servers of 32 sequences of 64 tokens at
// 640 tokens/s each (100 ms per sequence: 320 sequences/s per server), 40
// trees per task: about 15 s of pipeline.
func DefaultSaturationConfig() SaturationConfig {
	return SaturationConfig{Servers: 2, MaxSeqs: 32, Tokens: 64, TokenRate: 640, TreesPerTask: 40,
		Baseline: 4 * time.Second, Concurrency: 1024}
}

// Validate checks the configuration.
func (c SaturationConfig) Validate() error {
	if c.Servers < 1 || c.MaxSeqs < 1 || c.Tokens < 1 || !(c.TokenRate > 0) || c.TreesPerTask < 1 || c.Baseline <= 0 || c.Concurrency < 1 {
		return fmt.Errorf("saturation: servers, max_seqs, tokens, token_rate, trees_per_task, baseline and concurrency must be > 0, got %+v", c)
	}
	return nil
}

// ServerRun is one fake server's side of the benchmark.
type ServerRun struct {
	URL string
	// Direct is its sequences/s driven directly with exactly MaxSeqs
	// requests in flight; Theory its capacity by construction.
	Direct, Theory float64
	// Pipeline is the sequences it decoded during the pipeline run;
	// MaxActive and MaxQueued the most sequences decoding and waiting at
	// once then.
	Pipeline, MaxActive, MaxQueued int
	// Limit is the pool's limit for it at the end; Routed its requests by
	// how the pool chose it.
	Limit  float64
	Routed map[string]float64
	// Timeline is the mean of its sequences in flight (decoding and
	// waiting), per second of the pipeline run (sampled every 50 ms).
	Timeline []float64
}

// SaturationResult is the pipeline through the pool against the servers'
// own greatest throughput.
type SaturationResult struct {
	Broker  string
	Machine Machine
	Config  SaturationConfig
	Tasks   int
	// Pipeline is the whole pipeline (execute's sandbox replaced by
	// Verdict) with the OpenAI policy over a pool of the servers.
	Pipeline Run
	Servers  []ServerRun
	Prefix   string
}

// Direct is the servers' summed greatest throughput, in sequences/s.
func (r SaturationResult) Direct() float64 {
	var s float64
	for _, x := range r.Servers {
		s += x.Direct
	}
	return s
}

// Ratio is pipeline samples/s over the servers' summed direct maximum.
func (r SaturationResult) Ratio() float64 { return r.Pipeline.Rate() / max(r.Direct(), 1e-9) }

func (r SaturationResult) String() string {
	var b strings.Builder
	c := r.Config
	fmt.Fprintf(&b, "saturation: pipeline through the server pool vs the fake servers driven directly\n")
	fmt.Fprintf(&b, "  broker    %s\n", r.Broker)
	fmt.Fprintf(&b, "  machine   %s\n", r.Machine)
	fmt.Fprintf(&b, "  servers   %d fake servers, each %d sequences at once of %d tokens at %.0f tokens/s (%.0f sequences/s)\n",
		c.Servers, c.MaxSeqs, c.Tokens, c.TokenRate, float64(c.MaxSeqs)*c.TokenRate/float64(c.Tokens))
	var affinity, spill float64
	for i, s := range r.Servers {
		fmt.Fprintf(&b, "  server %d  direct %.1f sequences/s (%.3f of its capacity); in the pipeline %d sequences, at most %d decoding and %d waiting at once, pool limit %.0f at the end\n",
			i, s.Direct, s.Direct/s.Theory, s.Pipeline, s.MaxActive, s.MaxQueued, s.Limit)
		tl := make([]string, len(s.Timeline))
		for j, v := range s.Timeline {
			tl[j] = fmt.Sprintf("%.0f", v)
		}
		fmt.Fprintf(&b, "            in flight (decoding + waiting), mean per second of the run: %s\n", strings.Join(tl, " "))
		affinity += s.Routed["affinity"]
		spill += s.Routed["spill"]
	}
	fmt.Fprintf(&b, "  workload  %d tasks x %d trees = %d trees, %d samples\n", r.Tasks, c.TreesPerTask, r.Pipeline.Trees, r.Pipeline.Samples)
	fmt.Fprintf(&b, "  pipeline  %8.1f samples/s (%d samples in %s; %s with consumer start-up; %s CPU per sample)\n",
		r.Pipeline.Rate(), r.Pipeline.Samples, r.Pipeline.Active.Round(time.Millisecond), r.Pipeline.Wall.Round(time.Millisecond),
		r.Pipeline.CPUPerSample().Round(time.Microsecond))
	if affinity+spill > 0 {
		fmt.Fprintf(&b, "  routing   %.0f requests to their tree's server, %.0f spilled (%.3f affinity)\n", affinity, spill, affinity/(affinity+spill))
	}
	var theory float64
	for _, s := range r.Servers {
		theory += s.Theory
	}
	fmt.Fprintf(&b, "  servers   %8.1f sequences/s driven directly, summed (capacity by construction %.0f: the pipeline ran at %.2f of it)\n",
		r.Direct(), theory, r.Pipeline.Rate()/max(theory, 1e-9))
	fmt.Fprintf(&b, "  ratio     %.2f (target >= %.1f: %s)\n", r.Ratio(), SaturationTarget, ratioVerdict(r.Ratio(), SaturationTarget))
	return b.String()
}

// Saturation starts sc.Servers fake servers, measures each one's greatest
// throughput by driving it directly with exactly MaxSeqs requests of one
// sample in flight (all servers at once), then runs the pipeline with the
// OpenAI policy over a pool of them (generate's scheduler, the pool's
// adaptive limits and affinity, execute through Verdict, govern, credit,
// emit) on b.
func Saturation(ctx context.Context, b *Broker, c Config, sc SaturationConfig, ts []topics.Task, logw io.Writer) (SaturationResult, error) {
	res := SaturationResult{Broker: b.String(), Machine: startMachine(), Config: sc, Tasks: len(ts)}
	defer res.Machine.finish()
	if err := sc.Validate(); err != nil {
		return res, err
	}
	var servers []*fakeserver.Server
	defer func() {
		for _, s := range servers {
			s.Close()
		}
	}()
	for i := range sc.Servers {
		s, err := fakeserver.Start(fakeserver.Config{Name: fmt.Sprintf("fake-%d", i), MaxSeqs: sc.MaxSeqs, Tokens: sc.Tokens, TokenRate: sc.TokenRate})
		if err != nil {
			return res, err
		}
		servers = append(servers, s)
		res.Servers = append(res.Servers, ServerRun{URL: s.URL(), Theory: s.MaxThroughput(sc.Tokens)})
	}
	direct, err := driveDirect(ctx, servers, sc)
	if err != nil {
		return res, fmt.Errorf("saturation: direct: %w", err)
	}
	before := make([]fakeserver.Stats, len(servers))
	for i, s := range servers {
		res.Servers[i].Direct = direct[i]
		before[i] = s.Stats()
	}

	c = c.seeded()
	c.TreesPerTask = sc.TreesPerTask
	g := &c.Generate
	g.Concurrency = sc.Concurrency
	g.Policy.Kind = generate.PolicyOpenAI
	oc := &g.Policy.OpenAI
	oc.MaxTokens, oc.Seed = sc.Tokens, c.Seed
	oc.Client.Model, oc.Client.ReturnTokenIDs = "fake", true
	oc.Client.Timeout = time.Minute
	oc.Pool.Servers = nil
	for _, s := range servers {
		oc.Pool.Servers = append(oc.Pool.Servers, s.URL())
	}
	if err := c.Validate(); err != nil {
		return res, err
	}
	cat, err := b.catalog(ctx, "saturation", c.Partitions)
	if err != nil {
		return res, err
	}
	if !c.Keep {
		defer b.deleteTopics(cat)
	}
	res.Prefix = cat.Prefix
	freshHeap()
	stopSampling := sampleServers(servers, res.Servers)
	res.Pipeline, err = runPipeline(ctx, b, cat, c, executeWith{runner: NewVerdict(ts)}, ts, c.submitConfig("bench-saturation", sc.TreesPerTask), logw)
	stopSampling()
	if err != nil {
		return res, fmt.Errorf("saturation: pipeline: %w", err)
	}
	for i, s := range servers {
		st := s.Stats()
		res.Servers[i].Pipeline = st.Sequences - before[i].Sequences
		res.Servers[i].MaxActive, res.Servers[i].MaxQueued = st.MaxActive, st.MaxQueued
	}
	res.poolMetrics()
	res.Machine.finish()
	return res, nil
}

// sampleServers samples the servers' sequences in flight every 50 ms into
// runs' timelines until the returned func is called.
func sampleServers(servers []*fakeserver.Server, runs []ServerRun) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		sums := make([]float64, len(servers))
		k := 0
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			for i, s := range servers {
				st := s.Stats()
				sums[i] += float64(st.Active + st.Queued)
			}
			if k++; k == 20 {
				for i := range servers {
					runs[i].Timeline = append(runs[i].Timeline, sums[i]/20)
					sums[i] = 0
				}
				k = 0
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// poolMetrics reads the pool's last limits and routing from the pipeline's
// registry.
func (r *SaturationResult) poolMetrics() {
	if r.Pipeline.reg == nil {
		return
	}
	mfs, err := r.Pipeline.reg.Gather()
	if err != nil {
		return
	}
	by := map[string]*ServerRun{}
	for i := range r.Servers {
		by[r.Servers[i].URL] = &r.Servers[i]
		r.Servers[i].Routed = map[string]float64{}
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			s := by[labels["server"]]
			if s == nil {
				continue
			}
			switch mf.GetName() {
			case "murphy_generate_server_limit":
				s.Limit = m.GetGauge().GetValue()
			case "murphy_generate_server_routed_total":
				s.Routed[labels["how"]] += m.GetCounter().GetValue()
			}
		}
	}
}

// driveDirect drives every server at once, each with exactly MaxSeqs
// requests of one sample in flight, for sc.Baseline after a warm-up of a
// few round trips, and returns each one's sequences/s.
func driveDirect(ctx context.Context, servers []*fakeserver.Server, sc SaturationConfig) ([]float64, error) {
	perSeq := time.Duration(float64(sc.Tokens) / sc.TokenRate * float64(time.Second))
	warm := 3 * perSeq
	out := make([]float64, len(servers))
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = driveOne(ctx, s.URL(), sc, warm)
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

func driveOne(ctx context.Context, url string, sc SaturationConfig, warm time.Duration) (float64, error) {
	cc := openai.DefaultConfig()
	cc.BaseURL, cc.Model, cc.ReturnTokenIDs, cc.MaxInFlight, cc.MaxRetries = url, "fake", true, sc.MaxSeqs, 0
	cl, err := openai.New(cc)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	from, until := start.Add(warm), start.Add(warm+sc.Baseline)
	var mu sync.Mutex
	var ends []time.Time
	var firstErr error
	var wg sync.WaitGroup
	msgs := []openai.Message{{Role: "user", Content: "Write a function."}}
	for range sc.MaxSeqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(until) && ctx.Err() == nil {
				_, err := cl.Chat(ctx, openai.ChatRequest{Messages: msgs, Sampling: openai.Sampling{N: 1, MaxTokens: sc.Tokens, Temperature: 1, Logprobs: true}})
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				ends = append(ends, time.Now())
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return 0, firstErr
	}
	// Sequences that ended inside the measured window, over its length.
	sort.Slice(ends, func(i, j int) bool { return ends[i].Before(ends[j]) })
	n := 0
	for _, e := range ends {
		if !e.Before(from) && e.Before(until) {
			n++
		}
	}
	return float64(n) / sc.Baseline.Seconds(), nil
}
