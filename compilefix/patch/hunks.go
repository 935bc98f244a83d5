package patch

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
)

// splitLines splits b into lines that keep their "\n" (the last may lack
// it).
func splitLines(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	s := string(b)
	n := strings.Count(s, "\n")
	if !strings.HasSuffix(s, "\n") {
		n++
	}
	lines := make([]string, 0, n)
	for len(s) > 0 {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			lines = append(lines, s)
			break
		}
		lines = append(lines, s[:i+1])
		s = s[i+1:]
	}
	return lines
}

// hunkError is a hunk that cannot be placed; applyHunks's caller turns it
// into an *Error.
type hunkError struct {
	hunk   int // 1-based
	reason string
}

func (e *hunkError) Error() string { return fmt.Sprintf("hunk %d: %s", e.hunk, e.reason) }

// noMatch is applyHunks's error as an *Error about the file p.
func noMatch(p string, err error) *Error {
	var he *hunkError
	if errors.As(err, &he) {
		return &Error{Code: CodeNoMatch, Path: p, Hunk: he.hunk, Reason: he.reason}
	}
	return errf(CodeNoMatch, p, "%v", err)
}

// placement records where one hunk went.
type placement struct {
	offset int // lines from its stated position
	fuzz   int
}

// applier applies the hunks of one file in order, the way GNU patch does:
// each hunk is looked for at its stated line (shifted by the offset of the
// hunks before it), then at the nearest offset, preferring later lines on a
// tie, where its old lines and context match exactly; failing that with
// fuzz 1, then 2 (ignoring up to that many lines of leading and trailing
// context, never more than the hunk has). Context lines are copied from the
// file, so ignored context keeps the file's text.
type applier struct {
	in         []string
	out        []string
	lastFrozen int // lines of in already copied or consumed (1-based index of the last)
	inOffset   int
	// squashed is in with white space collapsed, for Options.IgnoreSpace.
	squashed []string
}

// applyHunks applies frags to content with opt's Fuzz, IgnoreSpace and
// AnyOrder (opt has its defaults).
func applyHunks(content []byte, frags []*gitdiff.TextFragment, opt Options) ([]byte, []placement, error) {
	a := &applier{in: splitLines(content)}
	if opt.IgnoreSpace {
		a.squashed = make([]string, len(a.in))
		for i, l := range a.in {
			a.squashed[i] = squashSpace(l)
		}
	}
	if opt.AnyOrder {
		frags = slices.Clone(frags)
		slices.SortStableFunc(frags, func(x, y *gitdiff.TextFragment) int { return cmp.Compare(x.OldPosition, y.OldPosition) })
	}
	places := make([]placement, 0, len(frags))
	for i, f := range frags {
		p, err := a.apply(i+1, f, opt.Fuzz)
		if err != nil {
			return nil, nil, err
		}
		places = append(places, p)
	}
	if err := a.copyTill(len(a.in)); err != nil {
		return nil, nil, &hunkError{hunk: len(frags), reason: err.Error()}
	}
	var b strings.Builder
	size := 0
	for _, l := range a.out {
		size += len(l) + 1
	}
	b.Grow(size)
	for i, l := range a.out {
		b.WriteString(l)
		if i < len(a.out)-1 && !strings.HasSuffix(l, "\n") {
			// A line that ended the file is no longer last.
			b.WriteByte('\n')
		}
	}
	return []byte(b.String()), places, nil
}

// copyTill copies input lines up to line k (1-based, inclusive).
func (a *applier) copyTill(k int) error {
	if k < a.lastFrozen {
		return fmt.Errorf("overlaps the hunk before it")
	}
	if k > len(a.in) {
		return fmt.Errorf("starts past the end of the file (%d lines)", len(a.in))
	}
	a.out = append(a.out, a.in[a.lastFrozen:k]...)
	a.lastFrozen = k
	return nil
}

type hunk struct {
	pattern []string // old lines: context and deletions, in order
	prefix  int      // context lines before the first change
	suffix  int      // context lines after the last change
	first   int      // 1-based line of the pattern's start in the old file
}

func newHunk(f *gitdiff.TextFragment) hunk {
	h := hunk{prefix: int(f.LeadingContext), suffix: int(f.TrailingContext), first: int(f.OldPosition)}
	for _, l := range f.Lines {
		if l.Op != gitdiff.OpAdd {
			h.pattern = append(h.pattern, l.Line)
		}
	}
	if len(h.pattern) == 0 {
		h.first++ // "@@ -N,0" inserts after line N
	}
	return h
}

func (a *applier) apply(num int, f *gitdiff.TextFragment, maxFuzz int) (placement, error) {
	h := newHunk(f)
	context := max(h.prefix, h.suffix)
	limit := min(maxFuzz, context)
	where, fuzz := 0, 0
	for fz := 0; fz <= limit; fz++ {
		if where = a.locate(h, fz); where != 0 {
			fuzz = fz
			break
		}
	}
	if where == 0 {
		return placement{}, &hunkError{hunk: num, reason: fmt.Sprintf("no match for context near line %d", f.OldPosition)}
	}
	old := 0
	for _, l := range f.Lines {
		switch l.Op {
		case gitdiff.OpContext:
			old++
		case gitdiff.OpDelete:
			if err := a.copyTill(where + old - 1); err != nil {
				return placement{}, &hunkError{hunk: num, reason: err.Error()}
			}
			a.lastFrozen++
			old++
		case gitdiff.OpAdd:
			if err := a.copyTill(where + old - 1); err != nil {
				return placement{}, &hunkError{hunk: num, reason: err.Error()}
			}
			a.out = append(a.out, l.Line)
		}
	}
	return placement{offset: where - h.first, fuzz: fuzz}, nil
}

// locate mirrors GNU patch's locate_hunk: it returns the 1-based line where
// the hunk's pattern starts, or 0.
func (a *applier) locate(h hunk, fuzz int) int {
	n := len(a.in)
	firstGuess := h.first + a.inOffset
	patLines := len(h.pattern)
	context := max(h.prefix, h.suffix)
	prefixFuzz := fuzz + h.prefix - context
	suffixFuzz := fuzz + h.suffix - context
	maxWhere := n - (patLines - suffixFuzz) + 1
	minWhere := a.lastFrozen + 1 - (h.prefix - prefixFuzz)
	maxPos := maxWhere - firstGuess
	maxNeg := firstGuess - minWhere
	maxOff := max(maxPos, maxNeg)

	if patLines == 0 { // a pure insertion matches anywhere
		return firstGuess
	}
	if firstGuess <= maxNeg { // never try lines <= 0
		maxNeg = firstGuess - 1
	}
	if prefixFuzz < 0 && h.first <= 1 {
		// Less leading than trailing context: only the start of the file.
		if suffixFuzz < 0 && (patLines != n || h.prefix < a.lastFrozen) {
			return 0 // only the whole file, and it is not
		}
		off := 1 - firstGuess
		if a.lastFrozen <= h.prefix && off <= maxPos && a.match(h, firstGuess+off, 0, suffixFuzz) {
			a.inOffset += off
			return firstGuess + off
		}
		return 0
	} else if prefixFuzz < 0 {
		prefixFuzz = 0
	}
	if suffixFuzz < 0 {
		// Less trailing than leading context: only the end of the file.
		off := firstGuess - (n - patLines + 1)
		if off <= maxNeg && a.match(h, firstGuess-off, prefixFuzz, 0) {
			a.inOffset -= off
			return firstGuess - off
		}
		return 0
	}
	minOff := 0
	if maxPos < 0 {
		minOff = firstGuess - maxWhere
	} else if maxNeg < 0 {
		minOff = firstGuess - minWhere
	}
	for off := minOff; off <= maxOff; off++ {
		if off <= maxPos && a.match(h, firstGuess+off, prefixFuzz, suffixFuzz) {
			a.inOffset += off
			return firstGuess + off
		}
		if off <= maxNeg && a.match(h, firstGuess-off, prefixFuzz, suffixFuzz) {
			a.inOffset -= off
			return firstGuess - off
		}
	}
	return 0
}

// match reports whether the pattern, less prefixFuzz leading and suffixFuzz
// trailing lines, matches the input with its first line at pos.
func (a *applier) match(h hunk, pos, prefixFuzz, suffixFuzz int) bool {
	for p := prefixFuzz; p < len(h.pattern)-suffixFuzz; p++ {
		i := pos + p - 1 // 0-based input index
		if i < 0 || i >= len(a.in) {
			return false
		}
		if a.squashed != nil {
			if a.squashed[i] != squashSpace(h.pattern[p]) {
				return false
			}
		} else if a.in[i] != h.pattern[p] {
			return false
		}
	}
	return true
}

// squashSpace is a line with runs of white space collapsed to one space
// and its ends trimmed.
func squashSpace(l string) string { return strings.Join(strings.Fields(l), " ") }
