package patch

import (
	"strings"
	"testing"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
)

func parseOne(t *testing.T, diff string) []*gitdiff.File {
	t.Helper()
	fs, err := Parse(diff)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

func TestParseLenient(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, diff string
		added      []string
		deleted    []string
		context    int
	}{
		{"well formed", "--- a/x.py\n+++ b/x.py\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n", []string{"B\n"}, []string{"b\n"}, 2},
		{"no counts", "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n a\n-b\n+B\n c\n", []string{"B\n"}, []string{"b\n"}, 2},
		{"counts too small", "--- a/x.py\n+++ b/x.py\n@@ -1,1 +1,1 @@\n a\n-b\n+B\n-c\n+C\n", []string{"B\n", "C\n"}, []string{"b\n", "c\n"}, 1},
		{"context without its space", "--- a/x.py\n+++ b/x.py\n@@ -1,4 +1,4 @@\n a\n\n-b\n+B\n", []string{"B\n"}, []string{"b\n"}, 2},
		{"bare header, prose after", "Fix:\n--- x.py\n+++ x.py\n@@ @@\n-b\n+B\n\nThat's it.\n", []string{"B\n"}, []string{"b\n"}, 0},
	}
	for _, tc := range cases {
		fs, ok := ParseLenient(tc.diff)
		if !ok || len(fs) != 1 || len(fs[0].TextFragments) != 1 {
			t.Errorf("%s: ok %v, %d files", tc.name, ok, len(fs))
			continue
		}
		var added, deleted []string
		context := 0
		for _, l := range fs[0].TextFragments[0].Lines {
			switch l.Op {
			case gitdiff.OpAdd:
				added = append(added, l.Line)
			case gitdiff.OpDelete:
				deleted = append(deleted, l.Line)
			default:
				context++
			}
		}
		if strings.Join(added, "|") != strings.Join(tc.added, "|") || strings.Join(deleted, "|") != strings.Join(tc.deleted, "|") || context != tc.context {
			t.Errorf("%s: added %q deleted %q context %d", tc.name, added, deleted, context)
		}
		if p := FilePath(fs[0]); p != "x.py" {
			t.Errorf("%s: path %q", tc.name, p)
		}
	}
	if _, ok := ParseLenient("def f():\n    return 1 - 2\n"); ok {
		t.Error("a program read as a diff")
	}
}

func TestReverse(t *testing.T) {
	t.Parallel()
	old, new := "a\nb\nc\nd\n", "a\nB\nc\nd\ne\n"
	d := Diff("p/f.txt", old, new)
	fs := parseOne(t, d)
	fwd, err := ApplyFile([]byte(old), fs[0], Options{})
	if err != nil || string(fwd) != new {
		t.Fatalf("forward: %v %q", err, fwd)
	}
	back, err := ApplyFile(fwd, Reverse(fs[0]), Options{Fuzz: -1})
	if err != nil || string(back) != old {
		t.Fatalf("reverse: %v %q", err, back)
	}
	created := parseOne(t, mustWrite(t, FileChange{Path: "n.txt", New: "x\n", Created: true}))[0]
	if r := Reverse(created); !r.IsDelete || r.IsNew || FilePath(r) != "n.txt" {
		t.Fatalf("reverse of a creation: %+v", r)
	}
}
