package patch

import (
	"github.com/bluekeyes/go-gitdiff/gitdiff"
)

// ApplyText applies the hunks of one file's diff to that file's content
// held in memory, placed as Apply places them: at the stated line, else at
// the nearest offset where the context matches, else with up to fuzz lines
// of context ignored (0 = DefaultFuzz, negative = none). It is the applier
// for diffs compared outside a workspace (a judge applying a candidate to
// the program it repairs); the error is a *Error with CodeNoMatch.
func ApplyText(content string, f *gitdiff.File, fuzz int) (string, error) {
	opt := Options{Fuzz: fuzz}.withDefaults()
	out, _, err := (&tree{opt: opt}).hunks(f.NewName, []byte(content), f.TextFragments)
	if err != nil {
		return "", err
	}
	return string(out), nil
}
