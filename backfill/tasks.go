package backfill

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/murphy-rl/murphy/backfill/deps"
	"github.com/murphy-rl/murphy/compilefix"
	"github.com/murphy-rl/murphy/compilefix/diag"
	"github.com/murphy-rl/murphy/compilefix/workspace"
	"github.com/murphy-rl/murphy/topics"
)

// Task sources.
const (
	SourceHistory = "backfill/history"
	SourceInject  = "backfill/inject"
)

// Default CPU-time limits of one build command. A Go build with an empty
// build cache compiles the standard library it imports first.
const (
	DefaultTimeout   = 60 * time.Second
	DefaultGoTimeout = 120 * time.Second
)

// Options configure a Builder.
type Options struct {
	// Timeout is the CPU-time limit of one build command of a task (its
	// timeout_ms; the wall limit is twice that and 5 s), unless the item
	// sets one. Zero: DefaultTimeout, DefaultGoTimeout for Go.
	Timeout time.Duration
	// HistoryRuns is how many times the reference of a history pair is
	// built (disagreeing outcomes are flaky; 0 = 2).
	HistoryRuns int
	// InjectRuns is the same for injected tasks (0 = 1: the clean tree
	// already built once).
	InjectRuns int
	// MaxAttempts bounds the mutations tried per injection item (0 = 4 per
	// wanted task plus one per operator).
	MaxAttempts int
	// Dir holds temporary trees and clones ("" = os.TempDir()).
	Dir string
	// Logf, when set, reports progress.
	Logf func(format string, args ...any)
}

// Builder builds and verifies compile-fix tasks (BACKFILL.md, "Tasks"): it
// implements TaskBuilder. Snapshots go to Store; every build runs through
// Verify, execute's CompileFix over the same store, so a kept task is
// exactly what execute will grade.
type Builder struct {
	Store  *workspace.Store
	Verify *compilefix.Evaluator
	// Deps resolves the dependencies of every snapshot before it is built
	// (nil: builds run with what the build sandbox has).
	Deps *deps.Resolver
	Opts Options
}

var _ TaskBuilder = (*Builder)(nil)

// NewBuilder returns a Builder over a workspace store and the compile-fix
// evaluator that reads it, resolving dependencies as dc says (dc.Off:
// never).
func NewBuilder(store *workspace.Store, cf *compilefix.Evaluator, dc deps.Config, opts Options) (*Builder, error) {
	b := &Builder{Store: store, Verify: cf, Opts: opts}
	if !dc.Off {
		dir := opts.Dir
		if dir == "" {
			dir = os.TempDir()
		}
		r, err := deps.New(dc, cf.Builder, store, dir)
		if err != nil {
			return nil, err
		}
		b.Deps = r
	}
	return b, nil
}

// BuildItem builds the tasks of one item. Items that cannot be used (a
// missing repository or revision, a tree that does not build) come back
// as rejections; the error is for what stops the item half-way (ctx ends,
// the builder is closed, the store fails).
func (b *Builder) BuildItem(ctx context.Context, it Item) (*Result, error) {
	kind := it.Kind
	if kind == "" {
		switch {
		case it.Fail != "":
			kind = KindHistory
		case it.Count > 0:
			kind = KindInject
		}
	}
	res := &Result{}
	name := itemName(it)
	if it.Repo == "" {
		res.reject(name, RejectBadInput, "the item names no repository")
		return res, nil
	}
	if len(it.Build) == 0 || it.Build[0] == "" {
		res.reject(name, RejectBadInput, "the item has no build command")
		return res, nil
	}
	if _, err := os.Stat(it.Repo); err != nil {
		res.reject(name, RejectBadInput, fmt.Sprintf("repository %s: %v", it.Repo, err))
		return res, nil
	}
	switch kind {
	case KindHistory:
		return res, b.history(ctx, it, name, res)
	case KindInject:
		return res, b.inject(ctx, it, name, res)
	}
	res.reject(name, RejectBadInput, fmt.Sprintf("unknown item kind %q (want %s or %s)", it.Kind, KindHistory, KindInject))
	return res, nil
}

func (r *Result) reject(item, reason, detail string) {
	r.Rejected = append(r.Rejected, Rejection{Item: item, Reason: reason, Detail: detail})
}

// itemName is the item's Name or its repository's base name without the
// archive suffix.
func itemName(it Item) string {
	if it.Name != "" {
		return it.Name
	}
	base := filepath.Base(filepath.Clean(it.Repo))
	for _, suf := range []string{".tar.gz", ".tgz", ".bundle", ".git"} {
		base = strings.TrimSuffix(base, suf)
	}
	return base
}

func (b *Builder) logf(format string, args ...any) {
	if b.Opts.Logf != nil {
		b.Opts.Logf(format, args...)
	}
}

func (b *Builder) tempDir(pattern string) (string, error) {
	dir := b.Opts.Dir
	if dir == "" {
		dir = os.TempDir()
	}
	return os.MkdirTemp(dir, pattern)
}

// timeoutMS is the task's CPU-time limit.
func (b *Builder) timeoutMS(it Item, lang string) int {
	if it.TimeoutMS > 0 {
		return it.TimeoutMS
	}
	if b.Opts.Timeout > 0 {
		return int(b.Opts.Timeout / time.Millisecond)
	}
	if lang == "go" {
		return int(DefaultGoTimeout / time.Millisecond)
	}
	return int(DefaultTimeout / time.Millisecond)
}

// taskID is "backfill/<name>/<what>-<12 hex>" from the snapshot and the
// reference patch: the same pair always gives the same id.
func taskID(name, what, digest, patch string) string {
	h := sha256.New()
	h.Write([]byte(digest))
	h.Write([]byte{0})
	h.Write([]byte(patch))
	sum := hex.EncodeToString(h.Sum(nil))[:12]
	if what != "" {
		sum = what + "-" + sum
	}
	return "backfill/" + safeName(name) + "/" + sum
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func safeName(s string) string {
	s = unsafeName.ReplaceAllString(s, "-")
	if s == "" {
		return "repo"
	}
	return s
}

// newTask is a compile-fix task over a stored snapshot; Targets and Prompt
// are set once the baseline is known.
func (b *Builder) newTask(it Item, source, lang, digest, ref string) *topics.Task {
	return &topics.Task{
		SchemaVersion:  topics.SchemaVersion,
		Kind:           topics.KindCompileFix,
		Source:         source,
		TimeoutMS:      b.timeoutMS(it, lang),
		RewardPolicy:   topics.RewardTiered,
		ReferencePatch: ref,
		Language:       lang,
		CompileFix: &topics.CompileFix{
			Workspace: digest,
			Build:     append([]string(nil), it.Build...),
			Toolchain: it.Toolchain,
			Tests:     append([]string(nil), it.Tests...),
		},
	}
}

// promptBytes bounds the diagnostics and excerpts a prompt quotes.
const promptBytes = 8 << 10

// prompt states the failing build and its targets with source excerpts
// from the snapshot; the repository itself is the workspace.
func (b *Builder) prompt(ctx context.Context, task *topics.Task) string {
	cf := task.CompileFix
	var s strings.Builder
	fmt.Fprintf(&s, "The build command `%s`, run at the root of this repository, fails", strings.Join(cf.Build, " "))
	if len(cf.Targets) > 0 {
		s.WriteString(" with:\n\n")
		root := ""
		if tree, err := b.Verify.Cache.Get(ctx, cf.Workspace); err == nil {
			root = tree.Dir()
			defer tree.Release()
		}
		if root != "" {
			s.WriteString(diag.Render(cf.Targets, root, promptBytes))
		} else {
			for _, d := range cf.Targets {
				s.WriteString(diag.Header(d) + "\n")
			}
		}
	} else {
		s.WriteString(".\n")
	}
	s.WriteString("\nRepair the source code with a unified diff (paths relative to the repository root)")
	if len(cf.Tests) > 0 {
		fmt.Fprintf(&s, "; after the build, `%s` must pass", strings.Join(cf.Tests, " "))
	}
	s.WriteString(". The build configuration must not change.\n")
	return s.String()
}

// sourceExts are the file name extensions of source files (what a
// reference patch may change and what injection mutates).
var sourceExts = map[string]string{
	".c": "c", ".h": "c", ".go": "go", ".java": "java", ".py": "python",
	".cc": "", ".cpp": "", ".cxx": "", ".hpp": "", ".hh": "", ".hxx": "",
	".rs": "", ".ts": "", ".tsx": "", ".js": "", ".jsx": "", ".mjs": "", ".kt": "", ".kts": "",
	".scala": "", ".cs": "", ".swift": "", ".m": "", ".mm": "", ".rb": "", ".php": "", ".pyi": "",
}

// detectLanguage is the inject language with the most source files under
// dir, skipping tests, docs and vendored code.
func detectLanguage(dir string) string {
	count := map[string]int{}
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && skipDir(rel) {
				return filepath.SkipDir
			}
			return nil
		}
		if lang := sourceExts[path.Ext(rel)]; lang != "" && Classify(rel) == ClassSource {
			count[lang]++
		}
		return nil
	})
	best, n := "", 0
	for _, lang := range []string{"c", "go", "java", "python"} { // fixed order: ties are deterministic
		if count[lang] > n {
			best, n = lang, count[lang]
		}
	}
	return best
}

// skipDir reports directories that hold no project sources.
func skipDir(rel string) bool {
	base := path.Base(rel)
	switch base {
	case ".git", "vendor", "node_modules", "third_party", "__pycache__", ".tox", ".venv", "venv":
		return true
	}
	return false
}
