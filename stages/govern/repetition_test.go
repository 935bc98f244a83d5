package govern

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/murphy-rl/murphy/topics"
)

// humanEvalPath is the shared HumanEval copy (DESIGN §6), used by path.
const humanEvalPath = "../../../shared/data/humaneval/HumanEval.jsonl.gz"

type example struct{ name, text string }

func loopingExamples(t *testing.T) []example {
	t.Helper()
	files, err := filepath.Glob("testdata/repetition/looping/*.txt")
	if err != nil || len(files) < 10 {
		t.Fatalf("looping examples missing: %v %d", err, len(files))
	}
	var out []example
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, example{filepath.Base(f), string(b)})
	}
	return out
}

// normalExamples is real, hand-written long code: HumanEval problems with
// their canonical solutions and test code, this module's Go sources, and
// the Go standard library's sources (generated files excluded: a model does
// not write "Code generated ... DO NOT EDIT" tables), each up to 32 KB.
func normalExamples(t *testing.T) []example {
	t.Helper()
	var out []example
	add := func(name string, b []byte) {
		if len(b) < 1500 {
			return
		}
		head := b[:min(len(b), 2048)]
		if bytes.Contains(head, []byte("Code generated")) || bytes.Contains(head, []byte("DO NOT EDIT")) {
			return
		}
		out = append(out, example{name, string(b[:min(len(b), 32<<10)])})
	}
	if f, err := os.Open(humanEvalPath); err == nil {
		defer f.Close()
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(zr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var p struct {
				TaskID   string `json:"task_id"`
				Prompt   string `json:"prompt"`
				Solution string `json:"canonical_solution"`
				Test     string `json:"test"`
			}
			if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
				t.Fatal(err)
			}
			add(p.TaskID, []byte(p.Prompt+p.Solution+"\n"+p.Test))
		}
	}
	var files []string
	for _, pat := range []string{"../../*/*.go", "../../*/*/*.go"} {
		m, _ := filepath.Glob(pat)
		files = append(files, m...)
	}
	if out, err := exec.Command("go", "env", "GOROOT").Output(); err == nil {
		root := strings.TrimSpace(string(out))
		for _, pat := range []string{"src/*/*.go", "src/*/*/*.go"} {
			m, _ := filepath.Glob(filepath.Join(root, pat))
			files = append(files, m...)
		}
	}
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil {
			add(f, b)
		}
	}
	if len(out) < 500 {
		t.Fatalf("only %d normal examples found", len(out))
	}
	return out
}

// TestRepetitionSeparates: every looping example is detected and no normal
// long program is, with the default thresholds.
func TestRepetitionSeparates(t *testing.T) {
	d, err := NewRepetitionDetector(DefaultRepetitionConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range loopingExamples(t) {
		if st := d.Measure(e.text, nil); !d.Decide(st) {
			t.Errorf("looping %s not detected: %+v", e.name, st)
		}
	}
	normals := normalExamples(t)
	flagged := 0
	for _, e := range normals {
		if st := d.Measure(e.text, nil); d.Decide(st) {
			flagged++
			t.Errorf("normal %s flagged as looping: %+v", e.name, st)
		}
	}
	t.Logf("%d normal programs, %d flagged", len(normals), flagged)
}

// TestRepetitionThresholds shows that each default threshold sits in the
// gap between the looping and the normal examples, and that each test
// matters: moving a threshold across the gap makes the detector wrong.
func TestRepetitionThresholds(t *testing.T) {
	def := DefaultRepetitionConfig()
	all := def
	d, _ := NewRepetitionDetector(all)
	loops, normals := loopingExamples(t), normalExamples(t)
	var loopStats, normalStats []RepetitionStats
	for _, e := range loops {
		loopStats = append(loopStats, d.Measure(e.text, nil))
	}
	for _, e := range normals {
		normalStats = append(normalStats, d.Measure(e.text, nil))
	}

	// Duplicate n-grams: whole-response loops are far above the threshold,
	// the most repetitive normal program is below it.
	maxNormalDup, minNormalCR := 0.0, 1.0
	for _, s := range normalStats {
		maxNormalDup = max(maxNormalDup, s.DuplicateNGrams)
		minNormalCR = min(minNormalCR, s.CompressionRatio)
	}
	if maxNormalDup >= def.MaxDuplicateNGrams {
		t.Errorf("a normal program has %.3f duplicate n-grams >= threshold %.2f", maxNormalDup, def.MaxDuplicateNGrams)
	}
	if minNormalCR <= def.MinCompressionRatio {
		t.Errorf("a normal program compresses to %.3f <= threshold %.2f", minNormalCR, def.MinCompressionRatio)
	}
	t.Logf("normal: max duplicate n-grams %.3f (threshold %.2f), min compression ratio %.3f (threshold %.2f)",
		maxNormalDup, def.MaxDuplicateNGrams, minNormalCR, def.MinCompressionRatio)

	count := func(cfg RepetitionConfig, stats []RepetitionStats) int {
		d, err := NewRepetitionDetector(cfg)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, s := range stats {
			if d.Decide(s) {
				n++
			}
		}
		return n
	}
	cases := []struct {
		name                string
		mut                 func(*RepetitionConfig)
		missLoops, flagNorm bool // what goes wrong with the moved threshold
	}{
		{"defaults", func(*RepetitionConfig) {}, false, false},
		{"tail test off: a loop that starts late is missed", func(c *RepetitionConfig) { c.TailMinRepeats = 0 }, true, false},
		{"tail must span half the response: late loop missed", func(c *RepetitionConfig) { c.TailMinFraction = 0.5 }, true, false},
		{"tail of 3 short repeats: normal code flagged", func(c *RepetitionConfig) {
			c.TailMinRepeats, c.TailMinUnits, c.TailMinFraction = 3, 8, 0
		}, false, true},
		{"duplicate n-grams at 0.5: normal code flagged", func(c *RepetitionConfig) { c.MaxDuplicateNGrams = 0.5 }, false, true},
		{"compression at 0.15: normal code flagged", func(c *RepetitionConfig) { c.MinCompressionRatio = 0.15 }, false, true},
		{"minimum length above the loops: all missed", func(c *RepetitionConfig) { c.MinUnits = 100000 }, true, false},
	}
	for _, tc := range cases {
		cfg := def
		tc.mut(&cfg)
		missed := len(loopStats) - count(cfg, loopStats)
		flagged := count(cfg, normalStats)
		if (missed > 0) != tc.missLoops || (flagged > 0) != tc.flagNorm {
			t.Errorf("%s: %d loops missed, %d normal programs flagged", tc.name, missed, flagged)
		}
	}
}

// TestRepetitionVariantLoops documents the limit: a loop whose body changes
// every iteration (a counter) is not a verbatim repetition; it is caught as
// a truncation when it runs into max tokens.
func TestRepetitionVariantLoops(t *testing.T) {
	b, err := os.ReadFile("testdata/repetition/variant/counter-loop.txt")
	if err != nil {
		t.Fatal(err)
	}
	d, _ := NewRepetitionDetector(DefaultRepetitionConfig())
	if d.Looping(string(b), nil) {
		t.Fatal("a counter loop is not verbatim; if the detector learnt it, update README.md")
	}
	ex := execution(failing(1), func(e *topics.Execution) { e.ResponseText, e.FinishReason = string(b), "length" })
	c := &classifier{cfg: DefaultConfig(), detector: d}
	if got := c.Classify(ex); got != CauseTruncated {
		t.Fatalf("cause = %s, want %s", got, CauseTruncated)
	}
}

func TestRepetitionTokens(t *testing.T) {
	d, _ := NewRepetitionDetector(DefaultRepetitionConfig())
	r := rand.New(rand.NewPCG(7, 9))
	normal := make([]int32, 3000)
	for i := range normal {
		normal[i] = int32(r.IntN(32000))
	}
	// A response with token ids only: 1,000 normal tokens, then a 17-token
	// body repeated until max tokens.
	looping := append([]int32(nil), normal[:1000]...)
	for len(looping) < 3000 {
		looping = append(looping, normal[1000:1017]...)
	}
	if d.Looping("", normal) {
		t.Error("random tokens flagged")
	}
	if !d.Looping("", looping) {
		t.Errorf("token loop missed: %+v", d.Measure("", looping))
	}
	off := DefaultRepetitionConfig()
	off.Enabled = false
	d2, _ := NewRepetitionDetector(off)
	if d2.Looping("", looping) {
		t.Error("disabled detector fired")
	}
}

func TestTailLoopCutMidWord(t *testing.T) {
	// Truncation at max tokens can end inside a word of the loop body.
	text := "def f():\n" + strings.Repeat("    return None\n", 40) + "    return No"
	period, span := tailLoop(textUnits(text), 64, 6)
	if period != 3 || span < 100 {
		t.Fatalf("period %d span %d", period, span)
	}
}

// BenchmarkRepetition measures the detector on a 6 KB looping response and
// on 32 KB of normal code, against deflate alone on the same bytes.
func BenchmarkRepetition(b *testing.B) {
	loop, _ := os.ReadFile("testdata/repetition/looping/function-block.txt")
	src, _ := os.ReadFile("repetition.go")
	normal := bytes.Repeat(src, 1+(32<<10)/len(src))[:32<<10]
	d, _ := NewRepetitionDetector(DefaultRepetitionConfig())
	for _, in := range []struct {
		name string
		text []byte
	}{{"looping6KB", loop}, {"normal32KB", normal}} {
		b.Run(in.name, func(b *testing.B) {
			b.SetBytes(int64(len(in.text)))
			start := b.Elapsed()
			for b.Loop() {
				d.Looping(string(in.text), nil)
			}
			full := b.Elapsed() - start
			n := b.N
			t0 := time.Now()
			for i := 0; i < n; i++ {
				d.compressionRatio(in.text)
			}
			base := time.Since(t0)
			b.ReportMetric(float64(full)/float64(base), "x_deflate")
		})
	}
}

// TestUnitsAndNGramsMatchTheirDefinitions checks textUnits against the
// definition written plainly (hash/fnv per word, unicode tables for every
// character) and duplicateNGrams against a map of the n-grams seen, on the
// examples, on code and on random text with non-ASCII, invalid UTF-8 and
// unusual white space.
func TestUnitsAndNGramsMatchTheirDefinitions(t *testing.T) {
	plainUnits := func(s string) []uint64 {
		var units []uint64
		word := -1
		flush := func(end int) {
			if word >= 0 {
				h := fnv.New64a()
				h.Write([]byte(s[word:end]))
				units = append(units, h.Sum64())
				word = -1
			}
		}
		for i, r := range s {
			switch {
			case r == utf8.RuneError:
				flush(i)
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_':
				if word < 0 {
					word = i
				}
			case r == '\n':
				flush(i)
				units = append(units, '\n')
			case unicode.IsSpace(r):
				flush(i)
			default:
				flush(i)
				units = append(units, 1<<63|uint64(r))
			}
		}
		flush(len(s))
		return units
	}
	plainNGrams := func(u []uint64, n int) float64 {
		if len(u) < n {
			return 0
		}
		seen := map[uint64]bool{}
		dup := 0
		for i := 0; i+n <= len(u); i++ {
			var h uint64 = 1469598103934665603
			for _, x := range u[i : i+n] {
				h = (h ^ x) * 1099511628211
			}
			if seen[h] {
				dup++
			}
			seen[h] = true
		}
		return float64(dup) / float64(len(u)-n+1)
	}
	var texts []string
	for _, e := range append(loopingExamples(t), normalExamples(t)...) {
		texts = append(texts, e.text)
	}
	src, err := os.ReadFile("repetition.go")
	if err != nil {
		t.Fatal(err)
	}
	texts = append(texts, string(src), "", "x", "é", "\xff", "a\xffb", "日本語 テキスト\u00a0x\u0085y\u2028z\vq\fr\u00ad", "\ufffd\ufffdab\ufffd")
	pieces := []string{"def", " ", "\n", "\t", "_x1", "(", ")", "é", "日本", "\xff", "\xe2\x82", "\ufffd", "\u00a0", "\u0085", "\v", "\x00", "٣", "ǅ", "\r\n"}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 300 {
		var b strings.Builder
		for range rng.IntN(400) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		texts = append(texts, b.String())
	}
	for i, s := range texts {
		got, want := textUnits(s), plainUnits(s)
		if !slices.Equal(got, want) {
			t.Fatalf("text %d (%.40q): %d units, want %d", i, s, len(got), len(want))
		}
		for _, n := range []int{1, 3, 12} {
			if g, w := duplicateNGrams(got, n), plainNGrams(want, n); g != w {
				t.Fatalf("text %d, n=%d: duplicate share %v, want %v", i, n, g, w)
			}
		}
	}
	// Hashes that collide in the table's slot, and the hash 0.
	s := newHashSet(4)
	defer s.release()
	for _, h := range []uint64{0, 1 << 40, 2 << 40, 0, 1 << 40, 3, 3 | 1<<40} {
		_ = s.add(h)
	}
	if s.add(0) || s.add(2<<40) || !s.add(5) || !s.add(4<<40) || s.add(3|1<<40) {
		t.Fatal("hash set membership")
	}
}
