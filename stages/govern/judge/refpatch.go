package judge

import (
	"context"
	"slices"
	"strings"

	"github.com/murphy-rl/murphy/topics"
)

// ReferencePatch compares the candidate with the task's reference
// patch (topics.Task.ReferencePatch), for repair tasks. The comparison is
// deterministic and token-level (see PatchesEquivalent):
//
//   - a unified diff against a unified diff: the same changes, file by file,
//     whatever the hunk order, the context lines, the line numbers, the
//     spacing, the line wrapping inside brackets, trailing commas and
//     comments;
//   - a whole program against a reference diff: the candidate is compared
//     with the program the reference makes when applied to the original
//     (Original), or with the task's reference solution (Task.Reference)
//     when the reference diff, applied in reverse, fits it; with neither
//     there is nothing to compare with and the judge abstains;
//   - a diff against a whole reference program: the candidate diff is
//     applied to the original, when there is one (else abstain);
//   - two whole programs: their token sequences.
//
// Diffs are applied as execute applies candidates (compilefix/patch: the
// stated line, the nearest offset, up to two lines of context fuzz).
//
// Equal is Correct; different is Wrong, or Abstain with MismatchAbstains
// (the default in Config: another fix may be valid too, let the next judge
// or the tests decide). A task without a reference patch gets Abstain.
type ReferencePatch struct {
	MismatchAbstains bool
	// Original returns the program the task's patches apply to (the
	// failing program of a repair task), "" when unknown. nil: only what
	// the task record implies (the reference solution with the reference
	// patch undone).
	Original func(task *topics.Task, ex *topics.Execution) string
}

// Name implements Judge.
func (ReferencePatch) Name() string { return NameReferencePatch }

// Judge implements Judge.
func (j ReferencePatch) Judge(_ context.Context, task *topics.Task, ex *topics.Execution) (Verdict, error) {
	if task == nil || strings.TrimSpace(task.ReferencePatch) == "" {
		return Abstain, nil
	}
	original := ""
	if j.Original != nil {
		original = j.Original(task, ex)
	}
	switch compareWithReference(task, ex.Code, original) {
	case cmpEqual:
		return Correct, nil
	case cmpUnknown:
		return Abstain, nil
	}
	if j.MismatchAbstains {
		return Abstain, nil
	}
	return Wrong, nil
}

type comparison int

const (
	cmpUnknown   comparison = iota // nothing to compare with
	cmpEqual                       // equivalent
	cmpDifferent                   // compared, and different
)

func equality(eq bool) comparison {
	if eq {
		return cmpEqual
	}
	return cmpDifferent
}

// compareWithReference compares a candidate (a diff or a whole program)
// with the task's reference patch, given the original program ("" when
// unknown).
func compareWithReference(task *topics.Task, code, original string) comparison {
	refFiles, refIsDiff := parsePatch(task.ReferencePatch)
	candFiles, candIsDiff := parsePatch(code)
	// fixed is the reference's result as a whole program, where known.
	fixed := ""
	if !refIsDiff {
		fixed = task.ReferencePatch
	} else {
		if original != "" {
			fixed, _ = applyOne(refFiles, original)
		}
		if fixed == "" && strings.TrimSpace(task.Reference) != "" && !looksLikeDiff(task.Reference) {
			// The reference solution is the fixed program when the reference
			// patch, undone, fits it; undoing it yields the original.
			if o, ok := applyOne(reverseFiles(refFiles), task.Reference); ok {
				fixed = task.Reference
				if original == "" {
					original = o
				}
			}
		}
	}
	pl := programLang(task.Kind, fixed+"\n"+code, refFiles, candFiles)
	switch {
	case refIsDiff && candIsDiff:
		if diffsEquivalent(refFiles, candFiles) {
			return cmpEqual
		}
		if original != "" && fixed != "" {
			if got, ok := applyOne(candFiles, original); ok && sameProgram(got, fixed, pl) {
				return cmpEqual
			}
		}
		return cmpDifferent
	case candIsDiff: // against a whole reference program
		if original == "" {
			return cmpUnknown
		}
		got, ok := applyOne(candFiles, original)
		return equality(ok && sameProgram(got, fixed, pl))
	default: // a whole candidate program
		if fixed == "" {
			return cmpUnknown
		}
		return equality(sameProgram(code, fixed, pl))
	}
}

func sameProgram(a, b string, pl progLang) bool {
	return slices.Equal(tokensFor(a, pl.kind, pl.src, false), tokensFor(b, pl.kind, pl.src, false))
}

// PatchesEquivalent reports whether two unified diffs make the same changes,
// or two whole programs are the same program, compared token by token:
//
//   - tokens are identifiers, numbers, string literals (kept verbatim),
//     operators (longest match, so i++ + j differs from i + ++j) and
//     brackets; white space between them does not matter, nor do line breaks
//     inside brackets, a trailing comma before a closing bracket (kept in a
//     one-element tuple), or comments (# for Python and shell-like files,
//     // and /* */ for C, C++, Go, Java, JavaScript, Rust, ...); the
//     language comes from the file names of the diff, else from the code;
//   - Python keeps its line structure: a logical line's indentation is a
//     token (its column in a diff, its block level in a whole program);
//     other line-oriented files keep their line ends;
//   - a diff is compared file by file (a/ and b/ prefixes dropped); each
//     hunk becomes the token-level edits between its old and its new side,
//     each with the old tokens before and after it in the hunk. Two diffs are
//     equivalent when their edits pair up, whatever the hunk order: equal
//     removed and inserted tokens, and surrounding tokens that agree as far
//     as both hunks reach (so context lines and line numbers do not matter).
//
// A diff and a whole program are never equivalent (ReferencePatch
// compares them by applying the diff).
func PatchesEquivalent(a, b string) bool {
	fa, da := parsePatch(a)
	fb, db := parsePatch(b)
	switch {
	case da && db:
		return diffsEquivalent(fa, fb)
	case !da && !db:
		return sameProgram(a, b, guessedLang(a+"\n"+b))
	}
	return false
}
