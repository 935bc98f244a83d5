package generate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"

	"github.com/murphy-rl/murphy/openai"
	"github.com/murphy-rl/murphy/topics"
)

// versionServers is where versions are loaded: the policy's server pool
// (every member, prepared before it takes traffic) or fixed URLs.
type versionServers struct {
	pool *openai.Pool
	urls []string
}

// roots are the servers' roots now.
func (w versionServers) roots() []string {
	if w.pool == nil {
		return w.urls
	}
	var out []string
	for _, s := range w.pool.Servers() {
		if !s.Removed {
			out = append(out, s.URL)
		}
	}
	return out
}

// setLoading marks pv as the version being loaded (nil: none).
func (v *versions) setLoading(pv *topics.PolicyVersion) {
	v.mu.Lock()
	v.loading = pv
	v.mu.Unlock()
}

// loadEverywhere loads pv on the servers: with a pool, on every member
// (a member that fails is out of rotation until prepared again; when all
// fail, pv is not served); with URLs, on each of them.
func (v *versions) loadEverywhere(ctx context.Context, pv *topics.PolicyVersion) error {
	v.setLoading(pv)
	defer v.setLoading(nil)
	if p := v.where.pool; p != nil {
		errs, n := p.Prepare(ctx)
		switch {
		case n == 0:
			return fmt.Errorf("generate: version %d: the pool has no server", pv.Version)
		case len(errs) == n:
			return errors.Join(mapErrors(errs)...)
		case len(errs) > 0:
			slog.Warn("policy version not loaded on every server; those are out of rotation until they load it",
				"version", pv.Version, "model", pv.Model, "errors", mapErrors(errs))
		}
		return nil
	}
	keep := v.keep(nil)
	for _, u := range v.where.urls {
		if err := v.load.ensure(ctx, u, keep); err != nil {
			return err
		}
	}
	return nil
}

func mapErrors(m map[string]error) []error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]error, 0, len(m))
	for _, k := range keys {
		out = append(out, m[k])
	}
	return out
}

// prepareServer is the pool's PrepareFunc: server root loads the versions
// kept (and those of the models it said it misses) before it takes
// traffic.
func (v *versions) prepareServer(ctx context.Context, root string, missing []string) error {
	v.load.forget(root) // new, back from a failure or missing a model: what it had is not known
	return v.load.ensure(ctx, root, v.keep(missing))
}

// keep are the versions servers keep loaded: the served one and the one
// being loaded, the Keep newest served, those of trees in flight (when
// known) and those of the missing models.
func (v *versions) keep(missing []string) []*topics.PolicyVersion {
	var inFlight map[int64]bool
	if v.inFlight != nil {
		inFlight = v.inFlight()
	}
	v.mu.RLock()
	defer v.mu.RUnlock()
	want := map[int64]bool{}
	if v.served != nil {
		want[v.served.Version] = true
	}
	if v.loading != nil {
		want[v.loading.Version] = true
	}
	n := v.load.cfg.Keep
	for i := len(v.recent) - 1; i >= 0 && (n == 0 || len(v.recent)-i <= n); i-- {
		want[v.recent[i]] = true
	}
	for ver := range inFlight {
		want[ver] = true
	}
	for _, m := range missing {
		for ver, pv := range v.all {
			if pv.Model == m {
				want[ver] = true
			}
		}
	}
	var out []*topics.PolicyVersion
	for ver := range want {
		if pv := v.all[ver]; pv != nil {
			out = append(out, pv)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out
}

// prune unloads, on every server, the versions no longer kept (vllm).
func (v *versions) prune(ctx context.Context) {
	if v.load.cfg.Keep == 0 {
		return
	}
	keep := map[string]bool{}
	for _, pv := range v.keep(nil) {
		keep[pv.Model] = true
	}
	for _, root := range v.where.roots() {
		if err := v.load.prune(ctx, root, keep); err != nil {
			slog.Warn("policy versions not unloaded", "server", root, "err", err)
		}
	}
}
