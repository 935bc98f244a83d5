// Package backfill turns CI history into verified compile-fix tasks: pairs
// of failing and fixing revisions with the failing log, and compile errors
// injected into clean repositories (BACKFILL.md).
package backfill

import (
	"context"

	"github.com/murphy-rl/murphy/backfill/deps"
	"github.com/murphy-rl/murphy/topics"
)

// Item kinds.
const (
	KindHistory = "history"
	KindInject  = "inject"
)

// Item is one unit of a backfill job: a failing/fixing pair of revisions
// with the failing log, or a clean repository to inject errors into.
type Item struct {
	Kind string `json:"kind" yaml:"kind"`
	// Name names the item in reports ("" = derived from the repository).
	Name string `json:"name,omitempty" yaml:"name,omitempty"`
	// Repo is a git repository: a directory, a bundle file or, for
	// injection, any directory (or .tar.gz) of sources.
	Repo string `json:"repo" yaml:"repo"`
	// Fail and Fix are the failing and fixing revisions (history).
	Fail string `json:"fail,omitempty" yaml:"fail,omitempty"`
	Fix  string `json:"fix,omitempty" yaml:"fix,omitempty"`
	// Patch is a file holding the fix as a unified diff, instead of Fix.
	Patch string `json:"patch,omitempty" yaml:"patch,omitempty"`
	// Log is the failing CI log (history).
	Log string `json:"log,omitempty" yaml:"log,omitempty"`
	// Build is the build command (argv) run at the repository root.
	Build []string `json:"build" yaml:"build"`
	// Tests is an optional tests command.
	Tests     []string `json:"tests,omitempty" yaml:"tests,omitempty"`
	Toolchain string   `json:"toolchain,omitempty" yaml:"toolchain,omitempty"`
	Language  string   `json:"language,omitempty" yaml:"language,omitempty"`
	// Injection: how many tasks at most, from which operators ("" = all
	// that apply), under which seed.
	Count     int      `json:"count,omitempty" yaml:"count,omitempty"`
	Operators []string `json:"operators,omitempty" yaml:"operators,omitempty"`
	Seed      int64    `json:"seed,omitempty" yaml:"seed,omitempty"`
	// TimeoutMS is the CPU-time limit of one build command (the task's
	// timeout_ms; 0 = the builder's default).
	TimeoutMS int `json:"timeout_ms,omitempty" yaml:"timeout_ms,omitempty"`
}

// Rejection reasons.
const (
	RejectBadInput          = "bad_input"          // missing repository, revision, log, unreadable files
	RejectNoDiagnostics     = "no_diagnostics"     // the log names no compile diagnostic
	RejectNotReproduced     = "environment_drift"  // the failing snapshot does not fail as the log says
	RejectMissingDependency = "missing_dependency" // the build needs what the offline sandbox lacks
	RejectReferenceFails    = "reference_fails"    // the fix does not build
	RejectFlaky             = "flaky"              // two builds of the same tree disagree
	RejectTimeout           = "timeout"            // a build did not finish in its limit
	RejectNoSourceChange    = "no_source_change"   // the fix changes no source file
	RejectDuplicate         = "duplicate"          // an identical patch was already kept
	RejectNotDiagnosed      = "not_diagnosed"      // injection: the build fails elsewhere than the mutation
	RejectSandbox           = "sandbox_error"
	RejectDependency        = "dependency"   // the log's errors are inside installed dependencies, not the repository
	RejectBuildFails        = "build_failed" // the failing snapshot's build stops before it compiles anything
)

// Rejection is a candidate task that did not verify.
type Rejection struct {
	Item   string `json:"item"`
	Reason string `json:"reason"`
	Detail string `json:"detail"`
}

// Result is what building one item gave.
type Result struct {
	Tasks    []topics.Task `json:"tasks"`
	Rejected []Rejection   `json:"rejected,omitempty"`
	// Diagnostics counts the log's diagnostics by tool; Cause is the log's
	// failure cause (history items).
	Diagnostics map[string]int `json:"diagnostics,omitempty"`
	Cause       string         `json:"cause,omitempty"`
	// Provenance says where each task came from, in Tasks' order.
	Provenance []Provenance `json:"provenance,omitempty"`
	// Dependencies is the item's dependency resolution (nil when none
	// ran: no builder resolver, or the item was rejected before).
	Dependencies *deps.Resolution `json:"dependencies,omitempty"`
}

// Provenance is the record of how one task was made.
type Provenance struct {
	TaskID string `json:"task_id"`
	Kind   string `json:"kind"`
	// Fail and Fix are the resolved commits (history; Fix is "" for a
	// patch file), Rev the injected tree's commit when it came from git.
	Fail string `json:"fail,omitempty"`
	Fix  string `json:"fix,omitempty"`
	Rev  string `json:"rev,omitempty"`
	// Split holds the parts of the fix left out of the reference patch,
	// by class (test, build, docs, other): each a unified diff.
	Split map[string]string `json:"split,omitempty"`
	// SplitFiles lists the files of each part, the reference's under
	// "source".
	SplitFiles map[string][]string `json:"split_files,omitempty"`
	// LogTargets is the number of the log's compile errors, Dropped those
	// the sandbox build did not reproduce (not targets). TargetMap says,
	// for each, which diagnostic of the sandbox build it is and by what
	// (message or location and kind), or why it was dropped.
	LogTargets int           `json:"log_targets,omitempty"`
	Dropped    int           `json:"dropped_targets,omitempty"`
	TargetMap  []TargetMatch `json:"target_map,omitempty"`
	// Dependencies is the dependency resolution the task's cache came
	// from (compile_fix.dependencies names the cache).
	Dependencies *deps.Resolution `json:"dependencies,omitempty"`
	// Injection: the operator, the mutated file and line, what it did.
	Operator    string `json:"operator,omitempty"`
	File        string `json:"file,omitempty"`
	Line        int    `json:"line,omitempty"`
	Description string `json:"description,omitempty"`
}

// TaskBuilder builds and verifies the tasks of one item. An error is a
// failure of the item as a whole (reported per item; the job goes on).
type TaskBuilder interface {
	BuildItem(ctx context.Context, it Item) (*Result, error)
}
