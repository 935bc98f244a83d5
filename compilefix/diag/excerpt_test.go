package diag

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/murphy-rl/murphy/topics"
)

func numbered(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

func TestExcerpt(t *testing.T) {
	root := tempRoot(t)
	writeFiles(t, root, map[string]string{
		"src/a.c":    numbered(12),
		"tabs.go":    "package main\n\nfunc main() {\n\t\tx := foo\n}\n",
		"crlf.txt":   "one\r\ntwo\r\nthree",
		"long.txt":   "short\n" + strings.Repeat("é", 1000) + "\nend\n",
		"bin.dat":    "ab\x00cd\nef\n",
		"inside/t.c": "int x;\n",
	})
	outside := tempRoot(t)
	writeFiles(t, outside, map[string]string{"secret.c": "SECRET\nSECRET\n"})
	if err := os.Symlink(filepath.Join(outside, "secret.c"), filepath.Join(root, "escape.c")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "escdir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("inside/t.c", filepath.Join(root, "link.c")); err != nil {
		t.Fatal(err)
	}

	got := Excerpt(root, topics.Diagnostic{File: "src/a.c", Line: 5, Column: 3}, 2)
	want := "  3 | line 3\n  4 | line 4\n> 5 | line 5\n    |   ^\n  6 | line 6\n  7 | line 7\n"
	if got != want {
		t.Errorf("excerpt:\n%s\nwant:\n%s", got, want)
	}
	got = Excerpt(root, topics.Diagnostic{File: "./src/a.c", Line: 11}, 2)
	want = "   9 | line 9\n  10 | line 10\n> 11 | line 11\n  12 | line 12\n"
	if got != want {
		t.Errorf("excerpt at the end:\n%s\nwant:\n%s", got, want)
	}
	if got := Excerpt(root, topics.Diagnostic{File: "src/a.c", Line: 1}, 0); got != "> 1 | line 1\n" {
		t.Errorf("no context: %q", got)
	}
	if got := Excerpt(root, topics.Diagnostic{File: "tabs.go", Line: 4, Column: 8}, 0); got != "> 4 | \t\tx := foo\n    | \t\t     ^\n" {
		t.Errorf("tabs: %q", got)
	}
	if got := Excerpt(root, topics.Diagnostic{File: "crlf.txt", Line: 3}, 1); got != "  2 | two\n> 3 | three\n" {
		t.Errorf("crlf: %q", got)
	}
	got = Excerpt(root, topics.Diagnostic{File: "long.txt", Line: 2}, 1)
	if !utf8.ValidString(got) || !strings.Contains(got, "…") || len(got) > 400 {
		t.Errorf("long line: %d bytes %q", len(got), got)
	}
	if got := Excerpt(root, topics.Diagnostic{File: "src/a.c", Line: 6}, 1000); strings.Count(got, "\n") != 12 {
		t.Errorf("large context: %q", got)
	}
	if got := Excerpt(root, topics.Diagnostic{File: "link.c", Line: 1}, 0); got != "> 1 | int x;\n" {
		t.Errorf("symlink inside the root: %q", got)
	}
	for _, d := range []topics.Diagnostic{
		{File: "src/a.c", Line: 13},                     // past the end
		{File: "src/a.c"},                               // no line
		{File: "", Line: 1},                             // no file
		{File: filepath.Join(root, "src/a.c"), Line: 1}, // absolute
		{File: "../" + filepath.Base(outside) + "/secret.c", Line: 1},
		{File: "src/../src/a.c", Line: 1},
		{File: "escape.c", Line: 1},        // symlink out of the root
		{File: "escdir/secret.c", Line: 1}, // through a symlinked directory
		{File: "bin.dat", Line: 2},         // binary
		{File: "src", Line: 1},             // a directory
		{File: "missing.c", Line: 1},
		{File: "<stdin>", Line: 1},
	} {
		if got := Excerpt(root, d, 2); got != "" {
			t.Errorf("Excerpt(%q, %d) = %q, want nothing", d.File, d.Line, got)
		}
	}
	if got := Excerpt("", topics.Diagnostic{File: "src/a.c", Line: 1}, 1); got != "" {
		t.Errorf("no root: %q", got)
	}
}

// TestExcerptCap: many long lines stay under MaxExcerpt.
func TestExcerptCap(t *testing.T) {
	root := tempRoot(t)
	writeFiles(t, root, map[string]string{"big.txt": strings.Repeat(strings.Repeat("x", 500)+"\n", 100)})
	got := Excerpt(root, topics.Diagnostic{File: "big.txt", Line: 50}, MaxExcerptContext)
	if len(got) > MaxExcerpt || got == "" {
		t.Errorf("%d bytes", len(got))
	}
}
