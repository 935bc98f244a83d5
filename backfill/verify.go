package backfill

import (
	"context"
	"fmt"
	"strings"

	"github.com/murphy-rl/murphy/backfill/deps"
	"github.com/murphy-rl/murphy/compilefix"
	"github.com/murphy-rl/murphy/compilefix/diag"
	"github.com/murphy-rl/murphy/compilefix/workspace"
	"github.com/murphy-rl/murphy/topics"
)

// verdict is why a candidate task was refused ("" reason: it verified).
type verdict struct {
	reason, detail string
}

func (v *verdict) ok() bool { return v == nil || v.reason == "" }

func refuse(reason, format string, args ...any) *verdict {
	return &verdict{reason: reason, detail: fmt.Sprintf(format, args...)}
}

// detailBytes caps the build output quoted in a rejection.
const detailBytes = 1200

// put packs dir into the store and returns its digest.
func (b *Builder) put(ctx context.Context, dir string) (string, error) {
	digest, tarball, err := workspace.PackDir(dir)
	if err != nil {
		return "", err
	}
	if err := b.Store.Put(ctx, digest, tarball); err != nil {
		return "", fmt.Errorf("backfill: workspace store: %w", err)
	}
	return digest, nil
}

// baseline builds task's snapshot unpatched (once per snapshot, as
// execute does) and refuses it when the sandbox could not build it, the
// build ran out of time, or, with mustFail, the build passes. A failing
// build whose output says something cannot be found or downloaded is a
// missing dependency only when explain asks (the caller decides whether
// the failure is otherwise explained).
func (b *Builder) baseline(ctx context.Context, task *topics.Task) (compilefix.Baseline, *verdict, error) {
	base, err := b.Verify.Baseline(ctx, task)
	if err != nil {
		return base, nil, err
	}
	switch {
	case base.Note != "":
		return base, refuse(RejectSandbox, "the sandbox could not build the snapshot: %s", base.Note), nil
	case base.TimedOut:
		detail := fmt.Sprintf("the build of the snapshot did not finish in its limit (%d ms of CPU time, twice that and 5 s wall)", task.TimeoutMS)
		if out := tail(base.Output, detailBytes/2); out != "" {
			detail += ": " + out
		}
		return base, &verdict{reason: RejectTimeout, detail: detail}, nil
	}
	return base, nil, nil
}

// checkReference evaluates the reference patch runs times, as execute
// grades a candidate: every run must pass with every target fixed, and
// every run must agree.
func (b *Builder) checkReference(ctx context.Context, task *topics.Task, runs int) (*verdict, error) {
	if runs < 1 {
		runs = 1
	}
	var first compilefix.Outcome
	for i := range runs {
		out, err := b.Verify.Evaluate(ctx, task, task.ReferencePatch, topics.DefaultFeedbackBytes)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			first = out
			continue
		}
		if out.Status != first.Status || out.TargetsFixed != first.TargetsFixed {
			return refuse(RejectFlaky, "two builds of the reference disagree: %s with %d/%d targets fixed, then %s with %d/%d",
				first.Status, first.TargetsFixed, first.TargetsTotal, out.Status, out.TargetsFixed, out.TargetsTotal), nil
		}
	}
	switch out := first; {
	case out.Status == topics.StatusPassed && out.TargetsFixed == out.TargetsTotal:
		return nil, nil
	case out.Status == topics.StatusTimeout:
		return refuse(RejectTimeout, "the reference build did not finish in its limit: %s", tail(out.Feedback, detailBytes)), nil
	case out.Status == topics.StatusSandboxError:
		return refuse(RejectSandbox, "the sandbox could not build the reference: %s", out.SandboxError), nil
	default:
		if dep, ok := missingDependency(out.Feedback); ok {
			return refuse(RejectMissingDependency, "the reference build needs what the offline sandbox lacks: %s", dep), nil
		}
		return refuse(RejectReferenceFails, "the reference patch gives %s with %d/%d targets fixed: %s",
			out.Status, out.TargetsFixed, out.TargetsTotal, tail(out.Feedback, detailBytes)), nil
	}
}

// missingDependency returns the first line of an offline build's output
// that says a dependency is missing (deps.MissingMessage).
func missingDependency(output string) (string, bool) { return deps.MissingMessage(output) }

// tail returns the last n bytes of s, at a line start where one is near.
func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	if i := strings.IndexByte(s, '\n'); i >= 0 && i < n/4 {
		s = s[i+1:]
	}
	return "…" + s
}

// headers renders diagnostics on one line each, at most n of them.
func headers(ds []topics.Diagnostic, n int) string {
	var parts []string
	for i, d := range ds {
		if i == n {
			parts = append(parts, fmt.Sprintf("(%d more)", len(ds)-n))
			break
		}
		parts = append(parts, diag.Header(d))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}
