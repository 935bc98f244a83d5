package inject

import (
	"sort"
	"strings"

	"github.com/murphy-rl/murphy/compilefix/lang"
)

// edit replaces src[start:end] with text.
type edit struct {
	start, end int
	text       string
}

// plan is an operator's chosen change.
type plan struct {
	edits []edit
	// at is the offset (in the original) of the change.
	at int
	// expect are offsets in the original where the error should be
	// reported (mapped into the mutated file); expectNew are lines of the
	// mutated file, for what only exists there.
	expect    []int
	expectNew []int
	// expectEnd asks for the mutated file's last line too (a brace missing
	// until the end).
	expectEnd bool
	desc      string
}

func (pl *plan) mutation(op string, f *srcFile) *Mutation {
	es := append([]edit(nil), pl.edits...)
	sort.Slice(es, func(i, j int) bool { return es[i].start < es[j].start })
	var b strings.Builder
	pos := 0
	for _, e := range es {
		b.WriteString(string(f.src[pos:e.start]))
		b.WriteString(e.text)
		pos = e.end
	}
	b.WriteString(string(f.src[pos:]))
	nf := newSrcFile(f.path, []byte(b.String()))
	mapOff := func(o int) int {
		d := 0
		for _, e := range es {
			if o < e.start {
				break
			}
			if o < e.end || o == e.start {
				return e.start + d // inside what the edit replaced, or where it inserts
			}
			d += len(e.text) - (e.end - e.start)
		}
		return o + d
	}
	m := &Mutation{Operator: op, File: f.path, Description: pl.desc, Old: f.src, New: nf.src}
	m.Line = nf.line(min(mapOff(pl.at), max(len(nf.src)-1, 0)))
	set := map[int]bool{}
	for _, o := range pl.expect {
		set[nf.line(min(mapOff(o), max(len(nf.src)-1, 0)))] = true
	}
	for _, l := range pl.expectNew {
		set[l] = true
	}
	if pl.expectEnd {
		set[nf.lastLine()] = true
	}
	for l := range set {
		m.Expect = append(m.Expect, l)
	}
	sort.Ints(m.Expect)
	return m
}

// arityEdit changes a call's argument count: with add, a copy of the last
// argument appended (none, when there is no argument), else the last one
// dropped. open is the offset just past the call's "(", args the
// arguments' spans; how says what was done.
func arityEdit(f *srcFile, open int, args []lang.Span, none string, add bool) (e edit, how string) {
	n := len(args)
	switch {
	case add && n == 0:
		return edit{start: open, end: open, text: none}, "added an argument (" + none + ")"
	case add:
		last := args[n-1]
		arg := f.text(last.Start, last.End)
		return edit{start: last.End, end: last.End, text: ", " + arg}, "added an argument (" + arg + ")"
	}
	from := open
	if n > 1 {
		from = args[n-2].End
	}
	last := args[n-1]
	return edit{start: from, end: last.End}, "dropped the last argument (" + f.text(last.Start, last.End) + ")"
}
