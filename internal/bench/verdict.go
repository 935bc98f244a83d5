package bench

import (
	"context"
	"strings"
	"sync/atomic"

	"github.com/murphy-rl/murphy/sandbox"
	"github.com/murphy-rl/murphy/topics"
)

// Verdict is a benchmark-only sandbox.Runner that decides without running
// anything: a program passes every test when it is a task's reference
// solution (up to surrounding whitespace) and fails them otherwise, with a
// wrong answer on every function test or a line that matches no expected
// output on stdout for a stdio case. It
// takes the sandbox out of the pipeline so that the rest of it can be
// measured; it judges nothing and must never run outside a benchmark.
type Verdict struct {
	// stdout maps a stdio reference program and a case's stdin to the
	// expected output.
	stdout map[verdictKey]string
	refs   map[string]bool
	jobs   atomic.Int64
}

type verdictKey struct{ code, stdin string }

// NewVerdict indexes the reference solutions of ts.
func NewVerdict(ts []topics.Task) *Verdict {
	v := &Verdict{stdout: map[verdictKey]string{}, refs: map[string]bool{}}
	for i := range ts {
		t := &ts[i]
		ref := strings.TrimSpace(t.Reference)
		if ref == "" {
			continue
		}
		v.refs[ref] = true
		if t.Kind == topics.KindStdio {
			for _, tc := range t.Tests {
				v.stdout[verdictKey{ref, tc.Stdin}] = tc.Expected
			}
		}
	}
	return v
}

// Jobs is the number of jobs decided.
func (v *Verdict) Jobs() int64 { return v.jobs.Load() }

// Run implements sandbox.Runner.
func (v *Verdict) Run(ctx context.Context, job *sandbox.Job) (*sandbox.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	v.jobs.Add(1)
	code := strings.TrimSpace(job.Code)
	pass := v.refs[code]
	res := &sandbox.Result{Done: true, Exited: true}
	switch job.Mode {
	case sandbox.ModeProgram:
		out, ok := v.stdout[verdictKey{code, string(job.Stdin)}]
		if !pass || !ok {
			out = "(benchmark verdict: not the reference)\n"
		}
		res.Stdout = []byte(out)
	default:
		res.Loaded = true
		res.Tests = make([]sandbox.TestReport, len(job.Tests))
		for i := range res.Tests {
			res.Tests[i] = sandbox.TestReport{Reported: true, Passed: pass}
			if !pass {
				res.Tests[i].Actual = "None"
			}
		}
	}
	return res, nil
}
