// Package judge holds govern's semantic judges: whether a candidate that
// compiles is correct (for a repair task: consistent with the reference
// repair). A judge answers Correct, Wrong, Unsure or Abstain (ask the next
// one); an error is the judge's own failure (infrastructure), never a
// verdict on the candidate. The chain that asks them, the rewards and the
// LLM judge's plumbing stay in govern; the judges here are deterministic:
//
//   - Tests: the hidden tests;
//   - ReferencePatch: token equality with the task's reference patch;
//   - Artifact: equality of the compiled artifacts of the candidate-patched
//     and the reference-patched trees (compilefix.Equivalence).
package judge

import (
	"context"

	"github.com/murphy-rl/murphy/topics"
)

// Names of the judges (govern's Config.Judges and CompileFixJudges).
const (
	NameTests          = "tests"
	NameReferencePatch = "reference_patch"
	NameArtifact       = "artifact"
	NameLLM            = "llm"
)

// Verdict is a semantic judge's answer.
type Verdict int

const (
	// Abstain: this judge cannot judge this candidate; ask the next one.
	Abstain Verdict = iota
	// Correct: the candidate solves the task.
	Correct
	// Wrong: the candidate runs but does not solve the task.
	Wrong
	// Unsure: the judge looked and cannot tell. It decides (the chain stops
	// here) but the node is not solved; the tiered policy gives it
	// Tiers.Unsure.
	Unsure
)

func (v Verdict) String() string {
	switch v {
	case Correct:
		return "correct"
	case Wrong:
		return "wrong"
	case Unsure:
		return "unsure"
	}
	return "abstain"
}

// Judge decides whether a candidate that compiles is semantically correct.
// An error means the judge itself failed (infrastructure, cause
// infra.judge), never that the candidate is bad.
type Judge interface {
	Name() string
	Judge(ctx context.Context, task *topics.Task, ex *topics.Execution) (Verdict, error)
}

// Error is a failed judgement.
type Error struct {
	Judge string
	Err   error
}

func (e *Error) Error() string { return "judge " + e.Judge + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Tests is the hidden-test judge: a candidate is correct when its
// execution passed and every recorded test result, hidden ones included,
// passed. It never abstains.
type Tests struct{}

// Name implements Judge.
func (Tests) Name() string { return NameTests }

// Judge implements Judge.
func (Tests) Judge(_ context.Context, _ *topics.Task, ex *topics.Execution) (Verdict, error) {
	if TestsPassed(ex) {
		return Correct, nil
	}
	return Wrong, nil
}

// TestsPassed reports whether ex passed and every recorded test result did.
func TestsPassed(ex *topics.Execution) bool {
	if ex.Status != topics.StatusPassed || ex.TestsPassed < ex.TestsTotal {
		return false
	}
	for _, r := range ex.Results {
		if r.Status != topics.StatusPassed {
			return false
		}
	}
	return true
}
