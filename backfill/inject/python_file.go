package inject

import "github.com/murphy-rl/murphy/compilefix/lang"

// pyCompound are the keywords of the compound statements whose header ends
// in a colon.
var pyCompound = map[string]bool{"if": true, "elif": true, "else": true, "for": true, "while": true, "with": true,
	"try": true, "except": true, "finally": true, "def": true, "class": true}

// pyline is a logical line: code tokens [s, e), its end token at e.
type pyline struct {
	s, e, indent int
}

type pydef struct {
	line, deco, end int // indexes in lines: the def, its first decorator, its last body line
	name            string
	nameTok         int
	open, close     int
	params          []string // plain parameter names, in order
	simple          bool     // only plain positional parameters
	method          bool
}

// pyfile is a Python file as the operators see it: compilefix/lang's code
// tokens (logical line ends included), logical lines and definitions.
type pyfile struct {
	*srcFile
	lf    *lang.File
	code  []lang.Token
	lines []pyline
	names map[string]bool
	defs  []*pydef
}

func newPyFile(f *srcFile) *pyfile {
	lf, err := lang.Parse(lang.Python, f.src)
	if err != nil {
		panic(err) // Python is always supported
	}
	p := &pyfile{srcFile: f, lf: lf, code: lf.Code, names: lf.Names()}
	for _, l := range lf.LogicalLines() {
		p.lines = append(p.lines, pyline{s: l.First, e: l.End, indent: l.Indent})
	}
	for _, fn := range lf.Functions() {
		if d := p.def(&fn); d != nil {
			p.defs = append(p.defs, d)
		}
	}
	return p
}

// def indexes a function by code token and logical line, nil when its
// tokens cannot be found (a parse that recovered from an error).
func (p *pyfile) def(fn *lang.Function) *pydef {
	d := &pydef{name: fn.Name, nameTok: p.lf.CodeAt(fn.NameAt.Start), open: p.lf.CodeAt(fn.Params.Start), method: fn.Method, simple: true}
	first, _ := p.lf.CodeIn(fn.Span)
	_, last := p.lf.CodeIn(fn.Span)
	if d.nameTok < 0 || d.open < 0 || p.match(d.open) < 0 || last <= first {
		return nil
	}
	d.close = p.match(d.open)
	d.line, d.deco, d.end = p.lineOf(d.nameTok), p.lineOf(first), p.lineOf(last-1)
	if d.line < 0 || d.deco < 0 || d.end < 0 {
		return nil
	}
	for _, pm := range fn.Parameters {
		if pm.Default || pm.Rest || pm.Marker {
			d.simple = false // defaults, *args, **kw, the / and * markers
		}
		if pm.Name != "" && !pm.Rest {
			d.params = append(d.params, pm.Name)
		}
	}
	return d
}

// is reports whether code token i is the punctuator s.
func (p *pyfile) is(i int, s string) bool {
	return i >= 0 && i < len(p.code) && p.code[i].Kind == lang.Punct && p.code[i].Text == s
}

// word reports whether code token i is an identifier or a keyword.
func (p *pyfile) word(i int) bool {
	return i >= 0 && i < len(p.code) && (p.code[i].Kind == lang.Ident || p.code[i].Kind == lang.Keyword)
}

func (p *pyfile) match(i int) int { return p.lf.Match(i) }

// groups splits the tokens between brackets open and close at their
// top-level commas (an empty last group, a trailing comma, is left out).
func (p *pyfile) groups(open, close int) [][2]int {
	var out [][2]int
	s := open + 1
	for k := open + 1; k < close; k++ {
		if m := p.match(k); m > k {
			k = m
			continue
		}
		if p.is(k, ",") {
			out = append(out, [2]int{s, k})
			s = k + 1
		}
	}
	if s < close {
		out = append(out, [2]int{s, close})
	}
	return out
}

func (p *pyfile) tok(i int) lang.Token { return p.code[i] }

func (p *pyfile) taken(s string) bool { return p.names[s] || lang.IsReserved(lang.Python, s) }

// lineOf is the logical line holding code token i (-1 for none).
func (p *pyfile) lineOf(i int) int {
	for li, l := range p.lines {
		if i >= l.s && i <= l.e {
			return li
		}
	}
	return -1
}

// span is the byte range of logical lines [a, b] as whole physical lines.
func (p *pyfile) span(a, b int) (int, int) {
	s := p.lineStart(p.tok(p.lines[a].s).Start)
	end := p.tok(p.lines[b].e)
	if end.Start >= len(p.srcFile.src) {
		return s, len(p.srcFile.src)
	}
	return s, p.lineEnd(end.Start)
}

// alone reports whether logical line li is the only statement on its
// physical lines.
func (p *pyfile) alone(li int) bool {
	l := p.lines[li]
	if !p.wsBefore(p.tok(l.s).Start) {
		return false
	}
	for k := l.s; k < l.e; k++ {
		if p.is(k, ";") {
			return false
		}
	}
	return true
}

func (p *pyfile) kwarg(i int) bool {
	return p.lf.Depth(i) > 0 && p.is(i+1, "=") && (p.is(i-1, "(") || p.is(i-1, ","))
}

// loads are the tokens naming s that read it: not attributes, keyword
// arguments, assignment targets, parameters or definitions.
func (p *pyfile) loads(s string, lo, hi int, skipLines map[int]bool) []int {
	var out []int
	params := map[int]bool{}
	for _, d := range p.defs {
		params[d.nameTok] = true
		for _, g := range p.groups(d.open, d.close) {
			params[g[0]] = true
		}
	}
	for li, l := range p.lines {
		if skipLines[li] {
			continue
		}
		first := p.tok(l.s).Text
		if first == "import" || first == "from" || first == "global" || first == "nonlocal" {
			continue
		}
		for i := l.s; i < l.e; i++ {
			t := p.tok(i)
			if t.Kind != lang.Ident || t.Text != s || (i >= lo && i < hi) || params[i] || p.is(i-1, ".") || p.kwarg(i) ||
				(i == l.s && (p.is(i+1, "=") || p.is(i+1, ":"))) || (p.word(i-1) && p.tok(i-1).Text == "class") {
				continue
			}
			out = append(out, t.Start)
		}
	}
	return out
}
