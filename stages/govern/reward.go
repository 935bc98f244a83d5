package govern

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/murphy-rl/murphy/topics"
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
)

func (v Verdict) String() string {
	switch v {
	case Correct:
		return "correct"
	case Wrong:
		return "wrong"
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

// JudgeError is a failed judgement.
type JudgeError struct {
	Judge string
	Err   error
}

func (e *JudgeError) Error() string { return "judge " + e.Judge + ": " + e.Err.Error() }
func (e *JudgeError) Unwrap() error { return e.Err }

// TestsJudge is the hidden-test judge: a candidate is correct when its
// execution passed and every recorded test result, hidden ones included,
// passed. It never abstains.
type TestsJudge struct{}

// Name implements Judge.
func (TestsJudge) Name() string { return JudgeTests }

// Judge implements Judge.
func (TestsJudge) Judge(_ context.Context, _ *topics.Task, ex *topics.Execution) (Verdict, error) {
	if testsPassed(ex) {
		return Correct, nil
	}
	return Wrong, nil
}

func testsPassed(ex *topics.Execution) bool {
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

// ReferencePatchJudge compares the candidate with the task's reference
// patch (topics.Task.ReferencePatch), for repair tasks. Both sides are
// normalised before comparison:
//
//   - unified diffs become, per file (a/ and b/ prefixes dropped, files in
//     path order), the sequence of removed and added lines; hunk headers,
//     line numbers and context lines are ignored;
//   - whole programs become their lines without blank lines and
//     whole-line comments (#, //);
//   - in both, runs of white space inside a line collapse to one space.
//
// Equal normal forms are Correct; different ones are Wrong, or Abstain with
// MismatchAbstains. A task without a reference patch gets Abstain.
type ReferencePatchJudge struct {
	MismatchAbstains bool
}

// Name implements Judge.
func (ReferencePatchJudge) Name() string { return JudgeReferencePatch }

// Judge implements Judge.
func (j ReferencePatchJudge) Judge(_ context.Context, task *topics.Task, ex *topics.Execution) (Verdict, error) {
	if task == nil || strings.TrimSpace(task.ReferencePatch) == "" {
		return Abstain, nil
	}
	if PatchesEquivalent(task.ReferencePatch, ex.Code) {
		return Correct, nil
	}
	if j.MismatchAbstains {
		return Abstain, nil
	}
	return Wrong, nil
}

// PatchesEquivalent reports whether two patches (or two programs) have the
// same normal form (see ReferencePatchJudge).
func PatchesEquivalent(a, b string) bool {
	da, db := isUnifiedDiff(a), isUnifiedDiff(b)
	if da != db {
		return false
	}
	if da {
		return normalizeDiff(a) == normalizeDiff(b)
	}
	return normalizeProgram(a) == normalizeProgram(b)
}

func isUnifiedDiff(s string) bool {
	hasHunk, hasFile := false, false
	for line := range strings.SplitSeq(s, "\n") {
		switch {
		case strings.HasPrefix(line, "@@"):
			hasHunk = true
		case strings.HasPrefix(line, "+++ "), strings.HasPrefix(line, "--- "):
			hasFile = true
		}
	}
	return hasHunk && hasFile
}

func normalizeDiff(s string) string {
	type fileChange struct {
		path  string
		lines []string
	}
	var files []*fileChange
	var cur *fileChange
	oldPath := ""
	for line := range strings.SplitSeq(strings.ReplaceAll(s, "\r\n", "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, "--- "):
			oldPath = diffPath(line[4:])
		case strings.HasPrefix(line, "+++ "):
			p := diffPath(line[4:])
			if p == "/dev/null" {
				p = oldPath
			}
			cur = &fileChange{path: p}
			files = append(files, cur)
		case strings.HasPrefix(line, "@@"), strings.HasPrefix(line, "diff "), strings.HasPrefix(line, "index "),
			strings.HasPrefix(line, `\ No newline`):
		case cur != nil && (strings.HasPrefix(line, "+") || strings.HasPrefix(line, "-")):
			body := normalizeSpace(line[1:])
			if body == "" {
				continue // blank lines added or removed do not change meaning
			}
			cur.lines = append(cur.lines, line[:1]+body)
		}
	}
	sort.SliceStable(files, func(i, j int) bool { return files[i].path < files[j].path })
	var sb strings.Builder
	for _, f := range files {
		if len(f.lines) == 0 {
			continue
		}
		sb.WriteString("F " + f.path + "\n")
		for _, l := range f.lines {
			sb.WriteString(l + "\n")
		}
	}
	return sb.String()
}

func diffPath(s string) string {
	if i := strings.IndexByte(s, '\t'); i >= 0 {
		s = s[:i] // "--- a/x.c\t2024-01-01 ..." carries a timestamp
	}
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "a/") || strings.HasPrefix(s, "b/") {
		s = s[2:]
	}
	return s
}

func normalizeProgram(s string) string {
	var sb strings.Builder
	for line := range strings.SplitSeq(strings.ReplaceAll(s, "\r\n", "\n"), "\n") {
		l := normalizeSpace(line)
		if l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, "//") {
			continue
		}
		sb.WriteString(l + "\n")
	}
	return sb.String()
}

// judgeChain asks its judges in order.
type judgeChain struct {
	judges []Judge
	gate   bool
}

// decision is the outcome of judging one execution.
type decision struct {
	compiles bool
	correct  bool
	judge    string // who decided
}

// decide judges a normal execution. A candidate that does not compile is
// neither judged nor correct. With the tests gate, a candidate failing a
// test is wrong without asking the chain. Otherwise the first judge that
// does not abstain decides, and the tests decide when all abstain.
func (c *judgeChain) decide(ctx context.Context, task *topics.Task, ex *topics.Execution) (decision, error) {
	if ex.Status == topics.StatusCompileError {
		return decision{judge: JudgeTests}, nil
	}
	d := decision{compiles: true, judge: JudgeTests}
	if c.gate && !testsPassed(ex) {
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
		if v != Abstain {
			d.correct, d.judge = v == Correct, j.Name()
			return d, nil
		}
	}
	d.correct = testsPassed(ex)
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
//   - binary: 1 when judged correct, else 0;
//   - tiered: Tiers.NoCompile when it does not compile or parse,
//     Tiers.Correct when judged correct, Tiers.Wrong otherwise (it compiles
//     and runs but is wrong, including runtime errors and its own timeouts).
func Reward(policy string, tiers Tiers, ex *topics.Execution, compiles, correct bool) (float64, error) {
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
		if correct {
			return 1, nil
		}
		return 0, nil
	case topics.RewardTiered:
		switch {
		case !compiles:
			return tiers.NoCompile, nil
		case correct:
			return tiers.Correct, nil
		}
		return tiers.Wrong, nil
	}
	return 0, fmt.Errorf("unknown reward policy %q", policy)
}
