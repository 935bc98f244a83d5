package compilefix

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"golang.org/x/sync/singleflight"

	"github.com/murphy-rl/murphy/compilefix/patch"
	"github.com/murphy-rl/murphy/compilefix/workspace"
	"github.com/murphy-rl/murphy/sandbox"
	"github.com/murphy-rl/murphy/topics"
)

// Artifact equivalence (README "Artifact equivalence"): two repairs of a
// compile-fix task are the same program when the snapshot patched with
// each compiles to the same normalised artifacts. Equal artifacts are a
// sound verdict (what the normalisation drops is positions, debug
// information and file names, never code); different artifacts say
// nothing (another fix may be valid too).

// EquivVerdict is the outcome of comparing two repairs.
type EquivVerdict int

const (
	// EquivUnknown: the repairs could not be compared (a patch does not
	// apply, a build fails, no artifact covers a changed source, the
	// language has no artifact recipe).
	EquivUnknown EquivVerdict = iota
	// EquivSame: identical normalised artifacts (and identical non-source
	// files).
	EquivSame
	// EquivDifferent: the artifacts (or a non-source file) differ.
	EquivDifferent
)

func (v EquivVerdict) String() string {
	switch v {
	case EquivSame:
		return "same"
	case EquivDifferent:
		return "different"
	}
	return "unknown"
}

// EquivResult is the comparison of a candidate repair with the reference.
type EquivResult struct {
	Verdict EquivVerdict
	// Language is the artifact recipe used (c, go, java, python; "" when
	// none applies).
	Language string
	// Reason says why the verdict is what it is, for logs and murphy grade.
	Reason string
	// Artifacts is the number of normalised artifacts compared.
	Artifacts int
}

// Equivalence compares compile-fix repairs by their compiled artifacts.
// Its builds run in the build sandbox like execute's (the patched trees are
// untrusted); what they leave in /tmp/equiv comes back read-only and is
// parsed, size-bounded, by the normalisers (ELF, Java class files, Go
// assembly listings, Python code-object digests). Nothing from a
// candidate's build is executed or seeds another build. Safe for
// concurrent use.
type Equivalence struct {
	Builder Builder
	Cache   *workspace.Cache
	// Dir holds the per-job overlays and exports ("" = os.TempDir()).
	Dir string
	// Patch bounds the diffs (zero fields: the patch defaults).
	Patch patch.Options

	mu     sync.Mutex
	refs   map[string]*artifactSet
	flight singleflight.Group
}

// artifactSet is one patched tree's normalised artifacts: path -> digest.
type artifactSet struct {
	digests map[string]string
	// unknown says why the tree yields no comparable artifacts ("" when it
	// does).
	unknown string
}

// maxRefArtifacts bounds the reference artifact sets kept.
const maxRefArtifacts = 1024

// Compare compares candidate (a unified diff) with the task's reference
// patch. The error is non-nil only when ctx ends, the builder is closed,
// the store cannot be read or the sandbox failed: the judge's own failure.
func (e *Equivalence) Compare(ctx context.Context, task *topics.Task, candidate string) (EquivResult, error) {
	cf := task.CompileFix
	if cf == nil || len(cf.Build) == 0 || strings.TrimSpace(task.ReferencePatch) == "" {
		return EquivResult{Reason: "not a compile-fix task with a reference patch"}, nil
	}
	rec := recipeFor(task)
	if rec == nil {
		return EquivResult{Reason: fmt.Sprintf("no artifact recipe for language %q", task.Language)}, nil
	}
	res := EquivResult{Language: rec.lang}
	tree, err := e.Cache.Get(ctx, cf.Workspace)
	if err != nil {
		return res, fmt.Errorf("compilefix: equivalence: workspace %s: %w", cf.Workspace, err)
	}
	defer tree.Release()
	opts := e.Patch
	if opts.Protected == nil {
		opts.Protected = patch.DefaultProtected(cf.Build)
	}
	ref, err := patch.Apply(tree.Dir(), task.ReferencePatch, opts)
	if err != nil {
		res.Reason = "the reference patch does not apply: " + err.Error()
		return res, nil
	}
	cand, err := patch.Apply(tree.Dir(), candidate, opts)
	if err != nil {
		res.Reason = "the candidate patch does not apply: " + err.Error()
		return res, nil
	}
	sources, differs, err := compareChanged(tree.Dir(), ref, cand, rec)
	switch {
	case err != nil:
		res.Reason = err.Error()
		return res, nil
	case differs != "":
		res.Verdict, res.Reason = EquivDifferent, differs
		return res, nil
	case len(sources) == 0:
		res.Verdict, res.Reason = EquivSame, "both patches leave every file the same"
		return res, nil
	}
	key := tree.Digest() + "\x00" + cf.Dependencies + "\x00" + hashHex(task.ReferencePatch) + "\x00" + rec.lang + "\x00" + strings.Join(cf.Build, "\x00") + "\x00" + strings.Join(sources, "\x00")
	refSet, err := e.reference(ctx, task, tree, ref, sources, rec, key)
	if err != nil {
		return res, err
	}
	if refSet.unknown != "" {
		res.Reason = "reference: " + refSet.unknown
		return res, nil
	}
	candSet, err := e.artifacts(ctx, task, tree, cand, sources, rec)
	if err != nil {
		return res, err
	}
	if candSet.unknown != "" {
		res.Reason = "candidate: " + candSet.unknown
		return res, nil
	}
	res.Artifacts = len(refSet.digests)
	if diff := diffDigests(refSet.digests, candSet.digests); diff != "" {
		res.Verdict, res.Reason = EquivDifferent, diff
		return res, nil
	}
	res.Verdict = EquivSame
	res.Reason = fmt.Sprintf("%d normalised %s artifact(s) identical", len(refSet.digests), rec.lang)
	return res, nil
}

// reference returns the reference tree's artifacts, built once per key.
func (e *Equivalence) reference(ctx context.Context, task *topics.Task, tree *workspace.Tree, ref *patch.Result, sources []string, rec *recipe, key string) (*artifactSet, error) {
	e.mu.Lock()
	s := e.refs[key]
	e.mu.Unlock()
	if s != nil {
		return s, nil
	}
	v, err, _ := e.flight.Do(key, func() (any, error) {
		s, err := e.artifacts(ctx, task, tree, ref, sources, rec)
		if err != nil {
			return nil, err
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.refs == nil || len(e.refs) >= maxRefArtifacts {
			e.refs = map[string]*artifactSet{}
		}
		e.refs[key] = s
		return s, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*artifactSet), nil
}

// compareChanged compares the files either patch changes. Files of the
// recipe's language (sources) are returned for the artifact comparison;
// any other file must end up byte for byte the same in both trees, else
// differs names it.
func compareChanged(root string, ref, cand *patch.Result, rec *recipe) (sources []string, differs string, err error) {
	refFiles, candFiles := changeMap(ref), changeMap(cand)
	for _, p := range unionKeys(refFiles, candFiles) {
		a, aok, err := contentAfter(root, p, refFiles)
		if err != nil {
			return nil, "", err
		}
		b, bok, err := contentAfter(root, p, candFiles)
		if err != nil {
			return nil, "", err
		}
		if aok == bok && bytes.Equal(a, b) {
			continue // the same content whatever the patches did
		}
		if !rec.source(p) {
			return nil, fmt.Sprintf("%s differs (not a %s source: compared byte for byte)", p, rec.lang), nil
		}
		sources = append(sources, p)
	}
	return sources, "", nil
}

// unionKeys returns the keys of a and b, sorted.
func unionKeys[V any](a, b map[string]V) []string {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	return sortedKeys(keys)
}

func changeMap(r *patch.Result) map[string]patch.Change {
	m := make(map[string]patch.Change, len(r.Files))
	for _, c := range r.Files {
		m[c.Path] = c
	}
	return m
}

// contentAfter is p's content in the tree after a patch: its change, else
// the snapshot's file; ok is false for a file that does not exist.
func contentAfter(root, p string, changes map[string]patch.Change) ([]byte, bool, error) {
	if c, ok := changes[p]; ok {
		return c.New, !c.Deleted, nil
	}
	b, err := patch.ReadFile(root, p, patch.DefaultMaxFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	return b, err == nil, err
}

// artifacts builds one patched tree with the recipe and normalises what it
// leaves.
func (e *Equivalence) artifacts(ctx context.Context, task *topics.Task, tree *workspace.Tree, applied *patch.Result, sources []string, rec *recipe) (*artifactSet, error) {
	dir := e.Dir
	if dir == "" {
		dir = os.TempDir()
	}
	work, err := os.MkdirTemp(dir, "murphy-equiv-")
	if err != nil {
		return nil, fmt.Errorf("compilefix: equivalence: %w", err)
	}
	defer os.RemoveAll(work)
	overlay := filepath.Join(work, "overlay")
	if err := writeOverlay(applied, overlay); err != nil {
		return nil, err
	}
	cf := task.CompileFix
	ev := &Evaluator{Builder: e.Builder, Cache: e.Cache, Dir: dir}
	deps, releaseDeps, err := ev.dependencies(ctx, cf)
	if err != nil {
		return nil, err
	}
	defer releaseDeps()
	seedKey := seedKeyOf(cf)
	if rec.warm && e.Builder.Seed(seedKey) == "" {
		// A warm build cache, as execute keeps one: the snapshot with the
		// reference patch is task data, trusted.
		if err := ev.warm(ctx, task, tree, deps, seedKey); err != nil {
			return nil, err
		}
	}
	job := &sandbox.BuildJob{
		Tree: tree.Dir(), Overlay: overlay, Deleted: applied.Deleted(), Commands: rec.commands(cf, sources), Deps: deps,
		Limits: compileLimits(task), SeedKey: seedKey, Keep: []string{equivDir}, Export: filepath.Join(work, "export"),
	}
	res, err := e.Builder.Build(ctx, job)
	if err != nil {
		return nil, err
	}
	if res.SandboxError != "" {
		return nil, fmt.Errorf("compilefix: equivalence build: %s", res.SandboxError)
	}
	for i := range res.Commands {
		if c := &res.Commands[i]; !c.OK() {
			return &artifactSet{unknown: fmt.Sprintf("artifact build command %d (%s) failed (exit %d): %s", i+1, c.Argv[0], c.ExitCode,
				topics.Truncate(string(c.Output), 512))}, nil
		}
	}
	last := res.Commands[len(res.Commands)-1].Output
	digests, why, err := rec.normalise(filepath.Join(job.Export, equivDir), last, sources)
	if err != nil {
		return nil, err
	}
	if why != "" {
		return &artifactSet{unknown: why}, nil
	}
	return &artifactSet{digests: digests}, nil
}

// diffDigests names the first artifact that differs ("" when none).
func diffDigests(a, b map[string]string) string {
	for _, k := range unionKeys(a, b) {
		x, xok := a[k]
		y, yok := b[k]
		switch {
		case !xok:
			return "artifact " + k + " only in the candidate's build"
		case !yok:
			return "artifact " + k + " only in the reference's build"
		case x != y:
			return "artifact " + k + " differs"
		}
	}
	return ""
}

func hashHex(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// equivDir is the /tmp directory a recipe's commands leave artifacts in.
const equivDir = "equiv"

// Bounds on what an artifact build leaves: files read and bytes per file.
const (
	maxArtifactFiles = 4096
	maxArtifactBytes = 64 << 20
)

// readArtifacts walks an export directory and returns every regular file
// whose name keep accepts, by its path relative to dir.
func readArtifacts(dir string, keep func(rel string, head []byte) bool) (map[string][]byte, error) {
	out := map[string][]byte{}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if fi.Size() > maxArtifactBytes {
			return fmt.Errorf("artifact %s: %d bytes, over %d", rel, fi.Size(), maxArtifactBytes)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !keep(rel, b[:min(len(b), 16)]) {
			return nil
		}
		if len(out) >= maxArtifactFiles {
			return fmt.Errorf("more than %d artifacts", maxArtifactFiles)
		}
		out[rel] = b
		return nil
	})
	return out, err
}

// stem is a path's base name without its extension.
func stem(p string) string {
	b := path.Base(p)
	return strings.TrimSuffix(b, path.Ext(b))
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// OpenEquivalence opens what cfg names for comparing repairs: the
// workspace store, a snapshot cache and a build sandbox (shared, in one
// process, with execute's and the episodes' when their configurations are
// equal: sandbox.OpenBuilder). close releases them.
func OpenEquivalence(ctx context.Context, cfg Config) (eq *Equivalence, close func(), err error) {
	ev, close, err := Open(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	return &Equivalence{Builder: ev.Builder, Cache: ev.Cache, Dir: ev.Dir, Patch: ev.Patch}, close, nil
}
