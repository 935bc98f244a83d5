package inject

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
)

// srcFile is a file's content with its line index.
type srcFile struct {
	path   string
	src    []byte
	starts []int
}

func newSrcFile(p string, src []byte) *srcFile {
	f := &srcFile{path: p, src: src, starts: []int{0}}
	for i, c := range src {
		if c == '\n' && i+1 < len(src) {
			f.starts = append(f.starts, i+1)
		}
	}
	return f
}

// line is the 1-based line of offset o.
func (f *srcFile) line(o int) int {
	return sort.Search(len(f.starts), func(i int) bool { return f.starts[i] > o })
}

// lastLine is the number of the last line with content.
func (f *srcFile) lastLine() int { return len(f.starts) }

// lineStart is the offset of the start of o's line.
func (f *srcFile) lineStart(o int) int { return f.starts[f.line(o)-1] }

// lineEnd is the offset just past the newline that ends o's line.
func (f *srcFile) lineEnd(o int) int {
	l := f.line(o)
	if l < len(f.starts) {
		return f.starts[l]
	}
	return len(f.src)
}

// text returns src[s:e].
func (f *srcFile) text(s, e int) string { return string(f.src[s:e]) }

// lineText is line n (1-based) without its newline.
func (f *srcFile) lineText(n int) string {
	if n < 1 || n > len(f.starts) {
		return ""
	}
	s := f.starts[n-1]
	e := len(f.src)
	if n < len(f.starts) {
		e = f.starts[n]
	}
	return strings.TrimRight(string(f.src[s:e]), "\r\n")
}

// blank reports whether line n is empty or whitespace.
func (f *srcFile) blank(n int) bool { return strings.TrimSpace(f.lineText(n)) == "" }

// wsBefore reports whether only blanks precede offset o on its line.
func (f *srcFile) wsBefore(o int) bool {
	return strings.TrimSpace(f.text(f.lineStart(o), o)) == ""
}

// restOfLine is the text from o to the end of its line, newline excluded.
func (f *srcFile) restOfLine(o int) string {
	return strings.TrimRight(f.text(o, f.lineEnd(o)), "\r\n")
}

// deleteLines is the edit that removes the whole lines from s's line to
// the line of e-1, and with them a blank line after when the line before
// is blank too (so that no double blank is left).
func (f *srcFile) deleteLines(s, e int) edit {
	ls, le := f.lineStart(s), f.lineEnd(max(e-1, s))
	first, last := f.line(ls), f.line(max(le-1, ls))
	if first > 1 && f.blank(first-1) && last < f.lastLine() && f.blank(last+1) {
		le = f.lineEnd(le)
	}
	return edit{start: ls, end: le}
}

// pick returns a random element index of n, or -1.
func pick(r *rand.Rand, n int) int {
	if n <= 0 {
		return -1
	}
	return r.IntN(n)
}

// lines renders line numbers for descriptions.
func lines(f *srcFile, offs []int) string {
	seen := map[int]bool{}
	var ls []int
	for _, o := range offs {
		if l := f.line(o); !seen[l] {
			seen[l] = true
			ls = append(ls, l)
		}
	}
	sort.Ints(ls)
	var b strings.Builder
	for i, l := range ls {
		if i == 5 {
			fmt.Fprintf(&b, ", ...")
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprint(&b, l)
	}
	return b.String()
}
