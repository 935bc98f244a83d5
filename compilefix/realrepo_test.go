package compilefix

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/murphy-rl/murphy/backfill/inject"
	"github.com/murphy-rl/murphy/compilefix/diag"
	"github.com/murphy-rl/murphy/compilefix/workspace"
	"github.com/murphy-rl/murphy/sandbox"
	"github.com/murphy-rl/murphy/topics"
)

// realReposDir holds the reference repositories (SOURCES.md), used by
// path and never copied into the repository.
const realReposDir = "../../shared/data/repos"

// realRepo is one reference repository and the errors planted in it.
type realRepo struct {
	name, lang string
	// open extracts the repository into dir and returns its tree.
	open  func(t *testing.T, dir string) string
	build []string
	// env is added to the direct local build (the sandbox sets its own).
	env []string
	// noop is the file a no-op patch (a comment) touches.
	noop, comment string
	timeoutMS     int
	mutations     []realMutation
}

type realMutation struct{ file, op string }

func realRepos() []realRepo {
	return []realRepo{
		{
			name: "cJSON", lang: "c", open: untar("cJSON.tar.gz", "cJSON"), build: []string{"make"},
			noop: "test.c", comment: "/* murphy: no-op */\n",
			mutations: []realMutation{
				{"cJSON.c", inject.OpMisspell},
				{"cJSON.c", inject.OpTypeMismatch},
				{"cJSON_Utils.c", inject.OpChangeArity},
				{"cJSON.c", inject.OpDeleteSemicolon},
				{"cJSON_Utils.c", inject.OpMergeConflict},
			},
		},
		{
			name: "google-uuid", lang: "go", open: gitClone("google-uuid.bundle"), build: []string{"go", "build", "./..."},
			env:  []string{"GOFLAGS=-buildvcs=false", "GOPROXY=off", "GOTOOLCHAIN=local", "GOWORK=off"},
			noop: "doc.go", comment: "// murphy: no-op\n", timeoutMS: 120_000,
			mutations: []realMutation{
				{"uuid.go", inject.OpDropImport},
				{"time.go", inject.OpRemoveFunction},
				{"version7.go", inject.OpDeleteBrace},
				{"time.go", inject.OpTypeMismatch},
			},
		},
		{
			name: "more-itertools", lang: "python", open: untar("more-itertools.tar.gz", "more-itertools"),
			build: []string{"python3", "-m", "compileall", "-q", "more_itertools"},
			noop:  "more_itertools/__init__.py", comment: "# murphy: no-op\n",
			mutations: []realMutation{
				{"more_itertools/more.py", inject.OpDeleteColon},
				{"more_itertools/recipes.py", inject.OpDeleteBracket},
				{"more_itertools/more.py", inject.OpMergeConflict},
			},
		},
	}
}

// TestCompileFixRealRepos builds real repositories in the build sandbox
// through CompileFix: each unmodified tree builds; for errors planted with
// package inject, the unpatched build (the baseline) reports the error at
// the planted file and line, a patch that does not fix it is a
// compile_error whose feedback names that place, and the mutation's
// reference patch passes.
func TestCompileFixRealRepos(t *testing.T) {
	if testing.Short() {
		t.Skip("builds real repositories")
	}
	if os.Geteuid() != 0 {
		t.Skip("the build sandbox needs root")
	}
	if _, err := os.Stat("/usr/bin/bwrap"); err != nil {
		t.Skip("bubblewrap is not installed")
	}
	if _, err := os.Stat(realReposDir); err != nil {
		t.Skipf("the reference repositories are not at %s", realReposDir)
	}
	ctx := context.Background()
	storeDir := t.TempDir()
	store, err := workspace.OpenStore(ctx, storeDir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	cfg := DefaultConfig()
	cfg.Store = storeDir
	cfg.Builder.Workers = 2
	// Uids of their own: builders with other lock directories (tests of
	// other packages running at the same time) lease 63000 on; a job's end
	// kills every process of its uid.
	cfg.Builder.UIDBase, cfg.Builder.UIDCount = 66000, 100
	cf, closeCF, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeCF)
	for _, repo := range realRepos() {
		t.Run(repo.name, func(t *testing.T) {
			start := time.Now()
			tree := repo.open(t, t.TempDir())
			rr := &realRun{t: t, cf: cf, store: store, repo: repo, tree: tree}
			rr.clean()
			for _, mu := range repo.mutations {
				t.Run(mu.op, func(t *testing.T) { rr.t = t; rr.mutation(mu) })
			}
			t.Logf("%s: %d candidates evaluated (each after its snapshot's baseline), %s", repo.name, rr.builds, time.Since(start).Round(time.Millisecond))
		})
	}
}

type realRun struct {
	t      *testing.T
	cf     *Evaluator
	store  *workspace.Store
	repo   realRepo
	tree   string
	builds int
}

// snapshot packs dir into the store and returns its digest.
func (r *realRun) snapshot(dir string) string {
	r.t.Helper()
	d, err := r.store.PutDir(context.Background(), dir)
	if err != nil {
		r.t.Fatal(err)
	}
	return d
}

func (r *realRun) task(id, digest, ref string, targets []topics.Diagnostic) *topics.Task {
	task := &topics.Task{
		SchemaVersion: topics.SchemaVersion, TaskID: "realrepo/" + r.repo.name + "/" + id, Kind: topics.KindCompileFix,
		Prompt: "The build fails; repair it.", Language: r.repo.lang, ReferencePatch: ref, TimeoutMS: r.repo.timeoutMS,
		CompileFix: &topics.CompileFix{Workspace: digest, Build: r.repo.build, Targets: targets},
	}
	if err := task.Validate(); err != nil {
		r.t.Fatal(err)
	}
	return task
}

func (r *realRun) eval(task *topics.Task, diff string) Outcome {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	out, err := r.cf.Evaluate(ctx, task, diff, topics.DefaultFeedbackBytes)
	if err != nil {
		r.t.Fatal(err)
	}
	r.builds++
	return out
}

// noopPatch adds a comment at the top of the repository's no-op file.
func (r *realRun) noopPatch() string {
	r.t.Helper()
	old, err := os.ReadFile(filepath.Join(r.tree, filepath.FromSlash(r.repo.noop)))
	if err != nil {
		r.t.Fatal(err)
	}
	p := r.repo.noop
	u, err := udiff.ToUnified("a/"+p, "b/"+p, string(old), udiff.Lines(string(old), r.repo.comment+string(old)), 1)
	if err != nil || u == "" {
		r.t.Fatalf("no-op patch: %v", err)
	}
	return "diff --git a/" + p + " b/" + p + "\n" + u
}

// baseline returns the CompileFix baseline of a task's snapshot.
func (r *realRun) baseline(task *topics.Task) *baseline {
	r.t.Helper()
	ctx := context.Background()
	tree, err := r.cf.Cache.Get(ctx, task.CompileFix.Workspace)
	if err != nil {
		r.t.Fatal(err)
	}
	defer tree.Release()
	b, err := r.cf.baseline(ctx, task, tree, "")
	if err != nil || b.note != "" {
		r.t.Fatalf("baseline: %v %s", err, b.note)
	}
	return b
}

// clean checks that the unmodified tree builds in the sandbox.
func (r *realRun) clean() {
	t := r.t
	task := r.task("clean", r.snapshot(r.tree), "", nil)
	start := time.Now()
	out := r.eval(task, r.noopPatch())
	if out.Status != topics.StatusPassed {
		t.Fatalf("the unmodified %s does not build: %s\n%s", r.repo.name, out.Status, out.Feedback)
	}
	if b := r.baseline(task); !b.ok || len(diag.Errors(b.diags)) != 0 {
		// Not fatal: the mutations are still checked. Show why, from the
		// same job run again (warm, from the toolchain's kept cache).
		tree, err := r.cf.Cache.Get(context.Background(), task.CompileFix.Workspace)
		if err != nil {
			t.Fatal(err)
		}
		res, err := r.cf.Builder.Build(context.Background(), &sandbox.BuildJob{
			Tree: tree.Dir(), Commands: [][]string{r.repo.build}, Limits: compileLimits(task), SeedKey: toolOf(task.CompileFix)})
		tree.Release()
		if err != nil {
			t.Fatal(err)
		}
		c := res.Commands[0]
		hint := ""
		if strings.Contains(string(c.Output), "Permission denied") {
			hint = " (the build cannot write into its workspace: /work keeps the read-only directory modes of the cached snapshot" +
				" when no patch's overlay is copied over it)"
		}
		t.Errorf("the unpatched clean tree does not build in the sandbox%s (baseline ok %v, %d diagnostics); "+
			"run again: ok %v exit %d signal %q timed out %v, %s CPU, %s wall, sandbox error %q:\n%s",
			hint, b.ok, len(b.diags), c.OK(), c.ExitCode, c.Signal, c.TimedOut, c.CPU, c.Wall, res.SandboxError, topics.Truncate(string(c.Output), 3000))
	}
	t.Logf("clean tree builds (baseline and a comment-only patch: %s)", time.Since(start).Round(time.Millisecond))
}

// localBuild runs the build directly in dir and returns its error
// diagnostics ("" output and nil when it succeeds).
func (r *realRun) localBuild(dir string) (bool, []topics.Diagnostic, string) {
	argv := append([]string(nil), r.repo.build...)
	if argv[0] == "python3" {
		argv[0] = "/usr/bin/python3" // the sandbox's interpreter, not a shim on PATH
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), r.repo.env...)
	o, err := cmd.CombinedOutput()
	if err == nil {
		return true, nil, string(o)
	}
	return false, diag.Errors(diag.Parse(filepath.Base(r.repo.build[0]), o, dir)), string(o)
}

// near returns the diagnostics at m's file within three lines of an
// expected line (any line of the file when none is expected).
func near(ds []topics.Diagnostic, m *inject.Mutation) []topics.Diagnostic {
	var out []topics.Diagnostic
	for _, d := range ds {
		if d.File != m.File || d.Line < 1 {
			continue
		}
		ok := len(m.Expect) == 0
		for _, l := range m.Expect {
			ok = ok || (d.Line >= l-3 && d.Line <= l+3)
		}
		if ok {
			out = append(out, d)
		}
	}
	return out
}

// mutation plants one error: the first of seeds 1..6 whose mutated tree
// fails the direct build with an error at the planted place.
func (r *realRun) mutation(mu realMutation) {
	t := r.t
	src, err := os.ReadFile(filepath.Join(r.tree, filepath.FromSlash(mu.file)))
	if err != nil {
		t.Fatal(err)
	}
	var (
		m       *inject.Mutation
		digest  string
		targets []topics.Diagnostic
		at      []topics.Diagnostic
	)
	for seed := int64(1); seed <= 6 && m == nil; seed++ {
		cand, err := inject.Inject(r.repo.lang, mu.op, mu.file, src, seed)
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(t.TempDir(), "tree")
		if err := os.CopyFS(dir, os.DirFS(r.tree)); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(mu.file)), cand.New, 0o644); err != nil {
			t.Fatal(err)
		}
		d := r.snapshot(dir) // before the direct build writes into the tree
		ok, ds, out := r.localBuild(dir)
		if ok {
			t.Logf("seed %d builds anyway (%s)", seed, cand.Description)
			continue
		}
		if n := near(ds, cand); len(n) > 0 {
			m, digest, targets, at = cand, d, ds, n
			t.Logf("seed %d: %s; the build reports %s", seed, cand.Description, diag.Header(n[0]))
		} else {
			t.Logf("seed %d fails elsewhere than %s:%v (%s):\n%s", seed, cand.File, cand.Expect, cand.Description, topics.Truncate(out, 2000))
		}
	}
	if m == nil {
		t.Fatalf("no seed of %s in %s gives a build error at the planted place", mu.op, mu.file)
	}
	task := r.task(mu.op, digest, m.Patch(), targets)

	// The baseline, the unpatched build in the sandbox, reports it.
	base := r.baseline(task)
	if base.ok {
		t.Fatalf("the mutated tree builds in the sandbox")
	}
	if len(near(diag.Errors(base.diags), m)) == 0 {
		t.Fatalf("the baseline does not report %s near lines %v: %v", m.File, m.Expect, base.diags)
	}
	for _, d := range at {
		found := false
		for _, b := range base.diags {
			found = found || diag.Match(d, b)
		}
		if !found {
			t.Errorf("the direct build's %s is not in the baseline %v", diag.Header(d), base.diags)
		}
	}

	// A patch elsewhere leaves the error, and the feedback says where.
	out := r.eval(task, r.noopPatch())
	if out.Status != topics.StatusCompileError || out.TargetsFixed != 0 || out.TargetsTotal != len(targets) {
		t.Fatalf("no-op patch: %s, %d/%d targets fixed:\n%s", out.Status, out.TargetsFixed, out.TargetsTotal, out.Feedback)
	}
	named := false
	for _, d := range near(out.Diagnostics, m) {
		named = named || strings.Contains(out.Feedback, fmt.Sprintf("%s:%d", d.File, d.Line))
	}
	if !named {
		t.Fatalf("the feedback does not name %s near lines %v:\n%s", m.File, m.Expect, out.Feedback)
	}

	// The reference repair passes.
	if out := r.eval(task, m.Patch()); out.Status != topics.StatusPassed || out.TargetsFixed != out.TargetsTotal {
		t.Fatalf("reference patch: %s, %d/%d targets fixed:\n%s\n%s", out.Status, out.TargetsFixed, out.TargetsTotal, out.Feedback, m.Patch())
	}
}

// untar extracts a git-archive tarball from realReposDir and returns the
// directory of its single top-level folder.
func untar(archive, top string) func(t *testing.T, dir string) string {
	return func(t *testing.T, dir string) string {
		t.Helper()
		f, err := os.Open(filepath.Join(realReposDir, archive))
		if err != nil {
			t.Skipf("reference repository missing: %v", err)
		}
		defer f.Close()
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(zr)
		for {
			hdr, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			name := filepath.FromSlash(strings.TrimSuffix(hdr.Name, "/"))
			if !filepath.IsLocal(name) {
				t.Fatalf("%s: entry %q leaves the tree", archive, hdr.Name)
			}
			p := filepath.Join(dir, name)
			switch hdr.Typeflag {
			case tar.TypeDir:
				if err := os.MkdirAll(p, 0o755); err != nil {
					t.Fatal(err)
				}
			case tar.TypeReg:
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				mode := os.FileMode(0o644)
				if hdr.Mode&0o111 != 0 {
					mode = 0o755
				}
				w, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := io.Copy(w, tr); err != nil {
					t.Fatal(err)
				}
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
			case tar.TypeXGlobalHeader: // git archive's commit id
			default:
				t.Fatalf("%s: entry %q of type %c", archive, hdr.Name, hdr.Typeflag)
			}
		}
		root := filepath.Join(dir, top)
		if _, err := os.Stat(root); err != nil {
			t.Fatal(err)
		}
		return root
	}
}

// gitClone clones a bundle from realReposDir at its HEAD, without .git.
func gitClone(bundle string) func(t *testing.T, dir string) string {
	return func(t *testing.T, dir string) string {
		t.Helper()
		src := filepath.Join(realReposDir, bundle)
		if _, err := os.Stat(src); err != nil {
			t.Skipf("reference repository missing: %v", err)
		}
		if _, err := exec.LookPath("git"); err != nil {
			t.Skip("git is not installed")
		}
		root := filepath.Join(dir, strings.TrimSuffix(bundle, ".bundle"))
		if out, err := exec.Command("git", "-c", "advice.detachedHead=false", "clone", "-q", src, root).CombinedOutput(); err != nil {
			t.Fatalf("git clone %s: %v\n%s", bundle, err, out)
		}
		if err := os.RemoveAll(filepath.Join(root, ".git")); err != nil {
			t.Fatal(err)
		}
		return root
	}
}
