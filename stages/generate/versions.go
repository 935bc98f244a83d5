package generate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/stages/generate/policy"
	"github.com/murphy-rl/murphy/tasks/submit"
	"github.com/murphy-rl/murphy/topics"
)

// What trees in flight do when a new version arrives (VersionsConfig.InFlight).
const (
	InFlightFinish  = "finish"
	InFlightRestart = "restart"
	InFlightAbort   = "abort"
)

// InfraStaleVersion marks the children of a refinement not generated
// because its tree's version is older than the newest (in_flight restart).
const InfraStaleVersion = "infra.stale_version"

// VersionsConfig makes generate follow the policy-versions topic
// (VERSIONS.md).
type VersionsConfig struct {
	// Follow reads the policy-versions topic: new requests go to the newest
	// version's model name and candidates record that version. Off: the
	// policy's configured model and policy_version.
	Follow bool `yaml:"follow"`
	// InFlight is what trees in flight do when a version arrives: "finish"
	// (every node on its root's version), "restart" (stale refinements are
	// closed and the task starts again as a new tree at the newest
	// version) or "abort" (requests in flight are interrupted and
	// generated again at the newest version; every node is stamped with
	// the version that answered it).
	InFlight string `yaml:"in_flight"`
	// Load is the optional hook that tells servers to load a new version
	// before requests go to it.
	Load LoadConfig `yaml:"load"`
	// RetryInterval is how long after a failed load the newest version is
	// tried again.
	RetryInterval time.Duration `yaml:"retry_interval"`
}

// StalenessConfig bounds how far generation runs ahead of the trainers
// that ask for a bound (VERSIONS.md).
type StalenessConfig struct {
	// Enabled reads the trainer-progress topic and holds back new trees
	// while generation is more than a trainer's max_staleness versions
	// ahead of it; every admitted tree is published on the admissions topic.
	Enabled bool `yaml:"enabled"`
	// ProgressTTL is the age after which a trainer's latest progress stops
	// bounding (a trainer that went away).
	ProgressTTL time.Duration `yaml:"progress_ttl"`
	// PollInterval is how often the credited topic's end offsets are read.
	PollInterval time.Duration `yaml:"poll_interval"`
}

// DefaultVersionsConfig does not follow versions; when it does, trees
// finish on their version.
func DefaultVersionsConfig() VersionsConfig {
	return VersionsConfig{InFlight: InFlightFinish, Load: DefaultLoadConfig(), RetryInterval: 30 * time.Second}
}

// DefaultStalenessConfig is off, with a 10 min progress TTL when on.
func DefaultStalenessConfig() StalenessConfig {
	return StalenessConfig{ProgressTTL: 10 * time.Minute, PollInterval: time.Second}
}

// Validate checks the configuration.
func (c VersionsConfig) Validate() error {
	var errs []error
	switch c.InFlight {
	case InFlightFinish, InFlightRestart, InFlightAbort:
	default:
		errs = append(errs, fmt.Errorf("versions.in_flight must be %q, %q or %q, got %q", InFlightFinish, InFlightRestart, InFlightAbort, c.InFlight))
	}
	if err := c.Load.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.Load.Preset == LoadSGLang && c.InFlight == InFlightFinish {
		// Full weights change under every name at once: a tree cannot
		// finish on its root's version.
		errs = append(errs, errors.New("versions.load.preset sglang needs versions.in_flight restart or abort (finish needs a model name per version, as vllm's adapters)"))
	}
	if c.RetryInterval <= 0 {
		errs = append(errs, fmt.Errorf("versions.retry_interval must be > 0, got %s", c.RetryInterval))
	}
	return errors.Join(errs...)
}

// Validate checks the configuration.
func (c StalenessConfig) Validate() error {
	if c.ProgressTTL <= 0 || c.PollInterval <= 0 {
		return fmt.Errorf("staleness: progress_ttl and poll_interval must be > 0, got %s and %s", c.ProgressTTL, c.PollInterval)
	}
	return nil
}

// versions follows the policy-versions topic: every version seen, the one
// served (loaded on the servers that answer for it) and the newest seen.
type versions struct {
	mu      sync.RWMutex
	all     map[int64]*topics.PolicyVersion
	served  *topics.PolicyVersion
	newest  int64
	failed  map[int64]time.Time // last failed load of a version
	load    *loader
	retry   time.Duration
	now     func() time.Time
	m       *Metrics
	changed chan struct{}
	// where the versions are loaded (versions_load.go); loading is the
	// version being loaded (servers prepared meanwhile load it too);
	// recent the versions served, oldest first.
	where   versionServers
	loading *topics.PolicyVersion
	recent  []int64
	// inFlight, when known (the staleness bound), are the versions of the
	// trees in flight of every generate process: kept loaded.
	inFlight func() map[int64]bool
	// advancing serializes advance.
	advancing sync.Mutex
}

func newVersions(load *loader, retry time.Duration, m *Metrics) *versions {
	return &versions{all: map[int64]*topics.PolicyVersion{}, failed: map[int64]time.Time{},
		load: load, retry: retry, now: time.Now, m: m, changed: make(chan struct{})}
}

// current is the served version (nil: none published yet).
func (v *versions) current() *topics.PolicyVersion {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.served
}

// changedChan is closed when a newer version is served.
func (v *versions) changedChan() <-chan struct{} {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.changed
}

// get is version n (nil when unknown).
func (v *versions) get(n int64) *topics.PolicyVersion {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.all[n]
}

// observe records a published version and, when it is newer than the
// served one, loads it (hook) and serves it. A failed load keeps the
// served version; advance tries again after the retry interval.
func (v *versions) observe(ctx context.Context, pv *topics.PolicyVersion) error {
	v.mu.Lock()
	if _, ok := v.all[pv.Version]; !ok {
		v.all[pv.Version] = pv
	}
	if pv.Version > v.newest {
		v.newest = pv.Version
		v.m.VersionNewest.Set(float64(pv.Version))
	}
	v.mu.Unlock()
	return v.advance(ctx)
}

// advance serves the newest version once it is loaded.
func (v *versions) advance(ctx context.Context) error {
	v.advancing.Lock()
	defer v.advancing.Unlock()
	v.mu.RLock()
	newest, served := v.newest, int64(0)
	if v.served != nil {
		served = v.served.Version
	}
	pv := v.all[newest]
	last, failedBefore := v.failed[newest]
	v.mu.RUnlock()
	if pv == nil || newest <= served {
		return nil
	}
	if failedBefore && v.now().Sub(last) < v.retry {
		return nil
	}
	if v.load != nil {
		start := time.Now()
		err := v.loadEverywhere(ctx, pv)
		v.m.VersionLoadSeconds.Observe(time.Since(start).Seconds())
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			v.m.VersionLoads.WithLabelValues("failed").Inc()
			v.mu.Lock()
			v.failed[newest] = v.now()
			v.mu.Unlock()
			slog.Error("policy version not loaded; serving the previous one", "version", newest, "model", pv.Model, "served", served, "err", err)
			return err
		}
		v.m.VersionLoads.WithLabelValues("ok").Inc()
	}
	v.mu.Lock()
	if v.served == nil || pv.Version > v.served.Version {
		v.served = pv
		v.recent = append(v.recent, pv.Version)
		delete(v.failed, pv.Version)
		close(v.changed)
		v.changed = make(chan struct{})
	}
	v.mu.Unlock()
	v.m.VersionServed.Set(float64(pv.Version))
	v.m.VersionChanges.Inc()
	slog.Info("serving policy version", "version", pv.Version, "model", pv.Model)
	if v.load != nil {
		go v.prune(context.WithoutCancel(ctx))
	}
	return nil
}

// policies builds and keeps one policy per model name (OpenAI: a view of
// the configured policy whose requests name that model, over its client or
// server pool: evicting one releases nothing).
type policies struct {
	mu    sync.Mutex
	byMod map[string]policy.Policy
	order []string
	build func(model string) (policy.Policy, error)
}

const keptPolicies = 8

func (p *policies) get(model string) (policy.Policy, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pol, ok := p.byMod[model]; ok {
		return pol, nil
	}
	pol, err := p.build(model)
	if err != nil {
		return nil, err
	}
	if p.byMod == nil {
		p.byMod = map[string]policy.Policy{}
	}
	p.byMod[model] = pol
	p.order = append(p.order, model)
	if len(p.order) > keptPolicies {
		delete(p.byMod, p.order[0])
		p.order = p.order[1:]
	}
	return pol, nil
}

// ObserveVersion handles one record of the policy-versions topic.
func (s *Stage) ObserveVersion(ctx context.Context, pv *topics.PolicyVersion) error {
	if s.vers == nil {
		return nil
	}
	return s.vers.observe(ctx, pv)
}

// ObserveProgress handles one record of the trainer-progress topic.
func (s *Stage) ObserveProgress(p *topics.TrainerProgress) {
	if s.bnd == nil {
		return
	}
	s.bnd.setProgress(p)
	s.updateBoundMetrics()
}

// SetCreditedEnds sets the credited topic's high watermarks (partition → offset).
func (s *Stage) SetCreditedEnds(ends map[int]int64) { s.setCreditedEnds(ends, s.now()) }

func (s *Stage) setCreditedEnds(ends map[int]int64, asked time.Time) {
	if s.bnd == nil {
		return
	}
	s.bnd.setEnds(ends, asked)
	s.updateBoundMetrics()
}

func (s *Stage) updateBoundMetrics() {
	if s.bnd == nil {
		return
	}
	bounding := 0
	for _, t := range s.bnd.standings() {
		bounding++
		s.m.VersionsAhead.WithLabelValues(t.Trainer).Set(t.Ahead)
		s.m.TrainerBacklog.WithLabelValues(t.Trainer).Set(float64(t.Backlog))
	}
	s.m.TrainersBounding.Set(float64(bounding))
	trees, vers, oldest := s.bnd.inFlight()
	s.m.VersionsInFlight.Set(float64(vers))
	s.m.BoundTreesInFlight.Set(float64(trees))
	if cur := s.servedVersion(); trees > 0 && cur >= oldest {
		s.m.InFlightVersionLag.Set(float64(cur - oldest))
	} else {
		s.m.InFlightVersionLag.Set(0)
	}
}

// servedVersion is the version new trees start at.
func (s *Stage) servedVersion() int64 {
	if s.vers != nil {
		if v := s.vers.current(); v != nil {
			return v.Version
		}
	}
	return s.pol.Version()
}

// versionedPolicy is the policy and version prompt p is generated with; p.PolicyVersion
// is set by HandlePrompt.
func (s *Stage) versionedPolicy(p *topics.Prompt) (policy.Policy, error) {
	if s.vers == nil || s.mods == nil {
		return s.pol, nil
	}
	v := s.vers.get(p.PolicyVersion)
	if v == nil {
		return s.pol, nil
	}
	return s.mods.get(v.Model)
}

// refinementVersion stamps refinement p with the version it is
// generated at: its tree's (finish, restart: the version govern copied
// from its parent, version 0 included) or the served one (abort: every
// request goes to the newest version).
func (s *Stage) refinementVersion(p *topics.Prompt) {
	switch {
	case s.vers == nil:
		p.PolicyVersion = s.pol.Version()
	case s.cfg.Versions.InFlight == InFlightAbort:
		p.PolicyVersion = s.servedVersion()
	}
}

// staleRefinement says whether refinement p must be closed (restart): its
// tree started at a version older than the served one.
func (s *Stage) staleRefinement(p *topics.Prompt) bool {
	if s.vers == nil || s.cfg.Versions.InFlight != InFlightRestart || p.ParentID == "" {
		return false
	}
	return p.PolicyVersion < s.servedVersion()
}

// restartTree closes the stale refinement p (children marked
// infra.stale_version) and starts its task again as a new tree at the
// served version (when the task can be looked up).
func (s *Stage) restartTree(ctx context.Context, p *topics.Prompt) ([]pipeline.Out, error) {
	now := s.now().UTC()
	served := s.servedVersion()
	var outs []pipeline.Out
	topic := s.cat.Topic(topics.Candidates)
	for i := 0; i < p.GroupSize; i++ {
		c := s.newCandidate(p, topics.NodeID(p.TreeID, p.GroupID, i), i, now)
		markInfra(c, InfraStaleVersion, fmt.Errorf("tree started at policy version %d, now %d (versions.in_flight=restart)", p.PolicyVersion, served))
		b, err := topics.Encode(c)
		if err != nil {
			return nil, fmt.Errorf("generate: encode candidate %s: %w", c.NodeID, err)
		}
		outs = append(outs, pipeline.Out{Topic: topic, Key: c.TreeID, Value: b})
		s.count(c)
	}
	s.m.Restarts.Inc()
	if s.lookup == nil {
		return outs, nil
	}
	t, err := s.lookup.Task(ctx, p.TaskID)
	if err != nil || t == nil {
		slog.Warn("restart: task not found, tree not restarted", "tree", p.TreeID, "task", p.TaskID, "err", err)
		return outs, nil
	}
	tree := p.TreeID + "~v" + strconv.FormatInt(served, 10)
	text := submit.RootPromptText(t)
	root := &topics.Prompt{SchemaVersion: topics.SchemaVersion, TreeSpec: p.TreeSpec, TreeID: tree, TaskID: p.TaskID,
		GroupID: topics.RootID(tree), Turn: 1, GroupSize: p.TreeSpec.GroupSizeAt(1), Text: text,
		Messages: []topics.Message{{Role: "user", Content: text}}, CreatedAt: now}
	b, err := topics.Encode(root)
	if err != nil {
		return nil, fmt.Errorf("generate: encode restarted root %s: %w", tree, err)
	}
	return append(outs, pipeline.Out{Topic: s.cat.Topic(topics.Prompts), Key: tree, Value: b}), nil
}
