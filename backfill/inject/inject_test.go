package inject

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/murphy-rl/murphy/compilefix/diag"
	"github.com/murphy-rl/murphy/compilefix/patch"
	"github.com/murphy-rl/murphy/topics"
)

// Samples: small files that build (C with gcc, Go with go build, Java with
// javac, Python run as a script) and have sites for every operator, with
// decoys in comments and strings that no operator may touch.
const sampleC = `#include <stdio.h>
#include <string.h>
#include <stdlib.h>

/* A tiny string buffer; decoy: append(b, "x", 3); } ; #include <math.h> */
struct buf {
    char *data;
    size_t len;
};

static size_t grow(struct buf *b, size_t extra);

static double ratio(size_t used, size_t total)
{
    double r = 0.0;
    if (total == 0) {
        return 0.0;
    }
    r = (double)used / (double)total;
    return r;
}

static size_t grow(struct buf *b, size_t extra)
{
    size_t want = b->len + extra;
    char *p = realloc(b->data, want + 1);
    if (p == NULL) {
        return 0;
    }
    b->data = p;
    return want;
}

static int append(struct buf *b, const char *s)
{
    size_t n = strlen(s);
    size_t cap = grow(b, n);
    if (cap == 0) {
        return -1;
    }
    memcpy(b->data + b->len, s, n + 1);
    b->len += n;
    return 0;
}

int main(void)
{
    struct buf b = {NULL, 0};
    int i = 0;
    for (i = 0; i < 3; i++) {
        if (append(&b, "decoy: grow(b, n); }") != 0) {
            fprintf(stderr, "out of memory\n");
            return 1;
        }
    }
    printf("%s %.2f\n", b.data, ratio(b.len, 8));
    free(b.data);
    return 0;
}
`

const sampleGo = `package main

import (
	"fmt"
	"os"
	"strings"
)

// limit bounds the words kept. Decoy: keep(words, n); }
const limit int = 3

type counter struct {
	seen map[string]int
}

func newCounter() *counter {
	return &counter{seen: map[string]int{}}
}

func (c *counter) add(word string) bool {
	w := strings.ToLower(word)
	c.seen[w]++
	return c.seen[w] == 1
}

func keep(words []string, n int) []string {
	if len(words) > n {
		return words[:n]
	}
	return words
}

func describe(n int, total int) string {
	var label string = "words"
	for i := 0; i < n; i++ {
		total += i
	}
	return fmt.Sprintf("%d %s (%d) %s", n, label, total, ` + "`decoy: }\nkeep(a, b)\n`" + `)
}

func main() {
	c := newCounter()
	fresh := 0
	for _, w := range keep(os.Args[1:], limit) {
		if c.add(w) {
			fresh++
		}
	}
	fmt.Println(describe(fresh, 0))
}
`

const sampleJava = `import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** Counts words. Decoy: add(w, 1); } ; import java.util.Set; */
public class Sample {
    private final Map<String, Integer> counts = new HashMap<>();

    public Sample() {
    }

    private int add(String word, int weight) {
        int before = counts.getOrDefault(word, 0);
        counts.put(word, before + weight);
        return before;
    }

    private List<String> keep(List<String> words, int limit) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < words.size() && i < limit; i++) {
            out.add(words.get(i));
        }
        return out;
    }

    int total(List<String> words) {
        int sum = 0;
        for (String w : keep(words, 2)) {
            sum += add(w, 1);
        }
        return sum;
    }

    static String describe(int n) {
        String label = "words; decoy: keep(words, 2); }";
        double share = 0.5;
        return n + " " + label + " " + share;
    }

    public static void main(String[] args) {
        Sample s = new Sample();
        List<String> words = new ArrayList<>();
        for (String a : args) {
            words.add(a);
        }
        int fresh = s.total(words);
        System.out.println(describe(fresh));
    }
}
`

const samplePy = `"""A tiny word counter.

Decoy: keep(words, limit)) if x
"""
import os
import sys
from collections import Counter

LIMIT = 3


def normalise(word):
    return word.strip().lower()


def keep(words, limit):
    if len(words) > limit:
        return words[:limit]
    return words


class Tally:
    def __init__(self):
        self.counts = Counter()

    def add(self, word):
        key = normalise(word)
        self.counts[key] += 1
        return self.counts[key] == 1

    def fresh(self, words):
        n = 0
        for w in words:
            if self.add(w):
                n += 1
        return n


def describe(n, total):
    label = "words # decoy: keep(a, b))"
    return "%d %s (%d) %s" % (n, label, total, os.sep)


def main(argv):
    tally = Tally()
    words = keep(argv, LIMIT)
    print(describe(tally.fresh(words), len(words)))
    return 0


if __name__ == "__main__":
    sys.exit(main(["a", "b", "A", "c"]))
`

type sample struct {
	lang, path, src string
	decoys          []string
}

var samples = []sample{
	{"c", "src/buf.c", sampleC, []string{`/* A tiny string buffer; decoy: append(b, "x", 3); } ; #include <math.h> */`, `"decoy: grow(b, n); }"`}},
	{"go", "cmd/count/main.go", sampleGo, []string{"// limit bounds the words kept. Decoy: keep(words, n); }", "`decoy: }\nkeep(a, b)\n`"}},
	{"java", "src/Sample.java", sampleJava, []string{"/** Counts words. Decoy: add(w, 1); } ; import java.util.Set; */", `"words; decoy: keep(words, 2); }"`}},
	{"python", "pkg/count.py", samplePy, []string{"\"\"\"A tiny word counter.\n\nDecoy: keep(words, limit)) if x\n\"\"\"", `"words # decoy: keep(a, b))"`}},
}

func TestOperatorsAndLanguages(t *testing.T) {
	want := map[string][]string{
		"c":      {OpDropImport, OpMisspell, OpRemoveFunction, OpDeleteSemicolon, OpDeleteBrace, OpChangeArity, OpTypeMismatch, OpMergeConflict},
		"go":     {OpDropImport, OpMisspell, OpRemoveFunction, OpDeleteSemicolon, OpDeleteBrace, OpChangeArity, OpTypeMismatch, OpMergeConflict},
		"java":   {OpDropImport, OpMisspell, OpRemoveFunction, OpDeleteSemicolon, OpDeleteBrace, OpChangeArity, OpTypeMismatch, OpMergeConflict},
		"python": {OpDropImport, OpMisspell, OpRemoveFunction, OpDeleteColon, OpDeleteBracket, OpChangeArity, OpMergeConflict},
	}
	for _, l := range Languages() {
		if got := Operators(l); !slices.Equal(got, want[l]) {
			t.Errorf("Operators(%s) = %v, want %v", l, got, want[l])
		}
	}
	for alias, l := range map[string]string{"C": "c", "golang": "go", "py": "python", "Python3": "python", "rust": ""} {
		if got := Lang(alias); got != l {
			t.Errorf("Lang(%q) = %q, want %q", alias, got, l)
		}
	}
	if Operators("cobol") != nil {
		t.Error("operators for an unknown language")
	}
	if _, err := Inject("cobol", OpMisspell, "a.cob", nil, 1); err == nil {
		t.Error("unknown language accepted")
	}
	if _, err := Inject("python", OpDeleteSemicolon, "a.py", []byte("x = 1\n"), 1); err == nil {
		t.Error("an operator of another language accepted")
	}
	for _, p := range []string{"", "/abs/x.c", "../x.c"} {
		if _, err := Inject("c", OpDeleteSemicolon, p, []byte(sampleC), 1); err == nil {
			t.Errorf("path %q accepted", p)
		}
	}
	if !Syntactic("python", OpDeleteColon) || !Syntactic("go", OpMergeConflict) || Syntactic("python", OpMisspell) {
		t.Error("Syntactic")
	}
}

// checkShape checks what every operator's mutation must satisfy and
// returns the applied reference patch.
func checkShape(t *testing.T, s sample, op string, m *Mutation) {
	t.Helper()
	old, new := string(m.Old), string(m.New)
	if m.Operator != op || m.File != s.path || old != s.src || old == new || m.Description == "" {
		t.Fatalf("%s %s: bad mutation %+v", s.lang, op, m)
	}
	n := strings.Count(new, "\n") + 1
	if m.Line < 1 || m.Line > n || len(m.Expect) == 0 {
		t.Fatalf("%s %s: line %d, expect %v (file of %d lines)", s.lang, op, m.Line, m.Expect, n)
	}
	for _, l := range m.Expect {
		if l < 1 || l > n {
			t.Fatalf("%s %s: expect %v out of the file (%d lines)", s.lang, op, m.Expect, n)
		}
	}
	// The change may take a decoy (a comment, a string literal) whole, as
	// an argument or with its function, never edit inside one.
	p := 0
	for p < len(old) && p < len(new) && old[p] == new[p] {
		p++
	}
	e := 0
	for e < len(old)-p && e < len(new)-p && old[len(old)-1-e] == new[len(new)-1-e] {
		e++
	}
	lo, hi := p, len(old)-e
	for _, d := range s.decoys {
		ds := strings.Index(old, d)
		de := ds + len(d)
		if ds < 0 {
			t.Fatalf("decoy %q not in the sample", d)
		}
		if hi > ds && lo < de && !(lo <= ds && hi >= de) {
			t.Fatalf("%s %s: the change [%d, %d) edits inside the decoy %q [%d, %d):\n%s", s.lang, op, lo, hi, d, ds, de, m.Patch())
		}
	}
	count := func(sub string) (int, int) { return strings.Count(old, sub), strings.Count(new, sub) }
	switch op {
	case OpDeleteSemicolon:
		a, b := count(";")
		la, lb := count("\n")
		if !(b == a-1 && lb == la) && !(s.lang == "go" && b == a && lb == la-1) {
			t.Fatalf("%s %s: ; %d -> %d, lines %d -> %d", s.lang, op, a, b, la, lb)
		}
	case OpDeleteBrace:
		if a, b := count("}"); b != a-1 {
			t.Fatalf("%s %s: } %d -> %d", s.lang, op, a, b)
		}
	case OpDeleteColon:
		if a, b := count(":"); b != a-1 {
			t.Fatalf("%s %s: : %d -> %d", s.lang, op, a, b)
		}
	case OpDeleteBracket:
		a1, b1 := count(")")
		a2, b2 := count("]")
		a3, b3 := count("}")
		if a1+a2+a3-1 != b1+b2+b3 {
			t.Fatalf("%s %s: closers %d -> %d", s.lang, op, a1+a2+a3, b1+b2+b3)
		}
	case OpMergeConflict:
		for _, mk := range []string{"\n<<<<<<< HEAD\n", "\n=======\n", "\n>>>>>>> "} {
			if !strings.Contains(new, mk) {
				t.Fatalf("%s %s: no %q marker", s.lang, op, mk)
			}
		}
		if !strings.HasPrefix(strings.Split(new, "\n")[m.Line-1], "<<<<<<< ") {
			t.Fatalf("%s %s: line %d is not the first marker", s.lang, op, m.Line)
		}
	case OpDropImport:
		if la, lb := count("\n"); lb >= la {
			t.Fatalf("%s %s: no line removed", s.lang, op)
		}
	case OpRemoveFunction:
		if la, lb := count("\n"); lb >= la-1 {
			t.Fatalf("%s %s: no definition removed", s.lang, op)
		}
	case OpMisspell:
		// One token replaced by a new name, the declaration kept.
		oldIDs, newIDs := idents(old), idents(new)
		var gone, added []string
		for id, c := range oldIDs {
			if newIDs[id] < c {
				gone = append(gone, id)
			}
		}
		for id, c := range newIDs {
			if oldIDs[id] < c {
				added = append(added, id)
			}
		}
		if len(gone) != 1 || len(added) != 1 || oldIDs[added[0]] != 0 || newIDs[added[0]] != 1 || newIDs[gone[0]] == 0 {
			t.Fatalf("%s %s: identifiers gone %v added %v", s.lang, op, gone, added)
		}
	}
}

func idents(s string) map[string]int {
	m := map[string]int{}
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if !unicode.IsDigit(rune(f[0])) {
			m[f]++
		}
	}
	return m
}

// applyPatch applies m.Patch() to a tree holding the mutated file, with
// workspace/patch, and returns the repaired content.
func applyPatch(t *testing.T, m *Mutation) []byte {
	t.Helper()
	dir := t.TempDir()
	full := filepath.Join(dir, filepath.FromSlash(m.File))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, m.New, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := patch.Apply(dir, m.Patch(), patch.Options{})
	if err != nil {
		t.Fatalf("%s: the reference patch does not apply: %v\n%s", m.Operator, err, m.Patch())
	}
	if len(res.Files) != 1 || res.Files[0].Path != m.File {
		t.Fatalf("%s: patch changes %v", m.Operator, res.Paths())
	}
	return res.Files[0].New
}

func TestInjectEveryOperator(t *testing.T) {
	for _, s := range samples {
		for _, op := range Operators(s.lang) {
			t.Run(s.lang+"/"+op, func(t *testing.T) {
				seen := map[string]bool{}
				for seed := int64(1); seed <= 6; seed++ {
					m, err := Inject(s.lang, op, s.path, []byte(s.src), seed)
					if err != nil {
						t.Fatalf("seed %d: %v", seed, err)
					}
					checkShape(t, s, op, m)
					if got := applyPatch(t, m); !bytes.Equal(got, m.Old) {
						t.Fatalf("seed %d: the patch gives\n%s\nwant\n%s", seed, got, m.Old)
					}
					again, _ := Inject(s.lang, op, s.path, []byte(s.src), seed)
					if !bytes.Equal(again.New, m.New) || again.Description != m.Description || !slices.Equal(again.Expect, m.Expect) {
						t.Fatalf("seed %d: not deterministic", seed)
					}
					seen[string(m.New)] = true
				}
				if len(seen) < 2 {
					t.Errorf("6 seeds gave %d distinct mutations", len(seen))
				}
			})
		}
	}
}

// TestPatchMatchesGNUPatch applies the reference patches with GNU patch.
func TestPatchMatchesGNUPatch(t *testing.T) {
	bin, err := exec.LookPath("patch")
	if err != nil {
		t.Skip("no patch(1)")
	}
	for _, s := range samples {
		for _, op := range Operators(s.lang) {
			m, err := Inject(s.lang, op, s.path, []byte(s.src), 3)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			full := filepath.Join(dir, filepath.FromSlash(m.File))
			pf := filepath.Join(t.TempDir(), "fix.diff")
			if err := errors.Join(os.MkdirAll(filepath.Dir(full), 0o755), os.WriteFile(full, m.New, 0o644),
				os.WriteFile(pf, []byte(m.Patch()), 0o644)); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(bin, "-p1", "--batch", "--no-backup-if-mismatch", "-d", dir, "-i", pf).CombinedOutput(); err != nil {
				t.Fatalf("%s %s: patch: %v\n%s", s.lang, op, err, out)
			}
			if got, _ := os.ReadFile(full); !bytes.Equal(got, m.Old) {
				t.Fatalf("%s %s: GNU patch does not restore the file", s.lang, op)
			}
		}
	}
}

func TestNoSite(t *testing.T) {
	for _, tc := range []struct{ lang, op, src string }{
		{"c", OpDropImport, "int x;\n"},
		{"c", OpDeleteBrace, "int x;\nint f(void);\n"},
		{"c", OpChangeArity, "int f(void) { return 0; }\n"},
		{"c", OpMisspell, "/* f(x) */ int f(void) { return 0; }\n"},
		{"go", OpDeleteBrace, "package p\n\nvar x = 1\n"},
		{"go", OpDropImport, "package p\n\nimport _ \"embed\"\n"},
		{"go", OpTypeMismatch, "package p\n\nfunc f() (a []int) { return }\n"},
		{"java", OpRemoveFunction, "class A { @Override public String toString() { return \"\"; } String s() { return toString(); } }\n"},
		{"python", OpDeleteColon, "x = 1\ny = {'a': 2}\n"},
		{"python", OpDropImport, "from __future__ import annotations\nimport os\n"},
		{"python", OpChangeArity, "def f(*a):\n    pass\n\nf(1)\n"},
	} {
		_, err := Inject(tc.lang, tc.op, "f", []byte(tc.src), 1)
		if !errors.Is(err, ErrNoSite) {
			t.Errorf("%s %s on %q: %v, want ErrNoSite", tc.lang, tc.op, tc.src, err)
		}
	}
	if _, err := Inject("go", OpMisspell, "x.go", []byte("package p\nfunc {"), 1); err == nil || errors.Is(err, ErrNoSite) {
		t.Errorf("unparsable Go: %v", err)
	}
}

// TestSites pins down chosen sites on small inputs, where each operator has
// exactly one choice.
func TestSites(t *testing.T) {
	for _, tc := range []struct {
		lang, op, src, want string
		line                int
		expect              []int
	}{
		{"c", OpDropImport, "#include <string.h>\n#include <stdio.h>\n#ifdef W\n#include \"w.h\"\n#endif\nint f(const char *s) { return (int)strlen(s); }\n",
			"#include <stdio.h>\n#ifdef W\n#include \"w.h\"\n#endif\nint f(const char *s) { return (int)strlen(s); }\n", 1, []int{5}},
		{"c", OpChangeArity, "static int g(int a, int b);\nint f(void) {\n    return g(1, (2, 3)) + h(4);\n}\n",
			"", 3, []int{3}},
		{"c", OpTypeMismatch, "void f(void) {\n    int n = 3;\n    double d = n * 2;\n}\n",
			"void f(void) {\n    int n = 3;\n    double d = \"0\";\n}\n", 3, []int{3}},
		{"go", OpDeleteBrace, "package p\n\nfunc f() {\n\tif true { return }\n}\n",
			"package p\n\nfunc f() {\n\tif true { return }\n", 4, []int{4}},
		{"go", OpRemoveFunction, "package p\n\n// g doubles.\nfunc g(x int) int { return 2 * x }\n\nfunc f() int { return g(2) }\n",
			"package p\n\nfunc f() int { return g(2) }\n", 3, []int{3}},
		{"java", OpDropImport, "import java.util.List;\nimport java.util.*;\nclass A { List<String> l; }\n",
			"import java.util.*;\nclass A { List<String> l; }\n", 1, []int{2}},
		{"java", OpMisspell, "class A {\n    int f(int count) {\n        return this.count + count;\n    }\n}\n",
			"", 3, []int{3}},
		{"python", OpDeleteColon, "f = lambda x: x\nif f(1) == (lambda: 2)():\n    pass\n",
			"f = lambda x: x\nif f(1) == (lambda: 2)()\n    pass\n", 2, []int{2}},
		{"python", OpRemoveFunction, "class A:\n    def a(self):\n        return self.b()\n\n    def b(self):\n        return 1\n",
			"class A:\n    def a(self):\n        return self.b()\n\n", 4, []int{3}},
	} {
		m, err := Inject(tc.lang, tc.op, "f", []byte(tc.src), 7)
		if err != nil {
			t.Errorf("%s %s: %v", tc.lang, tc.op, err)
			continue
		}
		if tc.want != "" && string(m.New) != tc.want {
			t.Errorf("%s %s: got\n%s\nwant\n%s", tc.lang, tc.op, m.New, tc.want)
		}
		if m.Line != tc.line || !slices.Equal(m.Expect, tc.expect) {
			t.Errorf("%s %s: line %d expect %v, want %d %v (%s)", tc.lang, tc.op, m.Line, m.Expect, tc.line, tc.expect, m.Description)
		}
	}
}

// TestMutationsFailToCompile builds every sample and every operator's
// mutation of it (seed 1) with the language's compiler, where installed:
// the sample builds, each mutation does not, and a diagnostic is reported
// at (or within two lines of) one of its Expect lines.
func TestMutationsFailToCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("runs compilers")
	}
	for _, s := range samples {
		t.Run(s.lang, func(t *testing.T) {
			b := builders[s.lang]
			if err := b.available(); err != nil {
				t.Skip(err)
			}
			trees := []map[string][]byte{{s.path: []byte(s.src)}}
			var ms []*Mutation
			for _, op := range Operators(s.lang) {
				m, err := Inject(s.lang, op, s.path, []byte(s.src), 1)
				if err != nil {
					t.Fatal(err)
				}
				ms = append(ms, m)
				trees = append(trees, map[string][]byte{s.path: m.New})
			}
			res := b.build(t, s.path, trees)
			if !res[0].ok {
				t.Fatalf("the sample does not build:\n%s", res[0].out)
			}
			for i, m := range ms {
				r := res[i+1]
				if r.ok {
					t.Errorf("%s: the mutation builds (%s)", m.Operator, m.Description)
					continue
				}
				ds := diag.Parse(b.tool, []byte(r.out), r.root)
				if len(ds) > 0 {
					t.Logf("%s: %s -> %s", m.Operator, m.Description, diag.Header(ds[0]))
				}
				if !reported(ds, m) {
					t.Errorf("%s: no diagnostic near %v (%s):\n%s", m.Operator, m.Expect, m.Description, r.out)
				}
			}
		})
	}
}

func reported(ds []topics.Diagnostic, m *Mutation) bool {
	for _, d := range ds {
		if d.Severity != "error" || (d.File != m.File && !strings.HasSuffix(d.File, "/"+m.File) && filepath.Base(d.File) != filepath.Base(m.File)) {
			continue
		}
		for _, l := range m.Expect {
			if d.Line >= l-2 && d.Line <= l+2 {
				return true
			}
		}
	}
	return false
}

type buildResult struct {
	ok        bool
	out, root string
}

type builder struct {
	tool      string
	available func() error
	build     func(t *testing.T, file string, trees []map[string][]byte) []buildResult
}

func writeTrees(t *testing.T, trees []map[string][]byte, extra map[string]string) []string {
	var dirs []string
	base := t.TempDir()
	for i, tr := range trees {
		dir := filepath.Join(base, fmt.Sprint(i))
		for p, c := range tr {
			full := filepath.Join(dir, filepath.FromSlash(p))
			if err := errors.Join(os.MkdirAll(filepath.Dir(full), 0o755), os.WriteFile(full, c, 0o644)); err != nil {
				t.Fatal(err)
			}
		}
		for p, c := range extra {
			if err := os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		dirs = append(dirs, dir)
	}
	return dirs
}

func lookPath(bins ...string) func() error {
	return func() error {
		for _, b := range bins {
			if _, err := exec.LookPath(b); err != nil {
				return fmt.Errorf("%s is not installed", b)
			}
		}
		return nil
	}
}

// perTree runs argv in each tree.
func perTree(t *testing.T, trees []map[string][]byte, extra map[string]string, env []string, argv func(file string) []string, file string) []buildResult {
	var out []buildResult
	for _, dir := range writeTrees(t, trees, extra) {
		a := argv(file)
		cmd := exec.Command(a[0], a[1:]...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), env...)
		o, err := cmd.CombinedOutput()
		out = append(out, buildResult{ok: err == nil, out: string(o), root: dir})
	}
	return out
}

// javaRunner compiles each directory's Sample.java in one JVM (javac
// starts slowly) and prints the errors as javac does.
const javaRunner = `import javax.tools.*;
import java.io.File;
import java.util.*;

public class Runner {
    public static void main(String[] args) throws Exception {
        JavaCompiler jc = ToolProvider.getSystemJavaCompiler();
        for (String dir : args) {
            DiagnosticCollector<JavaFileObject> dc = new DiagnosticCollector<>();
            StandardJavaFileManager fm = jc.getStandardFileManager(dc, null, null);
            File out = new File(dir, "classes");
            out.mkdirs();
            boolean ok = jc.getTask(null, fm, dc, List.of("-d", out.getPath(), "-proc:none"), null,
                fm.getJavaFileObjects(new File(dir, "FILE"))).call();
            System.out.println("=== " + dir + " " + (ok ? "ok" : "fail"));
            for (Diagnostic<? extends JavaFileObject> d : dc.getDiagnostics()) {
                if (d.getKind() == Diagnostic.Kind.ERROR) {
                    System.out.println("FILE:" + d.getLineNumber() + ": error: " + d.getMessage(Locale.ROOT).split("\n")[0]);
                }
            }
            fm.close();
        }
    }
}
`

var builders = map[string]builder{
	"c": {tool: "gcc", available: lookPath("gcc"), build: func(t *testing.T, file string, trees []map[string][]byte) []buildResult {
		// GCC 14's defaults: implicit declarations and int/pointer
		// conversions are errors.
		return perTree(t, trees, nil, nil, func(f string) []string {
			return []string{"gcc", "-std=c99", "-Wall", "-Werror=implicit-function-declaration", "-Werror=int-conversion",
				"-Werror=incompatible-pointer-types", "-fsyntax-only", f}
		}, file)
	}},
	"go": {tool: "go", available: lookPath("go"), build: func(t *testing.T, file string, trees []map[string][]byte) []buildResult {
		return perTree(t, trees, map[string]string{"go.mod": "module sample\n\ngo 1.22\n"},
			[]string{"GOFLAGS=-buildvcs=false", "GOPROXY=off", "GOTOOLCHAIN=local", "GOWORK=off"},
			func(f string) []string { return []string{"go", "build", "-o", os.DevNull, "./" + filepath.Dir(f)} }, file)
	}},
	"python": {tool: "python", available: lookPath("python3"), build: func(t *testing.T, file string, trees []map[string][]byte) []buildResult {
		return perTree(t, trees, nil, []string{"PYTHONDONTWRITEBYTECODE=1"}, func(f string) []string { return []string{"python3", f} }, file)
	}},
	"java": {tool: "javac", available: lookPath("java", "javac"), build: func(t *testing.T, file string, trees []map[string][]byte) []buildResult {
		dirs := writeTrees(t, trees, nil)
		runner := filepath.Join(t.TempDir(), "Runner.java")
		if err := os.WriteFile(runner, []byte(strings.ReplaceAll(javaRunner, "FILE", file)), 0o644); err != nil {
			t.Fatal(err)
		}
		o, err := exec.Command("java", append([]string{runner}, dirs...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("java runner: %v\n%s", err, o)
		}
		var out []buildResult
		for _, part := range strings.Split(string(o), "=== ")[1:] {
			head, body, _ := strings.Cut(part, "\n")
			f := strings.Fields(head)
			out = append(out, buildResult{ok: f[len(f)-1] == "ok", out: body, root: f[0]})
		}
		if len(out) != len(trees) {
			t.Fatalf("java runner: %d results for %d trees:\n%s", len(out), len(trees), o)
		}
		return out
	}},
}
