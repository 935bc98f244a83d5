// Package cilog reads CI job logs: it removes the CI service's wrapping
// (GitHub Actions raw logs and `gh run view --log`, GitLab, Travis,
// Jenkins, Buildkite, plain), follows steps and their failures, finds the
// diagnostics of compilers, build tools and test runners with their raw
// line ranges, and names the failure's cause. Logs are streamed: memory is
// bounded by a chunk of lines, whatever the log's size. See PARSE.md.
package cilog

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/murphy-rl/murphy/compilefix/diag"
)

// Options tune a parse.
type Options struct {
	// Warnings keeps warning-severity compiler diagnostics (errors only by
	// default: a failed log's warnings are rarely what failed it).
	Warnings bool
}

// Chunk bounds: diagnostics are parsed over chunks of consecutive lines of
// one step; a chunk is cut at a step's end or at these sizes.
const (
	chunkLines = 20000
	chunkBytes = 4 << 20
	// detectLines are read ahead to recognise the CI service.
	detectLines = 200
)

// ParseFile parses the CI log (or JUnit XML report) at path; gzip, zstd
// and bzip2 are read through.
func ParseFile(path string) (*Report, error) { return ParseFileWith(path, Options{}) }

// ParseFileWith is ParseFile with options.
func ParseFileWith(path string, opt Options) (*Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return nil, fmt.Errorf("%s: is a directory", path)
	}
	return ParseWith(f, path, opt)
}

// Parse parses a CI log read from r; name is the Report's File.
func Parse(r io.Reader, name string) (*Report, error) { return ParseWith(r, name, Options{}) }

// ParseWith is Parse with options. On a read error (a truncated gzip
// stream) the report of what was read comes back with the error.
func ParseWith(r io.Reader, name string, opt Options) (*Report, error) {
	rd, _, closeFn, err := open(r)
	if err != nil {
		return nil, err
	}
	defer closeFn()
	br := bufio.NewReaderSize(rd, 64<<10)
	if start, _ := br.Peek(512); isJUnit(start) {
		return parseJUnit(br, name)
	}
	p := &parser{opt: opt, rep: &Report{File: name, Steps: []Step{}, Diagnostics: []Diagnostic{}}, fold: map[foldKey]int{}}
	lr := newLineReader(br)
	var ahead []string
	bk := false
	for len(ahead) < detectLines {
		l, ok := lr.next()
		if !ok {
			break
		}
		if bytes.Contains(l, []byte("\x1b_bk;t=")) {
			bk = true
		}
		ahead = append(ahead, string(l))
	}
	if lr.err != nil && len(ahead) == 0 {
		return nil, lr.err
	}
	ci := detect(ahead)
	if bk && ci == CIPlain {
		ci = CIBuildkite
	}
	p.rep.CI = ci
	p.dec = newDecoder(ci)
	for i, l := range ahead {
		p.line(l, i+1)
	}
	for n := len(ahead) + 1; ; n++ {
		l, ok := lr.next()
		if !ok {
			break
		}
		p.line(string(l), n)
	}
	p.flush()
	p.finish(lr.n)
	if lr.err != nil {
		return p.rep, fmt.Errorf("read after line %d: %w", lr.n, lr.err)
	}
	return p.rep, nil
}

type foldKey struct {
	tool, severity, file string
	line                 int
	message              string
}

type parser struct {
	opt   Options
	rep   *Report
	dec   *decoder
	fold  map[foldKey]int
	ev    evidence
	chunk chunk
}

// chunk is consecutive build-output lines of one step.
type chunk struct {
	texts     []string
	nums      []int
	annotated []bool
	step      string
	bytes     int
}

func (p *parser) line(raw string, n int) {
	text, ok := p.dec.decode(raw, n)
	step := p.dec.steps.current()
	if step != p.chunk.step || len(p.chunk.texts) >= chunkLines || p.chunk.bytes >= chunkBytes {
		p.flush()
		p.chunk.step = step
	}
	if !ok {
		return
	}
	p.ev.line(text)
	annotated := strings.Contains(raw, "##[error]") && (strings.HasPrefix(cleanLine(raw), "##[error]") || strings.Contains(raw, "\t##[error]") || strings.Contains(raw, "Z ##[error]"))
	if strings.HasPrefix(text, `{"`) && strings.Contains(text, `"Action":`) {
		if outs, isEvent := diag.GoJSONOutput(text); isEvent {
			for _, o := range outs {
				p.add(o, n, false)
			}
			return
		}
	}
	p.add(text, n, annotated)
}

func (p *parser) add(text string, n int, annotated bool) {
	c := &p.chunk
	c.texts = append(c.texts, text)
	c.nums = append(c.nums, n)
	c.annotated = append(c.annotated, annotated)
	c.bytes += len(text)
}

// flush finds the diagnostics of the current chunk.
func (p *parser) flush() {
	c := &p.chunk
	if len(c.texts) == 0 {
		return
	}
	defer func() {
		c.texts, c.nums, c.annotated, c.bytes = c.texts[:0], c.nums[:0], c.annotated[:0], 0
	}()
	bl := blocks(c.texts, c.annotated)
	at := map[int]int{}
	for i, b := range bl {
		at[b.start] = i
	}
	used := make([]bool, len(bl))
	type found struct {
		d      Diagnostic
		ranges [][2]int
	}
	var out []found
	sub, origin := compilerWindows(c.texts)
	for _, loc := range diag.ParseLines("", sub, "") {
		for k, pos := range loc.Lines {
			loc.Lines[k] = origin[pos]
		}
		if loc.Severity != diag.SeverityError && !p.opt.Warnings {
			continue
		}
		f := found{d: Diagnostic{Diagnostic: loc.Diagnostic}}
		if strings.HasPrefix(c.texts[loc.Lines[0]], "vet: ") {
			f.d.Tool = toolGoVet
		}
		for _, pos := range loc.Lines {
			end := continuation(c.texts, pos, true)
			if bi, ok := at[pos]; ok && !used[bi] {
				used[bi] = true
				end = max(end, bl[bi].end)
				if b := bl[bi]; b.tool == toolMypy || b.tool == toolPyLint {
					// type checkers and linters in a compiler's format
					f.d.Tool = b.tool
					if f.d.Code == "" {
						f.d.Code = b.code
					}
				}
			} else if bi := enclosing(bl, pos); bi >= 0 && bl[bi].absorb && !used[bi] {
				used[bi] = true
				b := bl[bi]
				f.ranges = append(f.ranges, [2]int{b.start, b.end})
				continue
			}
			f.ranges = append(f.ranges, [2]int{pos, end})
		}
		out = append(out, f)
	}
	inside := func(pos int) bool {
		for _, f := range out {
			for _, r := range f.ranges {
				if r[0] < pos && pos <= r[1] {
					return true
				}
			}
		}
		return false
	}
	for i, b := range bl {
		if used[i] || inside(b.start) {
			// a block starting inside a compiler diagnostic's lines is
			// that diagnostic's continuation
			continue
		}
		d := Diagnostic{}
		d.Tool, d.Severity, d.Message, d.File, d.Line, d.Code = b.tool, diag.SeverityError, clip(b.message), b.file, b.line, b.code
		out = append(out, found{d: d, ranges: append([][2]int{{b.start, b.end}}, b.extra...)})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ranges[0][0] < out[j].ranges[0][0] })
	for _, f := range out {
		d := f.d
		d.Step = c.step
		for _, r := range f.ranges {
			p.ev.flagged(c.texts[r[0] : r[1]+1])
			raw := [2]int{c.nums[r[0]], c.nums[r[1]]}
			d.Ranges = append(d.Ranges, raw)
		}
		d.LogLines = d.Ranges[0]
		p.ev.diagnostic(&d)
		p.keep(d)
	}
}

// Compiler windows: the compiler formats run over the lines around those
// that may start a compiler diagnostic, not over every line of the log.
const (
	windowBefore = 3
	windowAfter  = 40
)

// compilerWindows returns the lines around candidates for a compiler
// diagnostic (with an empty line between windows) and each one's index in
// lines.
func compilerWindows(lines []string) ([]string, []int) {
	var sub []string
	var origin []int
	next := 0 // first line not yet taken
	until := -1
	for i, l := range lines {
		if !mayCompile(l) {
			if i <= until {
				sub, origin = append(sub, l), append(origin, i)
				next = i + 1
			}
			continue
		}
		from := max(next, i-windowBefore)
		if from > next && len(sub) > 0 {
			sub, origin = append(sub, ""), append(origin, from)
		}
		for j := from; j <= i; j++ {
			sub, origin = append(sub, lines[j]), append(origin, j)
		}
		next = i + 1
		until = i + windowAfter
	}
	return sub, origin
}

// mayCompile reports whether a line may start or locate a compiler
// diagnostic: "file:line", "(line,col)", an error/warning word, a rustc
// arrow, a traceback frame, a go -json event, make's directory.
func mayCompile(l string) bool {
	for i := 0; i+1 < len(l); i++ {
		switch l[i] {
		case ':':
			if c := l[i+1]; (c >= '0' && c <= '9') || c == '[' {
				return true
			}
		case '(':
			// tsc's "file(3,7)"
			j := i + 1
			for j < len(l) && l[j] >= '0' && l[j] <= '9' {
				j++
			}
			if j > i+1 && j < len(l) && l[j] == ',' {
				return true
			}
		}
	}
	return strings.Contains(l, "error") || strings.Contains(l, "Error") || strings.Contains(l, "ERROR") ||
		strings.Contains(l, "warning") || strings.Contains(l, "-->") || strings.Contains(l, `File "`) ||
		strings.Contains(l, "directory")
}

// enclosing returns the index of the block holding line pos, or -1.
func enclosing(bl []block, pos int) int {
	for i, b := range bl {
		if b.start <= pos && pos <= b.end {
			return i
		}
	}
	return -1
}

// keep adds d to the report, folding it into an earlier identical one.
func (p *parser) keep(d Diagnostic) {
	k := foldKey{d.Tool, d.Severity, d.File, d.Line, strings.Join(strings.Fields(d.Message), " ")}
	if i, ok := p.fold[k]; ok {
		o := &p.rep.Diagnostics[i]
		for _, r := range d.Ranges {
			if len(o.Ranges) < 64 && !hasRange(o.Ranges, r) {
				o.Ranges = append(o.Ranges, r)
			}
		}
		return
	}
	if len(p.rep.Diagnostics) >= MaxDiagnostics {
		p.rep.Truncated = true
		return
	}
	if len(d.Ranges) == 1 {
		d.Ranges = nil
	}
	p.fold[k] = len(p.rep.Diagnostics)
	p.rep.Diagnostics = append(p.rep.Diagnostics, d)
}

func hasRange(rs [][2]int, r [2]int) bool {
	for _, x := range rs {
		if x == r {
			return true
		}
	}
	return false
}

func clip(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 2048 {
		s = strings.ToValidUTF8(s[:2048], "")
	}
	return s
}

// finish closes the steps, adds the workflow annotations and names the
// cause.
func (p *parser) finish(lines int) {
	r := p.rep
	r.Lines = lines
	d := p.dec
	d.steps.end(lines)
	d.tool.end(lines)
	steps := d.steps.steps
	if len(steps) == 0 {
		steps = d.tool.steps
	}
	if steps == nil {
		steps = []Step{}
	}
	r.Steps = steps
	for _, a := range d.annotations {
		p.ev.diagnostic(&a)
		p.keep(a)
	}
	sort.SliceStable(r.Diagnostics, func(i, j int) bool { return r.Diagnostics[i].LogLines[0] < r.Diagnostics[j].LogLines[0] })
	failed := d.jobFailed
	for _, s := range steps {
		failed = failed || s.Failed
	}
	r.Cause = p.ev.cause(failed, d.jobPassed, len(r.Diagnostics) > 0, steps, d.tool.steps)
}

// cleanLine is the diag package's line cleaning.
func cleanLine(l string) string { return diag.CleanLine(l) }
