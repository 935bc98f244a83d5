package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"mvdan.cc/sh/v3/shell"

	"github.com/murphy-rl/murphy/backfill"
	"github.com/murphy-rl/murphy/backfill/deps"
	"github.com/murphy-rl/murphy/compilefix"
	"github.com/murphy-rl/murphy/compilefix/workspace"
	"github.com/murphy-rl/murphy/sandbox"
)

// The task builder's flags, shared by `backfill tasks` and `backfill
// submit`.
const (
	flagWorkspaceStore = "workspace-store"
	flagBuildWorkers   = "build-workers"
	flagBuildTimeout   = "build-timeout"
	flagBwrap          = "bwrap"
	flagMavenLocal     = "maven-local-repository"
	flagResolve        = "resolve"
	flagDepsCache      = "deps-cache"
	flagMavenRepo      = "maven-repository"
	flagGoProxy        = "go-proxy"
	flagPyPI           = "pypi-index"
	flagPyPIFiles      = "pypi-files"
	flagResolveTimeout = "resolve-timeout"
)

func addTaskBuilderFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	repos := deps.DefaultRepositories()
	dc := deps.DefaultConfig()
	f.String(flagWorkspaceStore, "", "workspace store URL the tasks' snapshots and dependency caches go to (directory, file://, s3://, gs://); execute must read the same one")
	f.Int(flagBuildWorkers, 0, "builds run at once in the build sandbox (0 = one per CPU)")
	f.Duration(flagBuildTimeout, 0, "CPU-time limit of one build command, the task's timeout_ms (0 = 60s, 120s for Go; an item's timeout_ms wins)")
	f.String(flagBwrap, sandbox.DefaultBuilderConfig().Bwrap, "the bubblewrap binary of the build sandbox")
	f.String(flagMavenLocal, "", "a Maven local repository bound read-only into builds of tasks without a dependency cache (builder.maven_repository)")
	f.Bool(flagResolve, true, "resolve each snapshot's dependencies (Maven, Gradle, Go modules, Python requirements) from the configured repositories into a dependency cache the task names; false: builds use only what the sandbox has")
	f.String(flagDepsCache, "", "host directory kept across runs: the resolver's copies of fetched files and its index of resolutions (default: a temporary one for this run)")
	f.StringSlice(flagMavenRepo, repos.Maven, "Maven repositories resolution may fetch from, in order (every repository a build names is served from these)")
	f.String(flagGoProxy, repos.GoProxy, "the Go module proxy resolution may fetch from (\"\" = none)")
	f.String(flagPyPI, repos.PyPI, "the Python package index (simple API) resolution may fetch from (\"\" = none)")
	f.String(flagPyPIFiles, repos.PyPIFiles, "the host the package index links its files on")
	f.Duration(flagResolveTimeout, dc.Timeout, "CPU-time limit of one command of a resolution")
}

// depsConfig is the resolver's configuration from the builder's flags.
func depsConfig(cmd *cobra.Command) (deps.Config, error) {
	f := cmd.Flags()
	dc := deps.DefaultConfig()
	on, _ := f.GetBool(flagResolve)
	dc.Off = !on
	dc.Dir, _ = f.GetString(flagDepsCache)
	dc.Repositories.Maven, _ = f.GetStringSlice(flagMavenRepo)
	dc.Repositories.GoProxy, _ = f.GetString(flagGoProxy)
	dc.Repositories.PyPI, _ = f.GetString(flagPyPI)
	dc.Repositories.PyPIFiles, _ = f.GetString(flagPyPIFiles)
	dc.Timeout, _ = f.GetDuration(flagResolveTimeout)
	if dc.Repositories.PyPI == "" {
		dc.Repositories.PyPIFiles = ""
	}
	if err := dc.Validate(); err != nil {
		return dc, err
	}
	return dc, nil
}

// openBackfillBuilder opens the build sandbox, execute's compile-fix
// evaluator, the workspace store and the dependency resolver named by the
// builder's flags.
func openBackfillBuilder(cmd *cobra.Command) (*backfill.Builder, func(), error) {
	f := cmd.Flags()
	url, _ := f.GetString(flagWorkspaceStore)
	workers, _ := f.GetInt(flagBuildWorkers)
	timeout, _ := f.GetDuration(flagBuildTimeout)
	if url == "" {
		return nil, nil, &exitError{code: 2, err: fmt.Errorf("%s: --%s is required: the tasks' snapshots are stored there", cmd.CommandPath(), flagWorkspaceStore)}
	}
	dc, err := depsConfig(cmd)
	if err != nil {
		return nil, nil, &exitError{code: 2, err: fmt.Errorf("%s: %w", cmd.CommandPath(), err)}
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	cfc := compilefix.DefaultConfig()
	cfc.Store = url
	cfc.Builder.Workers = workers
	cfc.Builder.Bwrap, _ = f.GetString(flagBwrap)
	cfc.Builder.MavenRepository, _ = f.GetString(flagMavenLocal)
	cf, closeCF, err := compilefix.Open(ctx, cfc)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", cmd.CommandPath(), err)
	}
	store, err := workspace.OpenStore(ctx, url)
	if err != nil {
		closeCF()
		return nil, nil, fmt.Errorf("%s: %w", cmd.CommandPath(), err)
	}
	b, err := backfill.NewBuilder(store, cf, dc, backfill.Options{Timeout: timeout})
	if err != nil {
		_ = store.Close()
		closeCF()
		return nil, nil, fmt.Errorf("%s: %w", cmd.CommandPath(), err)
	}
	return b, func() {
		if b.Deps != nil {
			b.Deps.Close()
		}
		_ = store.Close()
		closeCF()
	}, nil
}

// backfillTasksOptions are the flags of one item given on the command line.
type backfillTasksOptions struct {
	manifest, out, report, yield      string
	name, repo, fail, fix, patch, log string
	build, tests, language, toolchain string
	operators                         []string
	inject                            int
	seed                              int64
	timeout                           time.Duration
}

func newBackfillTasksCmd() *cobra.Command {
	var o backfillTasksOptions
	cmd := &cobra.Command{
		Use:   "tasks (--manifest FILE | --repo REPO --build CMD (--fail REV (--fix REV | --patch FILE) --log FILE | --inject N)) --workspace-store DIR",
		Short: "Build and verify compile-fix tasks from CI history or injected errors, without Kafka",
		Long: `Tasks builds compile-fix tasks and verifies each by building it in the build
sandbox, exactly as execute grades candidates (backfill/BACKFILL.md):

  history:  a git repository (directory or bundle), the failing revision, the
            fixing revision (or a patch file) and the failing CI log. The task is
            the failing revision's snapshot, the log's compile errors that the
            sandbox build reproduces, and the fix's source hunks as the reference
            patch (test, build-configuration and docs hunks are split out).
  inject:   a clean tree (directory, .tar.gz, or a git revision with --fail) and
            N tasks made by planting compile errors (package inject), each kept
            when its build fails at the mutation and the inverse patch builds.

One item from the flags, or every item of --manifest (YAML or JSON: a list, or
{items: [...]}; or JSONL). Tasks go to --out as native JSONL (tasks.Load, murphy
exec --tasks, murphy submit --tasks read it), snapshots to --workspace-store.
An item that is rejected or fails is reported and the others go on; the
summary (tasks built, rejections by reason) goes to stderr.

Needs root and bubblewrap (apt-get install -y bubblewrap).`,
		Example: `  murphy backfill tasks --repo uuid.bundle --fail 1a2b3c --fix 4d5e6f --log fail.log --build "go build ./..." --workspace-store ./ws --out tasks.jsonl
  murphy backfill tasks --repo cJSON.tar.gz --build make --inject 8 --seed 1 --workspace-store ./ws --out tasks.jsonl
  murphy backfill tasks --manifest backfill.yaml --workspace-store ./ws --out tasks.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			items, bad, err := backfillItems(cmd, o)
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			b, release, err := openBackfillBuilder(cmd)
			if err != nil {
				return err
			}
			defer release()
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			return runBackfillTasks(ctx, b, items, bad, o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.manifest, "manifest", "", "items to build: YAML or JSON (a list, or {items: [...]}), or JSONL")
	f.StringVar(&o.out, "out", "-", "where the tasks go, native JSONL (- = stdout)")
	f.StringVar(&o.report, "report", "", "JSONL of one record per item: its tasks' ids, rejections, provenance, dependency resolution, error")
	f.StringVar(&o.yield, "yield", "", "the run's yield as JSON (items reproduced, rejected by reason, time per item, dependency-cache hits); its text goes to stderr")
	f.StringVar(&o.name, "name", "", "name of the item in task ids and reports (default: the repository's)")
	f.StringVar(&o.repo, "repo", "", "git repository (directory or bundle) or, to inject, a directory or .tar.gz")
	f.StringVar(&o.fail, "fail", "", "failing revision (history), or the revision to inject into")
	f.StringVar(&o.fix, "fix", "", "fixing revision (history)")
	f.StringVar(&o.patch, "patch", "", "the fix as a unified diff file, instead of --fix")
	f.StringVar(&o.log, "log", "", "the failing CI log (history)")
	f.StringVar(&o.build, "build", "", `build command, run at the repository root, split like a shell does ("go build ./...")`)
	f.StringVar(&o.tests, "tests", "", "tests command run after a successful build (optional)")
	f.IntVar(&o.inject, "inject", 0, "inject: build up to N tasks by planting compile errors")
	f.Int64Var(&o.seed, "seed", 0, "inject: seed of the mutations drawn")
	f.StringSliceVar(&o.operators, "operators", nil, "inject: operators to use (default: every one that applies)")
	f.StringVar(&o.language, "language", "", "language of the repository (default: detected from its files)")
	f.StringVar(&o.toolchain, "toolchain", "", "toolchain of the build, the diagnostics parser's hint (default: the build command's)")
	f.DurationVar(&o.timeout, "timeout", 0, "CPU-time limit of one build command of this item (0 = --build-timeout's)")
	addTaskBuilderFlags(cmd)
	return cmd
}

// backfillItems are the items of --manifest, or the one the flags give;
// bad counts manifest entries that could not be read (reported).
func backfillItems(cmd *cobra.Command, o backfillTasksOptions) ([]backfill.Item, int, error) {
	one := o.repo != "" || o.fail != "" || o.fix != "" || o.patch != "" || o.log != "" || o.build != "" || o.inject > 0
	if o.manifest != "" {
		if one {
			return nil, 0, errors.New("backfill tasks: give --manifest or one item's flags (--repo, --build, ...), not both")
		}
		m, err := backfill.LoadManifest(o.manifest)
		if err != nil {
			return nil, 0, err
		}
		for _, e := range m.Errors {
			fmt.Fprintf(cmd.ErrOrStderr(), "%s: skipped: %v\n", o.manifest, e)
		}
		items := make([]backfill.Item, len(m.Items))
		for i, it := range m.Items {
			items[i] = resolveItem(it, m.Dir)
		}
		return items, len(m.Errors), nil
	}
	if o.repo == "" || o.build == "" {
		return nil, 0, errors.New("backfill tasks: give --manifest FILE, or --repo and --build with --fail/--fix/--log or --inject N")
	}
	build, err := splitCommand(o.build)
	if err != nil {
		return nil, 0, fmt.Errorf("backfill tasks: --build: %w", err)
	}
	var tests []string
	if o.tests != "" {
		if tests, err = splitCommand(o.tests); err != nil {
			return nil, 0, fmt.Errorf("backfill tasks: --tests: %w", err)
		}
	}
	it := backfill.Item{
		Name: o.name, Repo: o.repo, Fail: o.fail, Fix: o.fix, Patch: o.patch, Log: o.log,
		Build: build, Tests: tests, Toolchain: o.toolchain, Language: o.language,
		Count: o.inject, Operators: o.operators, Seed: o.seed, TimeoutMS: int(o.timeout / time.Millisecond),
	}
	switch {
	case o.inject > 0:
		it.Kind = backfill.KindInject
		if o.fix != "" || o.patch != "" || o.log != "" {
			return nil, 0, errors.New("backfill tasks: --inject takes no --fix, --patch or --log")
		}
	case o.fail != "":
		it.Kind = backfill.KindHistory
	default:
		return nil, 0, errors.New("backfill tasks: give --fail with --fix or --patch and --log (history), or --inject N")
	}
	return []backfill.Item{it}, 0, nil
}

// resolveItem makes an item's relative paths relative to dir (the
// manifest's directory).
func resolveItem(it backfill.Item, dir string) backfill.Item {
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) || dir == "" {
			return p
		}
		return filepath.Join(dir, p)
	}
	it.Repo, it.Log, it.Patch = abs(it.Repo), abs(it.Log), abs(it.Patch)
	return it
}

// splitCommand splits a command line into words as a POSIX shell does
// (quotes, escapes), without expanding anything: "$X" stays "$X".
func splitCommand(s string) ([]string, error) {
	// A variable expands to a marker put back as "$NAME" afterwards: the
	// build's environment is the sandbox's, not this process's.
	const mark = "\x1fmurphy-var\x1f"
	words, err := shell.Fields(s, func(name string) string {
		if name == "IFS" {
			return " \t\n" // what field splitting uses
		}
		return mark + name + mark
	})
	if err != nil {
		return nil, err
	}
	for i, w := range words {
		for strings.Contains(w, mark) {
			a, rest, _ := strings.Cut(w, mark)
			name, after, _ := strings.Cut(rest, mark)
			w = a + "$" + name + after
		}
		words[i] = w
	}
	if len(words) == 0 {
		return nil, errors.New("empty command")
	}
	return words, nil
}

// itemReport is one line of --report.
type itemReport struct {
	Item         string                `json:"item"`
	Kind         string                `json:"kind"`
	Tasks        []string              `json:"tasks"`
	Rejected     []backfill.Rejection  `json:"rejected,omitempty"`
	Provenance   []backfill.Provenance `json:"provenance,omitempty"`
	Cause        string                `json:"cause,omitempty"`
	Diagnostics  map[string]int        `json:"diagnostics,omitempty"`
	Dependencies *deps.Resolution      `json:"dependencies,omitempty"`
	Error        string                `json:"error,omitempty"`
	DurationMS   int64                 `json:"duration_ms"`
}

func runBackfillTasks(ctx context.Context, b backfill.TaskBuilder, items []backfill.Item, bad int, o backfillTasksOptions, stdout, stderr io.Writer) error {
	out := stdout
	if o.out != "" && o.out != "-" {
		f, err := os.Create(o.out)
		if err != nil {
			return fmt.Errorf("backfill tasks: %w", err)
		}
		defer f.Close()
		out = f
	}
	w := bufio.NewWriter(out)
	var rep *json.Encoder
	if o.report != "" {
		f, err := os.Create(o.report)
		if err != nil {
			return fmt.Errorf("backfill tasks: %w", err)
		}
		defer f.Close()
		rep = json.NewEncoder(f)
	}
	start := time.Now()
	seen := map[string]bool{}
	reasons := map[string]int{}
	built, rejected, failed := 0, 0, 0
	y := backfill.NewYield()
	for _, it := range items {
		if ctx.Err() != nil {
			break
		}
		name := it.Name
		if name == "" {
			name = it.ReportName()
		}
		t0 := time.Now()
		res, err := b.BuildItem(ctx, it)
		took := time.Since(t0)
		y.Add(name, it.Kind, res, err, took)
		r := itemReport{Item: name, Kind: it.Kind, DurationMS: took.Milliseconds(), Tasks: []string{}}
		if err != nil {
			failed++
			r.Error = err.Error()
			fmt.Fprintf(stderr, "murphy backfill tasks: %s: %v\n", name, err)
		}
		if res != nil {
			r.Rejected, r.Provenance, r.Cause, r.Diagnostics, r.Dependencies = res.Rejected, res.Provenance, res.Cause, res.Diagnostics, res.Dependencies
			for _, task := range res.Tasks {
				r.Tasks = append(r.Tasks, task.TaskID)
				if seen[task.TaskID] {
					continue // another item made the same task
				}
				seen[task.TaskID] = true
				line, err := json.Marshal(task)
				if err != nil {
					return fmt.Errorf("backfill tasks: %s: %w", task.TaskID, err)
				}
				if _, err := w.Write(append(line, '\n')); err != nil {
					return fmt.Errorf("backfill tasks: %w", err)
				}
				built++
			}
			if err := w.Flush(); err != nil {
				return fmt.Errorf("backfill tasks: %w", err)
			}
			for _, rj := range res.Rejected {
				reasons[rj.Reason]++
				rejected++
				if rj.Reason != backfill.RejectDuplicate {
					fmt.Fprintf(stderr, "murphy backfill tasks: %s: rejected (%s): %s\n", name, rj.Reason, rj.Detail)
				}
			}
		}
		if rep != nil {
			if err := rep.Encode(r); err != nil {
				return fmt.Errorf("backfill tasks: report: %w", err)
			}
		}
	}
	writeBackfillSummary(stderr, len(items), built, rejected, failed, bad, reasons, time.Since(start))
	if err := writeYield(y, o.yield, stderr); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return fmt.Errorf("backfill tasks: %w", ctx.Err())
	}
	if failed > 0 {
		return &exitError{code: 1, err: fmt.Errorf("backfill tasks: %d of %d items failed; the tasks of the others are written", failed, len(items))}
	}
	return nil
}

// writeYield writes the yield's text to stderr and, when path is set, its
// JSON to path.
func writeYield(y *backfill.Yield, path string, stderr io.Writer) error {
	y.WriteText(stderr)
	if path == "" {
		return nil
	}
	b, err := json.MarshalIndent(y, "", "  ")
	if err == nil {
		err = os.WriteFile(path, append(b, '\n'), 0o644)
	}
	if err != nil {
		return fmt.Errorf("backfill tasks: yield: %w", err)
	}
	return nil
}

func writeBackfillSummary(w io.Writer, items, built, rejected, failed, bad int, reasons map[string]int, d time.Duration) {
	fmt.Fprintf(w, "backfill tasks: %d items, %d tasks built, %d rejected", items, built, rejected)
	if len(reasons) > 0 {
		var rs []string
		for r, n := range reasons {
			rs = append(rs, fmt.Sprintf("%s %d", r, n))
		}
		sort.Strings(rs)
		fmt.Fprintf(w, " (%s)", strings.Join(rs, ", "))
	}
	if failed > 0 {
		fmt.Fprintf(w, ", %d failed", failed)
	}
	if bad > 0 {
		fmt.Fprintf(w, ", %d manifest entries skipped", bad)
	}
	fmt.Fprintf(w, ", %s\n", d.Round(time.Millisecond))
}
