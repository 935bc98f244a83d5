package diag

import (
	"regexp"
	"sort"
	"strings"

	"github.com/murphy-rl/murphy/topics"
)

// Matching tolerances (lines).
const (
	// LineTolerance is how far apart two diagnostics with the same
	// message may be and still match pairwise (Match). Compare also pairs
	// equal messages farther apart, nearest first after correcting for the
	// shift of the unambiguous pairs around them.
	LineTolerance = 10
	// codeLineTolerance is how far apart two diagnostics with the same
	// code but different messages may be ("Type 'string' is not
	// assignable..." becoming "Type 'number' is not assignable...").
	codeLineTolerance = 3
)

// Comparison is the outcome of comparing a patched build with its targets
// and the unpatched baseline.
type Comparison struct {
	// FixedTargets are the targets (as given) the patched build no longer
	// reports.
	FixedTargets []topics.Diagnostic
	// RemainingTargets are, for each target still reported, the patched
	// build's diagnostic for it (its current location), in target order.
	RemainingTargets []topics.Diagnostic
	// New are the patched build's errors that match no baseline
	// diagnostic and no remaining target.
	New []topics.Diagnostic
}

// Errors returns the diagnostics of severity error.
func Errors(ds []topics.Diagnostic) []topics.Diagnostic {
	var out []topics.Diagnostic
	for _, d := range ds {
		if d.Severity == SeverityError {
			out = append(out, d)
		}
	}
	return out
}

// InScope returns the diagnostics whose file is under one of scope's
// workspace paths (files or directories); an empty scope keeps all, and
// diagnostics without a file are kept.
func InScope(ds []topics.Diagnostic, scope []string) []topics.Diagnostic {
	if len(scope) == 0 {
		return ds
	}
	var out []topics.Diagnostic
	for _, d := range ds {
		if d.File == "" {
			out = append(out, d)
			continue
		}
		f := pathParts(d.File)
		for _, s := range scope {
			p := pathParts(s)
			if len(p) == 0 || len(p) <= len(f) && sameFile(p, f[:len(p)]) {
				out = append(out, d)
				break
			}
		}
	}
	return out
}

// Match reports whether a and b are the same diagnostic as far as can be
// told: compatible files (one path a suffix of the other: "src/a.c",
// "/work/src/a.c"), severities and codes (equal or one missing), and
// either the same normalised message (quotes, blanks, case, "error:"
// prefixes and option brackets aside), one message containing the other,
// within LineTolerance lines (or either line unknown), or the same code
// with a different message within a few lines. The tool is ignored.
func Match(a, b topics.Diagnostic) bool {
	na, nb := newNorm(a), newNorm(b)
	t := tier(&na, &nb)
	if t < 0 {
		return false
	}
	if a.Line == 0 || b.Line == 0 {
		return t <= tierSub
	}
	d := abs(a.Line - b.Line)
	if t == tierCode {
		return d <= codeLineTolerance
	}
	return d <= LineTolerance
}

// Compare compares a patched build with the targets (diagnostics a failing
// log named: Line may be 0, Code empty, Message a part of the compiler's or
// differently quoted) and the baseline (the unpatched build, parsed).
//
// Baseline and patched diagnostics are aligned one to one: equal messages
// first where they pair unambiguously, then nearest first after correcting
// for the line shift those pairs show, contained messages within
// LineTolerance (or when unambiguous), equal codes within a few lines.
// Targets are aligned with the baseline the same way: a target remains
// when its baseline diagnostic has a patched counterpart; a target the
// baseline lacks is matched with the patched build directly. New are the
// patched errors left over.
func Compare(targets, baseline, patched []topics.Diagnostic) Comparison {
	nt, nb, np := norms(targets), norms(baseline), norms(patched)
	bp := align(nb, np)
	tb := align(nt, nb)
	claimed := make([]bool, len(patched))
	for _, j := range bp {
		if j >= 0 {
			claimed[j] = true
		}
	}
	remaining := make([]int, len(targets)) // patched index or -1
	var lost []int                         // targets the baseline lacks
	for i := range targets {
		remaining[i] = -1
		if b := tb[i]; b >= 0 {
			remaining[i] = bp[b]
		} else {
			lost = append(lost, i)
		}
	}
	if len(lost) > 0 {
		sub := make([]norm, len(lost))
		for k, i := range lost {
			sub[k] = nt[i]
		}
		for k, j := range align(sub, np) {
			if j >= 0 {
				remaining[lost[k]] = j
				claimed[j] = true
			}
		}
	}
	var c Comparison
	for i, j := range remaining {
		if j >= 0 {
			c.RemainingTargets = append(c.RemainingTargets, patched[j])
		} else {
			c.FixedTargets = append(c.FixedTargets, targets[i])
		}
	}
	for j, d := range patched {
		if !claimed[j] && d.Severity == SeverityError {
			c.New = append(c.New, d)
		}
	}
	return c
}

// norm is a diagnostic prepared for matching.
type norm struct {
	file  []string
	base  string
	line  int
	sev   string
	code  string
	msg   string
	noMsg bool
}

func norms(ds []topics.Diagnostic) []norm {
	out := make([]norm, len(ds))
	for i, d := range ds {
		out[i] = newNorm(d)
	}
	return out
}

func newNorm(d topics.Diagnostic) norm {
	n := norm{
		file: pathParts(d.File),
		line: d.Line,
		sev:  strings.ToLower(strings.TrimSpace(d.Severity)),
		code: normCode(d.Code),
	}
	if n.line < 0 {
		n.line = 0
	}
	if len(n.file) > 0 {
		n.base = n.file[len(n.file)-1]
	}
	if n.sev == "fatal" || n.sev == "fatal error" {
		n.sev = SeverityError
	}
	n.msg = NormalizeMessage(d.Message, d.Code)
	n.noMsg = n.msg == ""
	return n
}

func normCode(c string) string {
	c = strings.ToLower(strings.TrimSpace(c))
	c = strings.Trim(c, "[]")
	if rest, ok := strings.CutPrefix(c, "-werror="); ok {
		c = "-w" + rest
	}
	return c
}

var (
	quoteReplacer = strings.NewReplacer(
		"‘", "'", "’", "'", "‚", "'", "‛", "'", "′", "'", "`", "'", "´", "'",
		"“", "'", "”", "'", "„", "'", "‟", "'", "″", "'", `"`, "'", "«", "'", "»", "'",
	)
	// msgPrefixRE matches the severity and code a message may carry in
	// front when copied from a log line ("error[E0425]: ", "fatal error: ",
	// "error TS2304: ", "SyntaxError: ").
	msgPrefixRE = regexp.MustCompile(`^(?:(?:fatal )?(?:error|warning|note|e|w)(?:\[[^\]]*\]| ts\d+)?: |ts\d+: |e\d{4}: )`)
	// msgSuffixRE matches trailing option brackets and punctuation.
	msgSuffixRE = regexp.MustCompile(`(?:\s*\[(?:-w[^\]]*|cwe-\d+)\])+$|[.\s]+$`)
)

// NormalizeMessage returns the form of a message that matching compares:
// escapes stripped, all quote styles (‘x’ 'x' `x' "x") made ', blanks
// collapsed, lower case, a leading severity/code ("error[E0425]: ",
// "SyntaxError: " when code names it) and trailing option brackets and
// full stops removed.
func NormalizeMessage(msg, code string) string {
	s := StripANSI(msg)
	s = quoteReplacer.Replace(s)
	s = strings.ToLower(strings.Join(strings.Fields(s), " "))
	c := normCode(code)
	for i := 0; i < 3; i++ {
		t := msgPrefixRE.ReplaceAllString(s, "")
		if c != "" {
			t = strings.TrimPrefix(t, c+": ")
		}
		if t == s {
			break
		}
		s = t
	}
	for i := 0; i < 3; i++ {
		t := msgSuffixRE.ReplaceAllString(s, "")
		if t == s {
			break
		}
		s = t
	}
	return s
}

// Match tiers, best first.
const (
	tierExact = iota // same normalised message
	tierSub          // one message contains the other
	tierCode         // same code, different message
)

// minSub is the shortest message that may match as a part of another.
const minSub = 8

// tier returns how a and b match, -1 when they cannot be the same.
func tier(a, b *norm) int {
	if a.sev != "" && b.sev != "" && a.sev != b.sev {
		return -1
	}
	if a.code != "" && b.code != "" && a.code != b.code {
		return -1
	}
	known := len(a.file) > 0 && len(b.file) > 0
	if known && (a.base != b.base || !sameFile(a.file, b.file)) {
		return -1
	}
	switch {
	case !a.noMsg && a.msg == b.msg:
		return tierExact
	case contains(a.msg, b.msg) || contains(b.msg, a.msg):
		return tierSub
	case known && a.code != "" && a.code == b.code:
		return tierCode
	}
	return -1
}

// contains reports whether long contains short (at least minSub bytes)
// at word boundaries.
func contains(long, short string) bool {
	if len(short) < minSub || len(short) >= len(long) {
		return false
	}
	for off := 0; ; {
		i := strings.Index(long[off:], short)
		if i < 0 {
			return false
		}
		i += off
		end := i + len(short)
		okL := i == 0 || !isWordByte(long[i-1]) || !isWordByte(short[0])
		okR := end == len(long) || !isWordByte(long[end]) || !isWordByte(short[len(short)-1])
		if okL && okR {
			return true
		}
		off = i + 1
	}
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// pair is a candidate match of a[i] and b[j].
type pair struct {
	i, j, tier, dist int
}

// align matches a to b one to one; the result gives, for each a[i], the
// index of its match in b or -1.
func align(a, b []norm) []int {
	res := make([]int, len(a))
	for i := range res {
		res[i] = -1
	}
	if len(a) == 0 || len(b) == 0 {
		return res
	}
	pairs := candidatePairs(a, b)
	usedB := make([]bool, len(b))
	// 1. Anchors: equal messages that pair only with each other.
	anchors := matchAnchors(a, b, pairs, res, usedB)
	// 2. The rest, best tier and nearest first.
	rest := nearPairs(a, b, pairs, res, usedB, anchors)
	sort.SliceStable(rest, func(x, y int) bool {
		p, q := rest[x], rest[y]
		if p.tier != q.tier {
			return p.tier < q.tier
		}
		if p.dist != q.dist {
			return p.dist < q.dist
		}
		if p.i != q.i {
			return p.i < q.i
		}
		return p.j < q.j
	})
	for _, p := range rest {
		if res[p.i] < 0 && !usedB[p.j] {
			res[p.i], usedB[p.j] = p.j, true
		}
	}
	return res
}

// candidatePairs are the pairs of a and b of some tier, looked up by base
// name to keep this near linear.
func candidatePairs(a, b []norm) []pair {
	byBase := map[string][]int{}
	for j := range b {
		byBase[b[j].base] = append(byBase[b[j].base], j)
	}
	var pairs []pair
	for i := range a {
		var js []int
		if a[i].base == "" {
			js = make([]int, len(b))
			for j := range js {
				js[j] = j
			}
		} else {
			js = append(append(js, byBase[a[i].base]...), byBase[""]...)
		}
		for _, j := range js {
			if t := tier(&a[i], &b[j]); t >= 0 {
				pairs = append(pairs, pair{i: i, j: j, tier: t})
			}
		}
	}
	return pairs
}

// anchor is a line of a matched exactly, and how far its match in b moved.
type anchor struct{ line, shift int }

// anchors are each file's anchors, by line.
type anchors map[string][]anchor

// shift estimates how far a line of a moved in b: the shift of the
// nearest anchor above it (below it when there is none above).
func (an anchors) shift(file []string, line int) int {
	as := an[strings.Join(file, "/")]
	if len(as) == 0 {
		return 0
	}
	k := sort.Search(len(as), func(x int) bool { return as[x].line > line })
	if k == 0 {
		return as[0].shift
	}
	return as[k-1].shift
}

// matchAnchors matches, in res and usedB, the exact pairs whose members
// pair exactly with nothing else, and returns them as anchors.
func matchAnchors(a, b []norm, pairs []pair, res []int, usedB []bool) anchors {
	nA, nB := map[int]int{}, map[int]int{}
	for _, p := range pairs {
		if p.tier == tierExact {
			nA[p.i]++
			nB[p.j]++
		}
	}
	an := anchors{}
	for _, p := range pairs {
		if p.tier == tierExact && nA[p.i] == 1 && nB[p.j] == 1 && res[p.i] < 0 && !usedB[p.j] {
			res[p.i], usedB[p.j] = p.j, true
			if a[p.i].line > 0 && b[p.j].line > 0 {
				k := strings.Join(b[p.j].file, "/")
				an[k] = append(an[k], anchor{a[p.i].line, b[p.j].line - a[p.i].line})
			}
		}
	}
	for _, as := range an {
		sort.Slice(as, func(x, y int) bool { return as[x].line < as[y].line })
	}
	return an
}

// nearPairs are the pairs still open, with their distance after the
// anchors' shift; a substring pair far off is kept only when neither
// member has another, a code pair only within codeLineTolerance. It
// filters pairs in place.
func nearPairs(a, b []norm, pairs []pair, res []int, usedB []bool, an anchors) []pair {
	subA, subB := map[int]int{}, map[int]int{}
	for _, p := range pairs {
		if p.tier <= tierSub {
			subA[p.i]++
			subB[p.j]++
		}
	}
	rest := pairs[:0]
	for _, p := range pairs {
		if res[p.i] >= 0 || usedB[p.j] {
			continue
		}
		ai, bj := &a[p.i], &b[p.j]
		if ai.line == 0 || bj.line == 0 {
			p.dist = LineTolerance
		} else {
			p.dist = abs(bj.line - (ai.line + an.shift(bj.file, ai.line)))
		}
		switch p.tier {
		case tierSub:
			if p.dist > LineTolerance && (subA[p.i] > 1 || subB[p.j] > 1) {
				continue
			}
		case tierCode:
			if p.dist > codeLineTolerance || ai.line == 0 || bj.line == 0 {
				continue
			}
		}
		rest = append(rest, p)
	}
	return rest
}
