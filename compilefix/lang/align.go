package lang

import "github.com/pmezard/go-difflib/difflib"

// Change is a difference between two token sequences: a[A1:A2] replaced
// by b[B1:B2] (an insertion when A1 == A2, a deletion when B1 == B2).
type Change struct{ A1, A2, B1, B2 int }

// Changes are the differences that turn a into b, in order, as
// go-difflib's SequenceMatcher aligns them: the longest matching blocks
// first, every token counted (no junk heuristics, which would drop the
// tokens code repeats most, brackets and separators).
func Changes(a, b []string) []Change {
	m := difflib.NewMatcherWithJunk(a, b, false, nil)
	var out []Change
	for _, op := range m.GetOpCodes() {
		if op.Tag != 'e' {
			out = append(out, Change{A1: op.I1, A2: op.I2, B1: op.J1, B2: op.J2})
		}
	}
	return out
}
