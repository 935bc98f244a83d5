package judge

import (
	"context"
	"strings"

	"github.com/murphy-rl/murphy/compilefix"
	"github.com/murphy-rl/murphy/topics"
)

// Comparer compares a compile-fix candidate with the task's reference
// patch by their compiled artifacts (*compilefix.Equivalence).
type Comparer interface {
	Compare(ctx context.Context, task *topics.Task, candidate string) (compilefix.EquivResult, error)
}

// Artifact is the artifact-equivalence judge of compile-fix repairs: the
// snapshot patched with the candidate and with the reference are built and
// their normalised artifacts compared (compilefix/README.md). Identical
// artifacts are Correct, a sound verdict; anything else abstains (another
// fix may be valid too: the next judge, or the middle tier, decides). A
// failure of the comparison's sandbox or store is the judge's own failure.
// Without a Comparer it abstains.
type Artifact struct {
	Comparer Comparer
	// Observe, when set, sees every comparison (murphy grade prints them).
	Observe func(task *topics.Task, res compilefix.EquivResult)
}

// Name implements Judge.
func (Artifact) Name() string { return NameArtifact }

// Judge implements Judge.
func (a Artifact) Judge(ctx context.Context, task *topics.Task, ex *topics.Execution) (Verdict, error) {
	if a.Comparer == nil || task == nil || task.Kind != topics.KindCompileFix || strings.TrimSpace(task.ReferencePatch) == "" {
		return Abstain, nil
	}
	res, err := a.Comparer.Compare(ctx, task, ex.Code)
	if err != nil {
		return Abstain, &Error{Judge: NameArtifact, Err: err}
	}
	if a.Observe != nil {
		a.Observe(task, res)
	}
	if res.Verdict == compilefix.EquivSame {
		return Correct, nil
	}
	return Abstain, nil
}
