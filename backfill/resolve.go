package backfill

import (
	"context"
	"errors"
	"os"

	"github.com/murphy-rl/murphy/backfill/deps"
	"github.com/murphy-rl/murphy/compilefix"
	"github.com/murphy-rl/murphy/topics"
)

// withDependencies resolves what the task's build needs (BACKFILL.md,
// "Dependencies") on its snapshot with the reference applied, and names
// the stored cache in the task; a resolution the tools refuse is the
// task's missing_dependency in their words.
func (b *Builder) withDependencies(ctx context.Context, task *topics.Task, prov *Provenance, res *Result) (*verdict, error) {
	if b.Deps == nil {
		return nil, nil
	}
	cf := task.CompileFix
	tree, err := b.Verify.Cache.Get(ctx, cf.Workspace)
	if err != nil {
		return nil, err
	}
	defer tree.Release()
	req := deps.Request{Tree: tree.Dir(), Build: cf.Build, Tests: cf.Tests, DiskMB: cf.DiskMB}
	if task.ReferencePatch != "" {
		overlay, err := b.tempDir("murphy-backfill-ref-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(overlay)
		if deleted, err := compilefix.WriteOverlay(tree.Dir(), task.ReferencePatch, overlay); err == nil {
			req.Overlay, req.Deleted = overlay, deleted
		}
	}
	r, err := b.Deps.Resolve(ctx, req)
	res.Dependencies = r
	var f *deps.Failure
	switch {
	case errors.As(err, &f) && f.Sandbox:
		return refuse(RejectSandbox, "%s", f.Error()), nil
	case errors.As(err, &f):
		return refuse(RejectMissingDependency, "resolving the build's %s dependencies from the configured repositories: %s", f.Ecosystem, f.Message), nil
	case err != nil:
		return nil, err
	}
	if len(r.Ecosystems) > 0 {
		prov.Dependencies = r
	}
	cf.Dependencies = r.Digest
	if r.Digest != "" {
		b.logf("dependencies %v: %s (%d files, %s)", r.Ecosystems, r.Digest, r.Files, hitOrMiss(r))
	}
	return nil, nil
}

// resolved resolves task's dependencies (withDependencies); false when
// the item was rejected for them (what prefixes the detail) or err is set.
func (b *Builder) resolved(ctx context.Context, name, what string, task *topics.Task, prov *Provenance, res *Result) (bool, error) {
	v, err := b.withDependencies(ctx, task, prov, res)
	if err != nil {
		return false, err
	}
	if !v.ok() {
		res.reject(name, v.reason, what+v.detail)
		return false, nil
	}
	return true, nil
}

func hitOrMiss(r *deps.Resolution) string {
	if r.Hit {
		return "cache hit"
	}
	return "resolved in " + r.Duration.Round(1e6).String()
}
