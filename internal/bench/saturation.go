package bench

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/murphy-rl/murphy/openai/fakeserver"
	"github.com/murphy-rl/murphy/stages/generate"
	"github.com/murphy-rl/murphy/topics"
)

// SaturationTarget is the least pipeline samples/s over the servers' own
// peak measured in the same run.
const SaturationTarget = 0.9

// SaturationConfig sizes the saturation benchmark.
type SaturationConfig struct {
	// Servers is the number of fake inference servers.
	Servers int
	// Tokens is the length of every response.
	Tokens int
	// Engine is each server's model (fakeserver.Engine): a decode step of
	// Step + PerSeq × batch, prefill per prompt token not in the prefix
	// cache, a KV cache of KVTokens.
	Engine fakeserver.Engine
	// TreesPerTask sizes each pipeline run.
	TreesPerTask int
	// Level is how long each concurrency of the direct sweep is measured.
	Level time.Duration
	// Concurrency is generate's concurrency: only an upper bound with a
	// server pool (the slots follow the pool's capacity).
	Concurrency int
	// NoMetrics: the servers expose no metrics (the pool's limits then
	// follow throughput, not the servers' queues).
	NoMetrics bool
	// SweepFlat is how many doublings of the direct sweep in a row that
	// gain less than 3% end it.
	SweepFlat int
}

// DefaultSaturationConfig is two servers whose step takes 5 ms + 0.1 ms
// per sequence in the batch, a KV cache of 12,000 tokens, prefill at 20 µs
// per prompt token and a prefix cache of 20,000 tokens; responses of 64
// tokens; 40 trees per task.
func DefaultSaturationConfig() SaturationConfig {
	return SaturationConfig{Servers: 2, Tokens: 64, TreesPerTask: 40, Level: 2 * time.Second, Concurrency: 1024, SweepFlat: 2,
		Engine: fakeserver.Engine{Step: 5 * time.Millisecond, PerSeq: 100 * time.Microsecond, PrefillPerToken: 20 * time.Microsecond,
			KVTokens: 12000, PrefixCacheTokens: 20000}}
}

// Validate checks the configuration.
func (c SaturationConfig) Validate() error {
	if c.Servers < 1 || c.Tokens < 1 || c.Engine.Step <= 0 || c.Engine.KVTokens < 1 || c.TreesPerTask < 1 || c.Level <= 0 || c.Concurrency < 1 || c.SweepFlat < 1 {
		return fmt.Errorf("saturation: servers, tokens, step, kv_tokens, trees_per_task, level, concurrency and sweep_flat must be > 0, got %+v", c)
	}
	return nil
}

// ServerRun is one fake server's side of the benchmark.
type ServerRun struct {
	URL string
	// Sweep is its sequences/s at each concurrency of the direct sweep;
	// Peak the highest, at PeakAt requests in flight.
	Sweep  []SweepPoint
	Peak   float64
	PeakAt int
	// Pipeline is the sequences it decoded during the pipeline run (with
	// affinity); MaxActive and MaxQueued the most decoding and waiting at
	// once then; Hits and Lookups its prefix cache's then.
	Pipeline, MaxActive, MaxQueued int
	Hits, Lookups                  int
	// Limit is the pool's limit for it at the end (FromMetrics: following
	// the server's metrics, else throughput); Routed its requests by how
	// the pool chose it.
	Limit       float64
	FromMetrics bool
	Routed      map[string]float64
	// Timeline is the mean of its sequences in flight (decoding and
	// waiting), per second of the pipeline run (sampled every 50 ms);
	// Waiting the mean of those waiting; Queued the share of the samples
	// in which some waited (a finished sequence's place in the batch could
	// be taken at once).
	Timeline, Waiting []float64
	Queued            float64
}

// SweepPoint is the throughput of one concurrency of the direct sweep.
type SweepPoint struct {
	Concurrency int
	Rate        float64
}

// SaturationResult is the pipeline through the pool against the servers'
// own peak, with prefix affinity and without.
type SaturationResult struct {
	Broker  string
	Machine Machine
	Config  SaturationConfig
	Tasks   int
	// Pipeline is the whole pipeline (execute's sandbox replaced by
	// Verdict) with the OpenAI policy over a pool of the servers;
	// NoAffinity the same without prefix affinity (pool.affinity off),
	// whose servers' prefix cache hits are NoAffinityHits of
	// NoAffinityLookups.
	Pipeline, NoAffinity              Run
	NoAffinityHits, NoAffinityLookups int
	Servers                           []ServerRun
	Prefix                            string
}

// Peak is the servers' summed peak, in sequences/s.
func (r SaturationResult) Peak() float64 {
	var s float64
	for _, x := range r.Servers {
		s += x.Peak
	}
	return s
}

// Ratio is pipeline samples/s over the servers' summed peak.
func (r SaturationResult) Ratio() float64 { return r.Pipeline.Rate() / max(r.Peak(), 1e-9) }

// HitRate is the servers' prefix cache hit rate in the pipeline run with
// affinity.
func (r SaturationResult) HitRate() float64 {
	var h, l int
	for _, s := range r.Servers {
		h, l = h+s.Hits, l+s.Lookups
	}
	return float64(h) / float64(max(l, 1))
}

func (r SaturationResult) String() string {
	var b strings.Builder
	c := r.Config
	e := c.Engine
	fmt.Fprintf(&b, "saturation: pipeline through the server pool vs the servers' own peak (a direct sweep of concurrency replaying the pipeline's requests)\n")
	fmt.Fprintf(&b, "  broker    %s\n", r.Broker)
	fmt.Fprintf(&b, "  machine   %s\n", r.Machine)
	metrics := "vLLM's scheduler gauges on /metrics"
	if c.NoMetrics {
		metrics = "no metrics"
	}
	fmt.Fprintf(&b, "  servers   %d fake servers: step %s + %s per sequence, prefill %s per prompt token not cached, KV cache %d tokens, prefix cache %d tokens; responses of %d tokens; %s\n",
		c.Servers, e.Step, e.PerSeq, e.PrefillPerToken, e.KVTokens, e.PrefixCacheTokens, c.Tokens, metrics)
	var affinity, spill float64
	for i, s := range r.Servers {
		pts := make([]string, len(s.Sweep))
		for j, p := range s.Sweep {
			pts[j] = fmt.Sprintf("%d:%.1f", p.Concurrency, p.Rate)
		}
		fmt.Fprintf(&b, "  server %d  sweep (in flight: sequences/s) %s; peak %.1f at %d\n", i, strings.Join(pts, " "), s.Peak, s.PeakAt)
		mode := "throughput"
		if s.FromMetrics {
			mode = "the server's metrics"
		}
		fmt.Fprintf(&b, "            in the pipeline %d sequences, at most %d decoding and %d waiting at once, pool limit %.0f at the end (from %s), prefix hits %d of %d\n",
			s.Pipeline, s.MaxActive, s.MaxQueued, s.Limit, mode, s.Hits, s.Lookups)
		fmt.Fprintf(&b, "            in flight (decoding + waiting), mean per second of the run: %s\n", joinRound(s.Timeline))
		fmt.Fprintf(&b, "            waiting, mean per second: %s; some waited in %.2f of the samples\n", joinRound(s.Waiting), s.Queued)
		affinity += s.Routed["affinity"]
		spill += s.Routed["spill"]
	}
	fmt.Fprintf(&b, "  workload  %d tasks x %d trees = %d trees, %d samples\n", r.Tasks, c.TreesPerTask, r.Pipeline.Trees, r.Pipeline.Samples)
	fmt.Fprintf(&b, "  pipeline  %8.1f samples/s (%d samples in %s; %s CPU per sample)\n",
		r.Pipeline.Rate(), r.Pipeline.Samples, r.Pipeline.Active.Round(time.Millisecond), r.Pipeline.CPUPerSample().Round(time.Microsecond))
	if affinity+spill > 0 {
		fmt.Fprintf(&b, "  routing   %.0f requests to their tree's server, %.0f spilled (%.3f affinity)\n", affinity, spill, affinity/(affinity+spill))
	}
	noHit := float64(r.NoAffinityHits) / float64(max(r.NoAffinityLookups, 1))
	fmt.Fprintf(&b, "  affinity  on: %.1f samples/s, prefix hit rate %.3f; off: %.1f samples/s, hit rate %.3f (gain %.2fx)\n",
		r.Pipeline.Rate(), r.HitRate(), r.NoAffinity.Rate(), noHit, r.Pipeline.Rate()/max(r.NoAffinity.Rate(), 1e-9))
	fmt.Fprintf(&b, "  servers   %8.1f sequences/s at their peaks, summed\n", r.Peak())
	fmt.Fprintf(&b, "  ratio     %.2f (target >= %.1f: %s)\n", r.Ratio(), SaturationTarget, ratioVerdict(r.Ratio(), SaturationTarget))
	return b.String()
}

func joinRound(vs []float64) string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = fmt.Sprintf("%.0f", v)
	}
	return strings.Join(out, " ")
}

// Saturation starts sc.Servers fake servers and runs the pipeline with
// the OpenAI policy over a pool of them (generate's scheduler, the pool's
// limits and affinity, execute through Verdict, govern, credit, emit) on
// b, recording every request the servers get. It then measures each
// server's peak by a direct concurrency sweep (plain HTTP requests, not
// murphy's client, all servers at once, on fresh servers) that replays
// those requests: the servers' peak on the pipeline's own workload. Last,
// the pipeline again without affinity.
func Saturation(ctx context.Context, b *Broker, c Config, sc SaturationConfig, ts []topics.Task, logw io.Writer) (SaturationResult, error) {
	res := SaturationResult{Broker: b.String(), Machine: startMachine(), Config: sc, Tasks: len(ts)}
	defer res.Machine.finish()
	if err := sc.Validate(); err != nil {
		return res, err
	}
	var mu sync.Mutex
	var bodies [][]byte
	record := func(path string, body []byte) {
		if strings.HasSuffix(path, "/chat/completions") {
			mu.Lock()
			bodies = append(bodies, body)
			mu.Unlock()
		}
	}
	servers, err := startEngines(sc, record)
	if err != nil {
		return res, err
	}
	defer func() { closeAll(servers) }()
	for _, s := range servers {
		res.Servers = append(res.Servers, ServerRun{URL: s.URL()})
	}
	stop := sampleServers(servers, res.Servers)
	res.Pipeline, err = saturationPipeline(ctx, b, c, sc, servers, ts, true, "saturation", &res, logw)
	stop()
	if err != nil {
		return res, err
	}
	for i, s := range servers {
		st := s.Stats()
		res.Servers[i].Pipeline, res.Servers[i].MaxActive, res.Servers[i].MaxQueued = st.Sequences, st.MaxActive, st.MaxQueued
		res.Servers[i].Hits, res.Servers[i].Lookups = st.PrefixHits, st.PrefixLookups
	}
	res.poolMetrics()
	// Fresh servers for the sweep and the second run: the caches of the
	// first would help them.
	closeAll(servers)
	if servers, err = startEngines(sc, nil); err != nil {
		return res, err
	}
	mu.Lock()
	replayed := bodies
	mu.Unlock()
	if err := sweepAll(ctx, servers, sc, replayed, res.Servers); err != nil {
		return res, fmt.Errorf("saturation: sweep: %w", err)
	}
	closeAll(servers)
	if servers, err = startEngines(sc, nil); err != nil {
		return res, err
	}
	res.NoAffinity, err = saturationPipeline(ctx, b, c, sc, servers, ts, false, "saturation-noaff", nil, logw)
	for _, s := range servers {
		st := s.Stats()
		res.NoAffinityHits, res.NoAffinityLookups = res.NoAffinityHits+st.PrefixHits, res.NoAffinityLookups+st.PrefixLookups
	}
	res.Machine.finish()
	return res, err
}

func startEngines(sc SaturationConfig, record func(string, []byte)) ([]*fakeserver.Server, error) {
	var out []*fakeserver.Server
	for i := range sc.Servers {
		s, err := fakeserver.Start(fakeserver.Config{Name: fmt.Sprintf("fake-%d", i), Tokens: sc.Tokens, Engine: sc.Engine, NoMetrics: sc.NoMetrics, Record: record})
		if err != nil {
			closeAll(out)
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func closeAll(servers []*fakeserver.Server) {
	for _, s := range servers {
		s.Close()
	}
}

// saturationPipeline runs the pipeline over a pool of servers, with
// affinity or without; res (when not nil) gets the run's topic prefix and
// registry for the pool's metrics.
func saturationPipeline(ctx context.Context, b *Broker, c Config, sc SaturationConfig, servers []*fakeserver.Server, ts []topics.Task,
	affinity bool, name string, res *SaturationResult, logw io.Writer) (Run, error) {
	c = c.seeded()
	c.TreesPerTask = sc.TreesPerTask
	g := &c.Generate
	g.Concurrency = sc.Concurrency
	g.Policy.Kind = generate.PolicyOpenAI
	oc := &g.Policy.OpenAI
	oc.MaxTokens, oc.Seed = sc.Tokens, c.Seed
	oc.Client.Model, oc.Client.ReturnTokenIDs = "fake", true
	oc.Client.Timeout = time.Minute
	oc.Pool.Servers, oc.Pool.Affinity = nil, affinity
	for _, s := range servers {
		oc.Pool.Servers = append(oc.Pool.Servers, s.URL())
	}
	if err := c.Validate(); err != nil {
		return Run{}, err
	}
	cat, err := b.catalog(ctx, name, c.Partitions)
	if err != nil {
		return Run{}, err
	}
	if !c.Keep {
		defer b.deleteTopics(cat)
	}
	freshHeap()
	run, err := runPipeline(ctx, b, cat, c, executeWith{runner: NewVerdict(ts)}, ts, c.submitConfig("bench-"+name, sc.TreesPerTask), logw)
	if err != nil {
		return run, fmt.Errorf("saturation: pipeline: %w", err)
	}
	if res != nil {
		res.Prefix = cat.Prefix
	}
	return run, nil
}
