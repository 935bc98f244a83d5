package generate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/murphy-rl/murphy/openai"
	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/stages/generate/episode"
	"github.com/murphy-rl/murphy/stages/generate/policy"
	"github.com/murphy-rl/murphy/tasks"
	"github.com/murphy-rl/murphy/topics"
	"github.com/prometheus/client_golang/prometheus"
)

// TaskLookup finds a task by id (tasks.Memory, or tasks.FromTable over the
// compacted tasks topic). The stage asks it only when the policy needs the
// task (the simulated policy samples from the reference).
type TaskLookup = tasks.Lookup

// Stage is the generate stage.
type Stage struct {
	cfg      Config
	pol      policy.Policy
	lookup   TaskLookup
	cat      topics.Catalog
	m        *Metrics
	slots    *slots
	adm      *admission
	now      func() time.Time
	instance string
	// ep runs agent episodes for compile-fix tasks (nil: off).
	ep *episodes
	// vers follows policy versions (nil: versions.follow off); mods is
	// the policy of each model name (nil: s.pol for every version).
	vers *versions
	mods *policies
	// bnd is the staleness bound (nil: staleness.enabled off) and alog
	// the admission log it decides on.
	bnd  *bound
	alog *admissionLog
}

// NewStage builds the policy cfg.Policy selects and the stage around it.
func NewStage(cfg Config, lookup TaskLookup, cat topics.Catalog, reg prometheus.Registerer, opts ...Option) (*Stage, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Versions.Follow && cfg.Versions.Load.Preset != LoadNone && cfg.Policy.Kind == PolicyOpenAI &&
		!cfg.Policy.OpenAI.Pool.Enabled() && len(cfg.Versions.Load.URLs) == 0 {
		// A pool of one server: it is prepared (loads the versions) before
		// it takes traffic, and again when it answers "model not found".
		cfg.Policy.OpenAI.Pool.Servers = []string{cfg.Policy.OpenAI.Client.BaseURL}
	}
	pol, err := NewPolicy(cfg.Policy)
	if err != nil {
		return nil, err
	}
	if o, ok := pol.(*policy.OpenAI); ok && cfg.Versions.Follow {
		opts = append([]Option{WithModelPolicies(func(model string) (policy.Policy, error) {
			return o.ForModel(model), nil
		})}, opts...)
	}
	return NewStageWithPolicy(cfg, pol, lookup, cat, reg, opts...)
}

// NewStageWithPolicy builds the stage around pol; cfg.Policy is ignored. lookup may
// be nil when pol does not need tasks. Metrics are registered on reg (nil:
// not registered). With cfg.Episodes.Enabled, WithEpisodes must give the
// episodes' runtime.
func NewStageWithPolicy(cfg Config, pol policy.Policy, lookup TaskLookup, cat topics.Catalog, reg prometheus.Registerer, opts ...Option) (*Stage, error) {
	if pol == nil {
		return nil, errors.New("generate: no policy")
	}
	cfg.Policy.Kind = PolicySimulated // the policy is given; do not validate its config
	cfg.Policy.Simulated = policy.DefaultSimulatedConfig()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if (pol.NeedsTask() || cfg.Episodes.Enabled) && lookup == nil {
		return nil, fmt.Errorf("generate: policy %s needs a task lookup", pol.Name())
	}
	if err := cat.Validate(); err != nil {
		return nil, err
	}
	m := NewMetrics(reg)
	if o, ok := pol.(interface{ ObserveAttempts(func(openai.Attempt)) }); ok {
		o.ObserveAttempts(m.ObserveAttempt)
	}
	s := &Stage{cfg: cfg, pol: pol, lookup: lookup, cat: cat, m: m,
		now: time.Now, instance: cfg.instanceID()}
	s.slots = newSharedSlots(cfg.Concurrency, cfg.BackfillShare, time.Now,
		func(class int) { m.Started.WithLabelValues(className(class)).Inc() })
	s.watchPolicy(reg)
	s.adm = newAdmission(cfg.MaxTreesInFlight, cfg.TreeTTL, func() time.Time { return s.now() },
		func(n int) { m.TreesInFlight.Set(float64(n)) }).withShare(cfg.BackfillShare)
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if err := s.setupEpisodes(o, reg); err != nil {
		return nil, err
	}
	if cfg.Staleness.Enabled {
		s.bnd = newBound(cfg.Staleness.ProgressTTL, cfg.TreeTTL, func() time.Time { return s.now() })
		s.bnd.landGrace = max(2*time.Second, 2*cfg.Staleness.PollInterval)
		s.alog = newAdmissionLog(s.bnd, s.instance, time.Now())
	}
	if cfg.Versions.Follow {
		if err := s.setupVersions(pol); err != nil {
			return nil, err
		}
		if o.models != nil {
			s.mods = &policies{build: func(model string) (policy.Policy, error) {
				p, err := o.models(model)
				if err == nil {
					if ob, ok := p.(interface{ ObserveAttempts(func(openai.Attempt)) }); ok {
						ob.ObserveAttempts(m.ObserveAttempt)
					}
				}
				return p, err
			}}
		}
	}
	if reg != nil {
		reg.MustRegister(newTrainerRows(s.trainerReports))
	}
	return s, nil
}

// Close releases the stage's policy (its server pool's goroutines); the
// stage must not be used after it.
func (s *Stage) Close() {
	if c, ok := s.pol.(interface{ Close() }); ok {
		c.Close()
	}
}

// Metrics returns the stage's metrics.
func (s *Stage) Metrics() *Metrics { return s.m }

// Policy returns the stage's policy.
func (s *Stage) Policy() policy.Policy { return s.pol }

// TreesInFlight is the number of trees admitted and not yet completed.
func (s *Stage) TreesInFlight() int { return s.adm.size() }

// Specs are the runtime stages of generate:
//
//   - "generate" consumes root prompts; a new tree waits while the cap on
//     trees in flight is reached;
//   - "generate-backfill" consumes backfill root prompts (topic
//     backfill-prompts, from `murphy backfill submit`), held back like root
//     prompts and sharing root capacity with them by Config.BackfillShare;
//   - "generate-refinements" consumes refinement prompts, never held back
//     and served first when prompts compete for a generation slot;
//   - "generate-completions-<instance>" (only with a cap or the staleness
//     bound) reads the completions topic's keys to learn which trees
//     completed. Its consumer group is this process's own, so every
//     process sees every completion.
func (s *Stage) Specs() []pipeline.Stage {
	specs := []pipeline.Stage{
		{Name: "generate", Inputs: []string{s.cat.Topic(topics.Prompts)}, Handler: s.HandlePrompt, Concurrency: s.cfg.Concurrency},
		{Name: "generate-backfill", Inputs: []string{s.cat.Topic(topics.BackfillPrompts)}, Handler: s.HandlePrompt, Concurrency: s.cfg.Concurrency},
		{Name: "generate-refinements", Inputs: []string{s.cat.Topic(topics.Refinements)}, Handler: s.HandlePrompt, Concurrency: s.cfg.Concurrency},
	}
	if s.cfg.MaxTreesInFlight > 0 || s.bnd != nil {
		specs = append(specs, pipeline.Stage{Name: "generate-completions-" + s.instance,
			Inputs: []string{s.cat.Topic(topics.Completions)}, Handler: s.HandleCompletion})
	}
	return specs
}

// HandleCompletion releases the slot of the tree a completion names (its
// key); the value is not read.
func (s *Stage) HandleCompletion(_ context.Context, rec pipeline.Record) ([]pipeline.Out, error) {
	s.TreeDone(string(rec.Key))
	return nil, nil
}

// TreeDone releases the slot of a completed tree; unknown trees are ignored.
func (s *Stage) TreeDone(treeID string) {
	if s.adm.done(treeID) {
		s.m.Completions.Inc()
	}
	if s.bnd != nil {
		s.bnd.completed(treeID)
		s.updateBoundMetrics()
	}
}

// HandlePrompt handles one prompt record (root, backfill root or
// refinement): it emits exactly GroupSize candidates keyed by tree id. A
// root prompt read from the backfill-prompts topic is a backfill prompt.
func (s *Stage) HandlePrompt(ctx context.Context, rec pipeline.Record) ([]pipeline.Out, error) {
	var p topics.Prompt
	if err := pipeline.Decode(rec.Value, &p); err != nil {
		return nil, err
	}
	// Waits end only when ctx does (the stage is stopping): the prompt is
	// then redelivered, never dead-lettered.
	prio, kind := prioRoot, "root"
	if rec.Topic != "" && rec.Topic == s.cat.Topic(topics.BackfillPrompts) {
		prio, kind = prioBackfill, "backfill"
	}
	if p.ParentID != "" {
		prio, kind = prioRefinement, "refinement"
		s.adm.touch(p.TreeID)
		if s.staleRefinement(&p) {
			return s.restartTree(ctx, &p)
		}
		s.refinementVersion(&p)
	} else {
		if err := s.admitRoot(ctx, &p, streamOf(prio)); err != nil {
			return nil, topics.Transient(err)
		}
	}
	g, err := s.slots.acquire(ctx, prio)
	if err != nil {
		return nil, topics.Transient(err)
	}
	s.m.InFlight.Inc()
	cands, err := s.Generate(ctx, &p)
	s.m.InFlight.Dec()
	s.slots.release(g)
	switch {
	case err != nil && topics.IsPoison(err):
		return nil, err // the task stayed missing: dead-lettered, replayable
	case err != nil:
		return nil, topics.Transient(err)
	}
	if s.mixesVersions(&p, cands) {
		return s.restartTree(ctx, &p)
	}
	s.m.Prompts.WithLabelValues(kind).Inc()
	outs := make([]pipeline.Out, 0, len(cands))
	topic := s.cat.Topic(topics.Candidates)
	for _, c := range cands {
		b, err := topics.Encode(c)
		if err != nil {
			// A response the contract cannot carry (too large, token
			// columns out of shape) is the inference's failure, not the
			// tree's: the child still exists.
			markInfra(c, topics.InfraInference, fmt.Errorf("candidate not encodable: %w", err))
			if b, err = topics.Encode(c); err != nil {
				return nil, fmt.Errorf("generate: encode candidate %s: %w", c.NodeID, err)
			}
		}
		outs = append(outs, pipeline.Out{Topic: topic, Key: c.TreeID, Value: b})
		s.count(c)
	}
	return outs, nil
}

// admitRoot waits until root prompt p may start: under the staleness
// bound (its grant on the admission log) and the cap on trees in flight;
// then p is stamped with the version it starts at.
func (s *Stage) admitRoot(ctx context.Context, p *topics.Prompt, stream int) error {
	version := s.servedVersion()
	if s.bnd != nil {
		v, err := s.admitBounded(ctx, p.TreeID)
		if err != nil {
			return err
		}
		version = v
	}
	if err := s.adm.admit(ctx, p.TreeID, stream, s.m.HeldBack.Inc); err != nil {
		return err
	}
	p.PolicyVersion = version
	return nil
}

func (s *Stage) count(c *topics.Candidate) {
	result := "ok"
	if c.InfraCause != "" {
		result = c.InfraCause
		s.m.Failures.WithLabelValues(c.InfraCause).Inc()
	}
	s.m.Samples.WithLabelValues(result).Inc()
	s.m.Tokens.WithLabelValues("prompt").Add(float64(len(c.PromptTokenIDs)))
	s.m.Tokens.WithLabelValues("response").Add(float64(len(c.ResponseTokenIDs)))
}

// Generate samples the children of prompt p: exactly p.GroupSize
// candidates with node ids topics.NodeID(tree, group, i). Children the
// policy could not produce are marked infra.inference or
// infra.context_overflow with the error. It returns an error when the task
// a policy needs cannot be had (tasks.Await: poison when it stays missing)
// or when ctx ends (the prompt must then be processed again, not marked
// failed).
func (s *Stage) Generate(ctx context.Context, p *topics.Prompt) ([]*topics.Candidate, error) {
	ids := make([]string, p.GroupSize)
	for i := range ids {
		ids[i] = topics.NodeID(p.TreeID, p.GroupID, i)
	}
	req := policy.Request{Prompt: p, NodeIDs: ids}
	if s.pol.NeedsTask() || s.ep != nil {
		t, err := tasks.Await(ctx, s.lookup, p.TaskID, s.cfg.TaskWait)
		if err != nil {
			return nil, err
		}
		req.Task = t
		if s.ep != nil && t.Kind == topics.KindCompileFix {
			return s.generateEpisodes(ctx, p, t, ids)
		}
	}
	start := time.Now()
	pol, samples, perr := s.callPolicy(ctx, p, req)
	s.m.observeCall(time.Since(start))
	if pol == nil {
		return nil, perr
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if perr == nil && len(samples) < len(ids) {
		perr = fmt.Errorf("policy %s returned %d of %d samples", pol.Name(), len(samples), len(ids))
	}
	cause := topics.InfraInference
	if errors.Is(perr, policy.ErrContextOverflow) {
		cause = topics.InfraContextOverflow
	}
	now := s.now().UTC()
	out := make([]*topics.Candidate, len(ids))
	for i, id := range ids {
		c := s.newCandidate(p, id, i, now)
		c.Policy = pol.Name() // the version's model, not the configured one
		if i < len(samples) {
			smp := samples[i]
			c.ResponseText, c.Code, c.FinishReason = smp.Text, smp.Code, smp.FinishReason
			if s.stampsByServer() && smp.ServerTag != openai.NoTag {
				c.PolicyVersion = smp.ServerTag // the full weights that answered
			}
			if smp.PromptTokenIDs != nil {
				c.PromptTokenIDs = smp.PromptTokenIDs
			}
			if smp.TokenIDs != nil {
				c.ResponseTokenIDs = smp.TokenIDs
			}
			if smp.Logprobs != nil && len(smp.Logprobs) == len(c.ResponseTokenIDs) {
				c.ResponseLogprobs = smp.Logprobs
			}
		} else {
			markInfra(c, cause, perr)
		}
		if c.PromptTokenIDs == nil {
			c.PromptTokenIDs = []int32{}
		}
		out[i] = c
	}
	return out, nil
}

// callPolicy samples req on the policy of p's version. With
// in_flight=abort a version served during the call interrupts it, and the
// prompt is generated again at the new version (p is stamped with it):
// what is kept was answered by one version. A nil policy comes with the
// error that kept it from being built.
func (s *Stage) callPolicy(ctx context.Context, p *topics.Prompt, req policy.Request) (policy.Policy, []policy.Sample, error) {
	for {
		pol, err := s.versionedPolicy(p)
		if err != nil {
			return nil, nil, fmt.Errorf("generate: policy for version %d: %w", p.PolicyVersion, err)
		}
		if s.vers == nil || s.cfg.Versions.InFlight != InFlightAbort {
			samples, err := pol.Generate(ctx, req)
			return pol, samples, err
		}
		changed := s.vers.changedChan()
		cctx, cancel := context.WithCancel(ctx)
		go func() {
			select {
			case <-changed:
				cancel()
			case <-cctx.Done():
			}
		}()
		samples, err := pol.Generate(cctx, req)
		interrupted := cctx.Err() != nil && ctx.Err() == nil
		cancel()
		if !interrupted {
			return pol, samples, err
		}
		s.m.Aborted.Inc()
		p.PolicyVersion = s.servedVersion()
	}
}

// newCandidate is child i of prompt p, without its response.
func (s *Stage) newCandidate(p *topics.Prompt, id string, i int, now time.Time) *topics.Candidate {
	return &topics.Candidate{
		SchemaVersion: topics.SchemaVersion, TreeSpec: p.TreeSpec,
		TreeID: p.TreeID, TaskID: p.TaskID, NodeID: id, ParentID: p.ParentID, GroupID: p.GroupID,
		Turn: p.Turn, Index: i, GroupSize: p.GroupSize,
		PromptText: p.Text, PromptTokenIDs: p.TokenIDs,
		ResponseTokenIDs: []int32{}, ResponseLogprobs: []float32{},
		Policy: s.pol.Name(), PolicyVersion: s.promptVersion(p), GeneratedAt: now,
	}
}

// markInfra makes c an infrastructure failure: no response and no episode
// steps; an episode's end becomes episode.EndError.
func markInfra(c *topics.Candidate, cause string, err error) {
	if c.EpisodeEnd != "" {
		c.EpisodeEnd = episode.EndError
	}
	c.InfraCause = cause
	c.InfraError = err.Error()
	c.ResponseText, c.Code, c.FinishReason = "", "", "error"
	c.ResponseTokenIDs, c.ResponseLogprobs, c.StepEnds, c.ToolSteps = []int32{}, []float32{}, nil, nil
}

// stampsByServer: candidates are stamped with the version of the server
// that answered (full weights, one set under every name: sglang), not the
// version of the model named.
func (s *Stage) stampsByServer() bool {
	return s.vers != nil && s.cfg.Versions.Load.Preset == LoadSGLang
}

// mixesVersions: with in_flight=restart, refinement p answered by a
// version other than its tree's (full weights updated meanwhile) is not
// kept: the tree is restarted, so that no tree mixes versions.
func (s *Stage) mixesVersions(p *topics.Prompt, cands []*topics.Candidate) bool {
	if p.ParentID == "" || s.vers == nil || s.cfg.Versions.InFlight != InFlightRestart {
		return false
	}
	for _, c := range cands {
		if c.InfraCause == "" && c.PolicyVersion != p.PolicyVersion {
			return true
		}
	}
	return false
}

// promptVersion is the version candidates of p record. Following
// versions, it is p's stamp (HandlePrompt's choice), the very version
// versionedPolicy picks the model by, never the version served when the
// candidates are made: a version arriving during the call must not
// relabel what the older model wrote.
func (s *Stage) promptVersion(p *topics.Prompt) int64 {
	if s.vers == nil {
		return s.pol.Version()
	}
	return p.PolicyVersion
}

// setupVersions follows versions with the load hook over the policy's
// servers: every member of its pool, prepared before it takes traffic, or
// the hook's URLs (default: the policy's base URL).
func (s *Stage) setupVersions(pol policy.Policy) error {
	ld, err := newLoader(s.cfg.Versions.Load)
	if err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	s.vers = newVersions(ld, s.cfg.Versions.RetryInterval, s.m)
	s.vers.now = func() time.Time { return s.now() }
	if s.bnd != nil {
		s.vers.inFlight = s.bnd.versionsInFlight
	}
	if ld == nil {
		return nil
	}
	o, _ := pol.(*policy.OpenAI)
	if o != nil && o.Pool() != nil && len(s.cfg.Versions.Load.URLs) == 0 {
		s.vers.where.pool = o.Pool()
		ld.pool = o.Pool()
		o.Pool().SetPrepare(s.vers.prepareServer)
		return nil
	}
	s.vers.where.urls = s.cfg.Versions.Load.URLs
	if len(s.vers.where.urls) == 0 {
		if o == nil {
			return errors.New("generate: versions.load: no server URL (versions.load.urls)")
		}
		s.vers.where.urls = []string{s.cfg.Policy.OpenAI.Client.BaseURL}
	}
	return nil
}
