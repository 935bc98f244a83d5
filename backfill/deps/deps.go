// Package deps resolves what a snapshot's build needs (parent POMs,
// plugins and dependencies for Maven and Gradle, modules for Go,
// distributions for Python) with the ecosystem's own tools, inside the
// build sandbox, reaching only the configured repositories through a
// mirror the host serves into the sandbox; and stores the result as a
// content-addressed, read-only dependency cache in the workspace store,
// which the task names (topics.CompileFix.Dependencies) and execute mounts
// for its offline builds. ../BACKFILL.md, "Dependencies", has the design
// and its security boundary.
package deps

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/murphy-rl/murphy/compilefix/workspace"
	"github.com/murphy-rl/murphy/sandbox"
)

// Config configures a Resolver.
type Config struct {
	// Repositories are the only places resolution fetches from.
	Repositories Repositories
	// Dir is a host directory kept across runs: the mirror's copies of
	// immutable files and the index of resolutions by key ("" = a
	// temporary one, for this Resolver's life).
	Dir string
	// Timeout is the CPU time of one command of a resolution job (its
	// wall time is three times that and a minute: downloads wait).
	Timeout time.Duration
	// TmpMB is the size of a resolution job's /tmp, which holds what it
	// resolves.
	TmpMB int
	// Off: no resolution; builds run with what the builder has.
	Off bool
}

// DefaultConfig resolves from the default repositories, ten minutes of
// CPU time per command, 1 GiB of dependencies at most.
func DefaultConfig() Config {
	return Config{Repositories: DefaultRepositories(), Timeout: 10 * time.Minute, TmpMB: 1024}
}

// Validate checks the configuration.
func (c Config) Validate() error {
	if c.Off {
		return nil
	}
	if c.Timeout <= 0 || c.TmpMB < 16 {
		return errors.New("deps: timeout must be positive and tmp_mb >= 16")
	}
	return c.Repositories.Validate()
}

// Builder runs build jobs (a *sandbox.Builder).
type Builder interface {
	Build(ctx context.Context, job *sandbox.BuildJob) (*sandbox.BuildResult, error)
}

// Resolver resolves snapshots' dependencies; safe for concurrent use.
type Resolver struct {
	cfg     Config
	builder Builder
	store   *workspace.Store
	tmp     string
	own     string // a temporary Dir, removed by Close

	mu     sync.Mutex
	index  map[string]string // key -> digest ("" = nothing to keep)
	flight singleflight.Group
}

// New returns a Resolver that runs its jobs on b and stores caches in
// store; tmp holds a job's export while it is packed, and the mirror's
// files for this Resolver's life when cfg.Dir is "".
func New(cfg Config, b Builder, store *workspace.Store, tmp string) (*Resolver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &Resolver{cfg: cfg, builder: b, store: store, tmp: tmp, index: map[string]string{}}
	if r.cfg.Dir == "" {
		d, err := os.MkdirTemp(tmp, "murphy-deps-cache-")
		if err != nil {
			return nil, fmt.Errorf("deps: %w", err)
		}
		r.cfg.Dir, r.own = d, d
	}
	if err := os.MkdirAll(filepath.Join(r.cfg.Dir, "index"), 0o755); err != nil {
		r.Close()
		return nil, fmt.Errorf("deps: %w", err)
	}
	return r, nil
}

// Close removes what the Resolver kept for itself alone (a temporary
// mirror cache), never a configured Dir.
func (r *Resolver) Close() {
	if r.own != "" {
		_ = os.RemoveAll(r.own)
	}
}

// Request is one snapshot to resolve.
type Request struct {
	// Tree is the snapshot on the host (read-only to the job).
	Tree string
	// Overlay and Deleted are the reference patch's changes, when there is
	// one: the job builds the repaired tree, whose build reaches past the
	// compile error (tests, packaging) and so needs all that its
	// candidates' builds will.
	Overlay string
	Deleted []string
	// Build and Tests are the task's commands.
	Build, Tests []string
	// DiskMB is the task's workspace size (0 = the builder's).
	DiskMB int
}

// Resolution is what a resolution found (a task's provenance).
type Resolution struct {
	Ecosystems []string `json:"ecosystems"`
	Key        string   `json:"key,omitempty"`
	// Digest names the dependency cache in the workspace store ("" when
	// the build needs nothing resolved).
	Digest string `json:"digest,omitempty"`
	// Hit: an earlier resolution with the same key was reused.
	Hit          bool          `json:"hit"`
	Files        int           `json:"files,omitempty"`
	Bytes        int64         `json:"bytes,omitempty"`
	Duration     time.Duration `json:"duration_ns"`
	Mirror       *MirrorStats  `json:"mirror,omitempty"`
	Repositories string        `json:"repositories,omitempty"`
	// Failed is why the resolution failed ("" when it did not).
	Failed string `json:"failed,omitempty"`
}

// Failure is a resolution the ecosystem's tool refused, in its own words
// (a task's missing_dependency), or one the sandbox could not run.
type Failure struct {
	Ecosystem string
	Message   string
	Sandbox   bool
}

func (f *Failure) Error() string {
	if f.Sandbox {
		return "the sandbox could not run the resolution: " + f.Message
	}
	return fmt.Sprintf("%s dependencies could not be resolved: %s", f.Ecosystem, f.Message)
}

// Resolve resolves req's dependencies, once per key. A *Failure is a
// verdict on the item (the Resolution says what was tried); other errors
// are the store's or ctx's.
func (r *Resolver) Resolve(ctx context.Context, req Request) (*Resolution, error) {
	start := time.Now()
	if r.cfg.Off {
		return &Resolution{}, nil
	}
	ecos, ms, err := Detect(req.Tree, req.Build, req.Tests)
	if err != nil {
		return nil, fmt.Errorf("deps: %w", err)
	}
	res := &Resolution{Ecosystems: ecos, Repositories: r.cfg.Repositories.String()}
	if len(ecos) == 0 {
		return res, nil
	}
	key, err := Key(req.Tree, ecos, ms, r.cfg.Repositories, req.Build, req.Tests)
	if err != nil {
		return nil, fmt.Errorf("deps: %w", err)
	}
	res.Key = key
	if digest, ok := r.lookup(ctx, key); ok {
		res.Digest, res.Hit, res.Duration = digest, true, time.Since(start)
		return res, nil
	}
	v, err, shared := r.flight.Do(key, func() (any, error) {
		out, err := r.run(ctx, req, ecos, ms)
		if err != nil {
			return nil, err
		}
		r.remember(key, out.Digest)
		return out, nil
	})
	if err != nil {
		res.Duration = time.Since(start)
		res.Failed = err.Error()
		return res, err
	}
	out := *v.(*Resolution)
	out.Ecosystems, out.Key, out.Repositories, out.Hit = ecos, key, res.Repositories, shared
	out.Duration = time.Since(start)
	return &out, nil
}

// lookup returns the digest an earlier resolution of key stored, when the
// store still holds it.
func (r *Resolver) lookup(ctx context.Context, key string) (string, bool) {
	r.mu.Lock()
	d, ok := r.index[key]
	r.mu.Unlock()
	if !ok && r.cfg.Dir != "" {
		b, err := os.ReadFile(filepath.Join(r.cfg.Dir, "index", key))
		if err != nil {
			return "", false
		}
		d, ok = strings.TrimSpace(string(b)), true
		if d == "none" {
			d = ""
		}
	}
	if !ok {
		return "", false
	}
	if d != "" {
		if has, err := r.store.Has(ctx, d); err != nil || !has {
			return "", false
		}
	}
	return d, true
}

func (r *Resolver) remember(key, digest string) {
	r.mu.Lock()
	r.index[key] = digest
	r.mu.Unlock()
	if r.cfg.Dir != "" {
		v := digest
		if v == "" {
			v = "none"
		}
		p := filepath.Join(r.cfg.Dir, "index", key)
		if tmp, err := os.CreateTemp(filepath.Dir(p), ".part-"); err == nil {
			_, werr := tmp.WriteString(v + "\n")
			if cerr := tmp.Close(); werr != nil || cerr != nil || os.Rename(tmp.Name(), p) != nil {
				_ = os.Remove(tmp.Name())
			}
		}
	}
}

// run runs the resolution job and stores what it kept.
func (r *Resolver) run(ctx context.Context, req Request, ecos []string, ms map[string][]string) (*Resolution, error) {
	j := plan(ecos, ms, req.Build, req.Tests)
	work, err := os.MkdirTemp(r.tmp, "murphy-deps-")
	if err != nil {
		return nil, fmt.Errorf("deps: %w", err)
	}
	defer removeAll(work)
	export := filepath.Join(work, "export")
	mdir := ""
	if r.cfg.Dir != "" {
		mdir = filepath.Join(r.cfg.Dir, "mirror")
	}
	m := newMirror(r.cfg.Repositories, mdir)
	res, err := r.builder.Build(ctx, &sandbox.BuildJob{
		Tree: req.Tree, Overlay: req.Overlay, Deleted: req.Deleted, Commands: j.commands, Env: j.env, Files: j.files,
		Network: m, KeepGoing: true, Keep: []string{jobDeps, jobGradleHome}, Export: export,
		Limits: sandbox.BuildLimits{CPU: r.cfg.Timeout, Wall: 3*r.cfg.Timeout + time.Minute, TmpMB: r.cfg.TmpMB, DiskMB: req.DiskMB},
	})
	if err != nil {
		return nil, err
	}
	stats := m.Stats()
	if res.SandboxError != "" {
		return nil, &Failure{Sandbox: true, Message: res.SandboxError}
	}
	if f := failed(res, j, ecos); f != nil {
		return nil, f
	}
	tree, err := assemble(export, work)
	if err != nil {
		return nil, fmt.Errorf("deps: %w", err)
	}
	out := &Resolution{Mirror: &stats}
	if tree == "" {
		return out, nil
	}
	if out.Files, out.Bytes, err = size(tree); err != nil {
		return nil, fmt.Errorf("deps: %w", err)
	}
	digest, err := r.store.PutDir(ctx, tree)
	if err != nil {
		return nil, fmt.Errorf("deps: store: %w", err)
	}
	out.Digest = digest
	return out, nil
}

// failed is the job's failed resolution: a resolver command that failed,
// or any command whose output says a dependency could not be found or
// fetched; nil when none did.
func failed(res *sandbox.BuildResult, j job, ecos []string) *Failure {
	for i, c := range res.Commands {
		out := string(c.Output)
		if c.TimedOut {
			return &Failure{Ecosystem: strings.Join(ecos, "+"), Message: fmt.Sprintf("%s did not finish in its limit (%s of CPU time)", strings.Join(c.Argv, " "), res.Limits.CPU)}
		}
		if msg, ok := unresolved(out); ok && !c.OK() {
			return &Failure{Ecosystem: ecosystemOf(c.Argv, ecos), Message: msg}
		}
		if j.resolvers[i] && c.Ran && !c.OK() {
			return &Failure{Ecosystem: ecosystemOf(c.Argv, ecos), Message: toolMessage(out)}
		}
	}
	return nil
}

// ecosystemOf names the ecosystem of a command, else all of the job's.
func ecosystemOf(argv []string, ecos []string) string {
	if len(argv) > 1 && strings.HasSuffix(argv[1], "resolve_python.py") {
		return Python
	}
	for _, e := range ecos {
		if uses(e, argv) {
			return e
		}
	}
	return strings.Join(ecos, "+")
}

// assemble lays what the job kept out as a dependency cache (sandbox's
// layout: maven/, go/, python/, gradle/modules-2), without the files
// that record where or when something was fetched; "" when nothing was
// kept.
func assemble(export, work string) (string, error) {
	tree := filepath.Join(export, jobDeps)
	if err := os.MkdirAll(tree, 0o755); err != nil {
		return "", err
	}
	if err := os.Chmod(tree, 0o755); err != nil {
		return "", err
	}
	modules := filepath.Join(export, jobGradleHome, "caches", "modules-2")
	if fi, err := os.Stat(modules); err == nil && fi.IsDir() {
		g := filepath.Join(tree, sandbox.DepsGradle)
		if err := os.MkdirAll(g, 0o755); err != nil {
			return "", err
		}
		if err := os.Rename(modules, filepath.Join(g, "modules-2")); err != nil {
			return "", err
		}
	}
	n := 0
	err := filepath.WalkDir(tree, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "__pycache__" {
				if err := os.RemoveAll(p); err != nil {
					return err
				}
				return filepath.SkipDir
			}
			return os.Chmod(p, 0o755)
		}
		if transient(d.Name()) {
			return os.Remove(p)
		}
		n++
		return nil
	})
	if err != nil {
		return "", err
	}
	if n <= 0 {
		return "", nil
	}
	return tree, nil
}

// transient are files that record a download's time or origin, or a
// lock: left out of the cache, which is then the same for the same
// artifacts, and which an offline build reads as installed artifacts,
// available to every repository it names.
func transient(name string) bool {
	switch {
	case name == "_remote.repositories", name == "resolver-status.properties", name == "gc.properties",
		strings.HasSuffix(name, ".lastUpdated"), strings.HasSuffix(name, ".lock"), strings.HasSuffix(name, ".pyc"),
		strings.Contains(name, ".part"), strings.HasPrefix(name, ".tmp"):
		return true
	}
	return false
}

// size counts the files and bytes of a tree.
func size(dir string) (int, int64, error) {
	n, b := 0, int64(0)
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			n++
			b += fi.Size()
		}
		return nil
	})
	return n, b, err
}

// removeAll removes a job's export, sealed read-only by the builder.
func removeAll(dir string) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
	_ = os.RemoveAll(dir)
}
