package govern

import (
	"context"
	"errors"
	"fmt"

	"github.com/murphy-rl/murphy/stages/govern/judge"
	"github.com/murphy-rl/murphy/topics"
)

// Verdict is a semantic judge's answer (judge.Verdict).
type Verdict = judge.Verdict

// Verdicts.
const (
	Abstain = judge.Abstain
	Correct = judge.Correct
	Wrong   = judge.Wrong
	Unsure  = judge.Unsure
)

// Judge decides whether a candidate that compiles is semantically correct
// (judge.Judge).
type Judge = judge.Judge

// JudgeError is a failed judgement.
type JudgeError = judge.Error

// judgeChain asks its judges in order.
type judgeChain struct {
	judges []Judge
	gate   bool
	// compileFix are the judges of compile-fix repairs that build.
	compileFix []Judge
}

// decision is the outcome of judging one execution.
type decision struct {
	compiles bool
	verdict  Verdict // Correct, Wrong or Unsure
	judge    string  // who decided
}

// solved reports whether the node is a leaf because it was judged correct.
func (d decision) solved() bool { return d.verdict == Correct }

// decide judges a normal execution. A candidate that does not compile is
// neither judged nor correct. With the tests gate, a candidate failing a
// test is wrong without asking the chain. Otherwise the first judge that
// does not abstain decides, and the tests decide when all abstain.
func (c *judgeChain) decide(ctx context.Context, task *topics.Task, ex *topics.Execution) (decision, error) {
	if task != nil && task.Kind == topics.KindCompileFix {
		return c.decideRepair(ctx, task, ex)
	}
	if ex.Status == topics.StatusCompileError {
		return decision{verdict: Wrong, judge: JudgeTests}, nil
	}
	d := decision{compiles: true, verdict: Wrong, judge: JudgeTests}
	if c.gate && !judge.TestsPassed(ex) {
		return d, nil
	}
	for _, j := range c.judges {
		v, err := j.Judge(ctx, task, ex)
		if err != nil {
			var je *JudgeError
			if !errors.As(err, &je) {
				err = &JudgeError{Judge: j.Name(), Err: err}
			}
			return d, err
		}
		switch v {
		case Correct, Wrong, Unsure:
			d.verdict, d.judge = v, j.Name()
			return d, nil
		}
	}
	if judge.TestsPassed(ex) {
		d.verdict = Correct
	}
	return d, nil
}

// decideRepair judges a compile-fix candidate (compilefix/README.md): a patch that
// does not apply or a build that fails does not compile; a build whose tests
// command fails is at most the middle tier; a build that passes is correct
// when the first non-abstaining repair judge finds it consistent with the
// reference, and otherwise (a stub, a deletion, a different fix, every judge
// abstaining) it is not.
func (c *judgeChain) decideRepair(ctx context.Context, task *topics.Task, ex *topics.Execution) (decision, error) {
	switch ex.Status {
	case topics.StatusPassed:
	case topics.StatusWrongAnswer:
		return decision{compiles: true, verdict: Wrong, judge: JudgeTests}, nil
	default:
		return decision{verdict: Wrong, judge: "build"}, nil
	}
	d := decision{compiles: true, verdict: Wrong, judge: "build"}
	for _, j := range c.compileFix {
		v, err := j.Judge(ctx, task, ex)
		if err != nil {
			var je *JudgeError
			if !errors.As(err, &je) {
				err = &JudgeError{Judge: j.Name(), Err: err}
			}
			return d, err
		}
		switch v {
		case Correct, Wrong, Unsure:
			d.verdict, d.judge = v, j.Name()
			return d, nil
		}
	}
	return d, nil
}

// policyOf resolves the reward policy of a tree: TreeSpec, then task, then
// the run default.
func policyOf(spec topics.TreeSpec, task *topics.Task, def string) string {
	if spec.RewardPolicy != "" {
		return spec.RewardPolicy
	}
	if task != nil && task.RewardPolicy != "" {
		return task.RewardPolicy
	}
	return def
}

// Reward computes a normal sample's reward under policy:
//
//   - pass_rate: tests passed / tests total (1 for a passing execution
//     without counted tests); the semantic judges do not change it, they
//     decide only whether the node is solved;
//   - binary: 1 when judged correct, else 0 (unsure included);
//   - tiered: Tiers.NoCompile when it does not compile or parse,
//     Tiers.Correct when judged correct, Tiers.Unsure when the judge was
//     unsure, Tiers.Wrong otherwise (it compiles and runs but is wrong,
//     including runtime errors and its own timeouts).
//
// verdict is the judge chain's decision: Correct, Wrong or Unsure (Abstain
// counts as Wrong).
func Reward(policy string, tiers Tiers, ex *topics.Execution, compiles bool, verdict Verdict) (float64, error) {
	switch policy {
	case topics.RewardPassRate:
		if ex.TestsTotal > 0 {
			return float64(ex.TestsPassed) / float64(ex.TestsTotal), nil
		}
		if ex.Status == topics.StatusPassed {
			return 1, nil
		}
		return 0, nil
	case topics.RewardBinary:
		if verdict == Correct {
			return 1, nil
		}
		return 0, nil
	case topics.RewardTiered:
		switch {
		case !compiles:
			return tiers.NoCompile, nil
		case verdict == Correct:
			return tiers.Correct, nil
		case verdict == Unsure:
			return tiers.Unsure, nil
		}
		return tiers.Wrong, nil
	}
	return 0, fmt.Errorf("unknown reward policy %q", policy)
}
