package patch

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func mkTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, c := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(p, ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(full, []byte(c), mode); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func lines(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		b.WriteString("line ")
		b.WriteString(itoa(i))
		b.WriteByte('\n')
	}
	return b.String()
}

func itoa(i int) string {
	return strings.TrimSpace(strings.Repeat(" ", 0) + func() string {
		s := ""
		if i == 0 {
			return "0"
		}
		neg := i < 0
		if neg {
			i = -i
		}
		for i > 0 {
			s = string(rune('0'+i%10)) + s
			i /= 10
		}
		if neg {
			s = "-" + s
		}
		return s
	}())
}

func mustApply(t *testing.T, root, diff string, opt Options) *Result {
	t.Helper()
	r, err := Apply(root, diff, opt)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return r
}

func change(t *testing.T, r *Result, p string) Change {
	t.Helper()
	for _, c := range r.Files {
		if c.Path == p {
			return c
		}
	}
	t.Fatalf("no change for %s in %+v", p, r.Paths())
	return Change{}
}

// applyErr applies a diff that must fail and returns the *Error.
func applyErr(t *testing.T, root, diff string, opt Options) *Error {
	t.Helper()
	r, err := Apply(root, diff, opt)
	if err == nil {
		t.Fatalf("Apply succeeded: %+v", r.Paths())
	}
	var pe *Error
	if !errors.As(err, &pe) {
		t.Fatalf("error %T %v is not *Error", err, err)
	}
	return pe
}

const gitDiff = `diff --git a/src/a.c b/src/a.c
index 1111111..2222222 100644
--- a/src/a.c
+++ b/src/a.c
@@ -3,7 +3,7 @@
 line 3
 line 4
 line 5
-line 6
+line six
 line 7
 line 8
 line 9
@@ -14,6 +14,7 @@
 line 14
 line 15
 line 16
+line 16.5
 line 17
 line 18
 line 19
`

func TestApplyExact(t *testing.T) {
	root := mkTree(t, map[string]string{"src/a.c": lines(1, 20)})
	r := mustApply(t, root, gitDiff, Options{})
	c := change(t, r, "src/a.c")
	want := strings.Replace(lines(1, 20), "line 6\n", "line six\n", 1)
	want = strings.Replace(want, "line 17\n", "line 16.5\nline 17\n", 1)
	if string(c.New) != want || c.Offset != 0 || c.Fuzz != 0 || c.Created || c.Deleted || c.Mode != 0o644 {
		t.Fatalf("got %+v\n%s", c, c.New)
	}
	// The tree is untouched.
	if b, _ := os.ReadFile(filepath.Join(root, "src/a.c")); string(b) != lines(1, 20) {
		t.Fatal("tree modified")
	}
}

func TestApplyOffset(t *testing.T) {
	shifted := "new 1\nnew 2\nnew 3\nnew 4\nnew 5\n" + lines(1, 20)
	root := mkTree(t, map[string]string{"src/a.c": shifted})
	r := mustApply(t, root, gitDiff, Options{})
	c := change(t, r, "src/a.c")
	if c.Offset != 5 || c.Fuzz != 0 || !strings.Contains(string(c.New), "line six\n") || !strings.Contains(string(c.New), "line 16\nline 16.5\nline 17\n") {
		t.Fatalf("got offset %d fuzz %d\n%s", c.Offset, c.Fuzz, c.New)
	}
	// Negative offset: lines removed above.
	root = mkTree(t, map[string]string{"src/a.c": lines(3, 20)})
	c = change(t, mustApply(t, root, gitDiff, Options{}), "src/a.c")
	if c.Offset != -2 {
		t.Fatalf("offset %d", c.Offset)
	}
}

func TestApplyFuzz(t *testing.T) {
	// The first context line of hunk 1 differs: fuzz 1.
	content := strings.Replace(lines(1, 20), "line 3\n", "line three\n", 1)
	root := mkTree(t, map[string]string{"src/a.c": content})
	c := change(t, mustApply(t, root, gitDiff, Options{}), "src/a.c")
	if c.Fuzz != 1 || !strings.HasPrefix(string(c.New), "line 1\nline 2\nline three\nline 4\nline 5\nline six\n") {
		t.Fatalf("fuzz %d\n%s", c.Fuzz, c.New)
	}
	// Two leading lines differ: fuzz 2.
	content = strings.Replace(content, "line 4\n", "line four\n", 1)
	root = mkTree(t, map[string]string{"src/a.c": content})
	c = change(t, mustApply(t, root, gitDiff, Options{}), "src/a.c")
	if c.Fuzz != 2 {
		t.Fatalf("fuzz %d", c.Fuzz)
	}
	// Not with fuzz disabled.
	e := applyErr(t, root, gitDiff, Options{Fuzz: -1})
	if e.Hunk != 1 || e.Path != "src/a.c" || e.Code != CodeNoMatch {
		t.Fatalf("%+v", e)
	}
	if got := e.Error(); got != "hunk 1 of src/a.c does not apply: no match for context near line 3" {
		t.Fatalf("message %q", got)
	}
	// Three differ: beyond fuzz 2.
	content = strings.Replace(content, "line 5\n", "line five\n", 1)
	root = mkTree(t, map[string]string{"src/a.c": content})
	if e := applyErr(t, root, gitDiff, Options{}); e.Hunk != 1 {
		t.Fatalf("%+v", e)
	}
	// A changed line that differs never applies.
	content = strings.Replace(lines(1, 20), "line 6\n", "line 6 changed\n", 1)
	root = mkTree(t, map[string]string{"src/a.c": content})
	if e := applyErr(t, root, gitDiff, Options{}); e.Hunk != 1 {
		t.Fatalf("%+v", e)
	}
	// Second hunk fails: reported as hunk 2.
	content = strings.Replace(lines(1, 20), "line 16\n", "line sixteen\n", 1)
	content = strings.Replace(content, "line 15\n", "line fifteen\n", 1)
	content = strings.Replace(content, "line 17\n", "line seventeen\n", 1)
	root = mkTree(t, map[string]string{"src/a.c": content})
	if e := applyErr(t, root, gitDiff, Options{}); e.Hunk != 2 || !strings.Contains(e.Error(), "hunk 2 of src/a.c") {
		t.Fatalf("%+v", e)
	}
}

func TestCreateDelete(t *testing.T) {
	root := mkTree(t, map[string]string{"old.txt": "a\nb\n", "keep.txt": "k\n"})
	diff := `Here is my fix.

diff --git a/tools/gen.sh b/tools/gen.sh
new file mode 100755
index 0000000..3333333
--- /dev/null
+++ b/tools/gen.sh
@@ -0,0 +1,2 @@
+#!/bin/sh
+echo hi
diff --git a/old.txt b/old.txt
deleted file mode 100644
index 4444444..0000000
--- a/old.txt
+++ /dev/null
@@ -1,2 +0,0 @@
-a
-b
diff --git a/empty.txt b/empty.txt
new file mode 100644
index 0000000..e69de29
`
	r := mustApply(t, root, diff, Options{})
	c := change(t, r, "tools/gen.sh")
	if !c.Created || c.Mode != 0o755 || string(c.New) != "#!/bin/sh\necho hi\n" {
		t.Fatalf("%+v", c)
	}
	if d := change(t, r, "old.txt"); !d.Deleted || d.New != nil {
		t.Fatalf("%+v", d)
	}
	if e := change(t, r, "empty.txt"); !e.Created || len(e.New) != 0 || e.New == nil {
		t.Fatalf("%+v", e)
	}
	if got := strings.Join(r.Deleted(), ","); got != "old.txt" {
		t.Fatal(got)
	}
	if got := strings.Join(r.Paths(), ","); got != "empty.txt,old.txt,tools/gen.sh" {
		t.Fatal(got)
	}
	out := t.TempDir()
	if err := r.Write(out); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(out, "tools/gen.sh"))
	if err != nil || info.Mode().Perm() != 0o755 {
		t.Fatal(info, err)
	}
	if _, err := os.Stat(filepath.Join(out, "old.txt")); err == nil {
		t.Fatal("deleted file written")
	}
	if b, err := os.ReadFile(filepath.Join(out, "empty.txt")); err != nil || len(b) != 0 {
		t.Fatal(err)
	}

	// Plain diff -u creation and deletion.
	plain := `--- /dev/null	1970-01-01 00:00:00.000000000 +0000
+++ b/new.txt	2024-01-01 00:00:00.000000000 +0000
@@ -0,0 +1 @@
+new
--- a/keep.txt	2024-01-01 00:00:00.000000000 +0000
+++ /dev/null	1970-01-01 00:00:00.000000000 +0000
@@ -1 +0,0 @@
-k
`
	r = mustApply(t, root, plain, Options{})
	if c := change(t, r, "new.txt"); !c.Created || string(c.New) != "new\n" {
		t.Fatalf("%+v", c)
	}
	if c := change(t, r, "keep.txt"); !c.Deleted {
		t.Fatalf("%+v", c)
	}

	// Creating an existing file, deleting a missing one.
	if e := applyErr(t, root, strings.ReplaceAll(diff, "tools/gen.sh", "keep.txt"), Options{}); e.Code != CodeExists || e.Path != "keep.txt" {
		t.Fatalf("%+v", e)
	}
	del := "--- a/missing.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-k\n"
	if e := applyErr(t, root, del, Options{}); e.Code != CodeNotFound {
		t.Fatalf("%+v", e)
	}
	// A deletion that leaves content.
	del = "diff --git a/old.txt b/old.txt\ndeleted file mode 100644\n--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-a\n"
	if e := applyErr(t, root, del, Options{}); e.Code != CodeNoMatch && e.Code != CodeMalformed {
		t.Fatalf("%+v", e)
	}
}

func TestPrefixes(t *testing.T) {
	root := mkTree(t, map[string]string{"src/x.c": "int a;\nint b;\nint c;\n"})
	body := "@@ -1,3 +1,3 @@\n int a;\n-int b;\n+long b;\n int c;\n"
	want := "int a;\nlong b;\nint c;\n"
	for name, hdr := range map[string]string{
		"a/b":       "--- a/src/x.c\n+++ b/src/x.c\n",
		"p0":        "--- src/x.c\n+++ src/x.c\n",
		"p0 dot":    "--- ./src/x.c\n+++ ./src/x.c\n",
		"p1 other":  "--- proj.orig/src/x.c\t2024-01-02 03:04:05\n+++ proj/src/x.c\t2024-01-02 03:04:06\n",
		"git":       "diff --git a/src/x.c b/src/x.c\nindex 1..2 100644\n--- a/src/x.c\n+++ b/src/x.c\n",
		"with text": "Sure! The fix changes b's type:\n\n```diff\n--- a/src/x.c\n+++ b/src/x.c\n",
	} {
		t.Run(name, func(t *testing.T) {
			d := hdr + body
			if name == "with text" {
				d += "```\n\nThis makes b a long.\n"
			}
			c := change(t, mustApply(t, root, d, Options{}), "src/x.c")
			if string(c.New) != want {
				t.Fatalf("%q", c.New)
			}
		})
	}
	// Missing either way.
	if e := applyErr(t, root, "--- a/src/y.c\n+++ b/src/y.c\n"+body, Options{}); e.Code != CodeNotFound || e.Path != "src/y.c" {
		t.Fatalf("%+v", e)
	}
}

func TestCRLF(t *testing.T) {
	crlf := "one\r\ntwo\r\nthree\r\n"
	root := mkTree(t, map[string]string{"w.txt": crlf, "u.txt": "one\ntwo\nthree\n"})
	// diff -u of a CRLF file: LF headers, CRLF content lines.
	d := "--- a/w.txt\n+++ b/w.txt\n@@ -1,3 +1,3 @@\n one\r\n-two\r\n+TWO\r\n three\r\n"
	c := change(t, mustApply(t, root, d, Options{}), "w.txt")
	if string(c.New) != "one\r\nTWO\r\nthree\r\n" {
		t.Fatalf("%q", c.New)
	}
	// An LF diff does not match CRLF lines (exact, as patch without -l).
	lf := "--- a/w.txt\n+++ b/w.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n"
	if e := applyErr(t, root, lf, Options{}); e.Code != CodeNoMatch {
		t.Fatalf("%+v", e)
	}
	// A diff converted to CRLF as a whole applies to an LF file, like GNU
	// patch's stripping of trailing CRs.
	all := strings.ReplaceAll(strings.ReplaceAll(lf, "w.txt", "u.txt"), "\n", "\r\n")
	c = change(t, mustApply(t, root, all, Options{}), "u.txt")
	if string(c.New) != "one\nTWO\nthree\n" {
		t.Fatalf("%q", c.New)
	}
}

func TestNoNewlineAtEOF(t *testing.T) {
	root := mkTree(t, map[string]string{"n.txt": "a\nb"})
	d := "--- a/n.txt\n+++ b/n.txt\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n"
	c := change(t, mustApply(t, root, d, Options{}), "n.txt")
	if string(c.New) != "a\nc\n" {
		t.Fatalf("%q", c.New)
	}
}

func TestMultipleSectionsSameFile(t *testing.T) {
	root := mkTree(t, map[string]string{"m.txt": lines(1, 10)})
	d := "--- a/m.txt\n+++ b/m.txt\n@@ -2,1 +2,1 @@\n-line 2\n+two\n--- a/m.txt\n+++ b/m.txt\n@@ -9,1 +9,1 @@\n-line 9\n+nine\n"
	r := mustApply(t, root, d, Options{})
	if len(r.Files) != 1 {
		t.Fatal(r.Paths())
	}
	if c := r.Files[0]; !strings.Contains(string(c.New), "two\n") || !strings.Contains(string(c.New), "nine\n") {
		t.Fatalf("%s", c.New)
	}
}

func TestRename(t *testing.T) {
	root := mkTree(t, map[string]string{"a.txt": "x\ny\n"})
	d := "diff --git a/a.txt b/sub/b.txt\nsimilarity index 50%\nrename from a.txt\nrename to sub/b.txt\n--- a/a.txt\n+++ b/sub/b.txt\n@@ -1,2 +1,2 @@\n x\n-y\n+z\n"
	r := mustApply(t, root, d, Options{})
	if c := change(t, r, "a.txt"); !c.Deleted {
		t.Fatalf("%+v", c)
	}
	if c := change(t, r, "sub/b.txt"); !c.Created || string(c.New) != "x\nz\n" {
		t.Fatalf("%+v", c)
	}
	out := strings.ReplaceAll(d, "sub/b.txt", "../b.txt")
	if e := applyErr(t, root, out, Options{}); e.Code != CodeEscape {
		t.Fatalf("%+v", e)
	}
	cp := "diff --git a/a.txt b/../../c.txt\nsimilarity index 100%\ncopy from a.txt\ncopy to ../../c.txt\n"
	if e := applyErr(t, root, cp, Options{}); e.Code != CodeEscape && e.Code != CodeMalformed {
		t.Fatalf("%+v", e)
	}
}

func TestRefusals(t *testing.T) {
	root := mkTree(t, map[string]string{
		"Makefile":    "all:\n\tcc x.c\n",
		"build.sh":    "#!/bin/sh\nmake\n",
		"x.c":         "int x;\n",
		"real/f.c":    "int f;\n",
		"go.mod":      "module m\n",
		"sub/lib.mk":  "X=1\n",
		"vendor/v.go": "package v\n",
	})
	if err := os.Symlink("real", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("x.c", filepath.Join(root, "y.c")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(root, "etc")); err != nil {
		t.Fatal(err)
	}
	mod := func(p, old, new string) string {
		return "--- a/" + p + "\n+++ b/" + p + "\n@@ -1 +1 @@\n-" + old + "\n+" + new + "\n"
	}
	protected := DefaultProtected([]string{"sh", "build.sh"})
	cases := []struct {
		name, diff string
		code       string
	}{
		{"empty", "", CodeEmpty},
		{"blank", " \n\n\t\n", CodeEmpty},
		{"prose only", "I could not find the bug, sorry.\nMaybe check x.c?\n", CodeEmpty},
		{"dotdot git", "diff --git a/../etc/passwd b/../etc/passwd\n--- a/../etc/passwd\n+++ b/../etc/passwd\n@@ -1 +1 @@\n-root\n+evil\n", CodeEscape},
		{"dotdot plain", "--- ../etc/passwd\n+++ ../etc/passwd\n@@ -1 +1 @@\n-root\n+evil\n", CodeEscape},
		{"dotdot inner", mod("src/../../etc/passwd", "root", "evil"), CodeEscape},
		{"absolute", "--- /etc/passwd\n+++ /etc/passwd\n@@ -1 +1 @@\n-root\n+evil\n", CodeEscape},
		{"absolute new", "--- /dev/null\n+++ /tmp/evil\n@@ -0,0 +1 @@\n+evil\n", CodeEscape},
		{"through symlink dir", mod("link/f.c", "int f;", "int g;"), CodeEscape},
		{"through symlink etc", "--- /dev/null\n+++ b/etc/cron.d/x\n@@ -0,0 +1 @@\n+evil\n", CodeEscape},
		{"symlink target", mod("y.c", "int x;", "int y;"), CodeEscape},
		{"git symlink", "diff --git a/s b/s\nnew file mode 120000\nindex 0000000..1111111\n--- /dev/null\n+++ b/s\n@@ -0,0 +1 @@\n+/etc/passwd\n\\ No newline at end of file\n", CodeMode},
		{"git mode change to symlink", "diff --git a/x.c b/x.c\nold mode 100644\nnew mode 120000\n", CodeMode},
		{"git submodule", "diff --git a/m b/m\nnew file mode 160000\nindex 0000000..1111111\n--- /dev/null\n+++ b/m\n@@ -0,0 +1 @@\n+Subproject commit 1111111111111111111111111111111111111111\n", CodeMode},
		{"git odd mode", "diff --git a/x.c b/x.c\nold mode 100644\nnew mode 100600\n", CodeMode},
		{"protected Makefile", mod("Makefile", "all:", "all: ; true"), CodeProtected},
		{"protected build.sh", mod("build.sh", "#!/bin/sh", "exit 0"), CodeProtected},
		{"protected go.mod", mod("go.mod", "module m", "module n"), CodeProtected},
		{"protected .mk", mod("sub/lib.mk", "X=1", "X=2"), CodeProtected},
		{"protected vendor", mod("vendor/v.go", "package v", "package w"), CodeProtected},
		{"protected new CMakeLists", "--- /dev/null\n+++ b/sub/CMakeLists.txt\n@@ -0,0 +1 @@\n+add_executable(x x.c)\n", CodeProtected},
		{"git dir", "--- /dev/null\n+++ b/.git/hooks/pre-commit\n@@ -0,0 +1 @@\n+evil\n", CodeEscape},
		{"not found", mod("nope.c", "a", "b"), CodeNotFound},
		{"exists", "--- /dev/null\n+++ b/x.c\n@@ -0,0 +1 @@\n+int y;\n", CodeExists},
		{"directory", mod("real", "a", "b"), CodeEscape},
		{"binary", "diff --git a/img.png b/img.png\nnew file mode 100644\nindex 0000000..1111111\nGIT binary patch\nliteral 5\nMcmZQzWMXCl0000I00000\n\nliteral 0\nHcmV?d00001\n\n", CodeBinary},
		{"binary differ", "diff --git a/x.c b/x.c\nindex 1111111..2222222 100644\nBinary files a/x.c and b/x.c differ\n", CodeBinary},
		{"malformed count", "--- a/x.c\n+++ b/x.c\n@@ -1,3 +1,3 @@\n-int x;\n+int y;\n", CodeMalformed},
		{"malformed header", "--- a/x.c\n+++ b/x.c\n@@ -1,a +1 @@\n-int x;\n+int y;\n", CodeMalformed},
		{"no match", mod("x.c", "int z;", "int y;"), CodeNoMatch},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := applyErr(t, root, tc.diff, Options{Protected: protected})
			if e.Code != tc.code {
				t.Fatalf("code %s want %s: %v", e.Code, tc.code, e)
			}
			if e.Error() == "" || len(e.Error()) > 200 {
				t.Fatalf("message %q", e.Error())
			}
			t.Log(e)
		})
	}
	// Nothing outside the tree was touched or read into the result.
	if _, err := os.Stat(filepath.Join(root, "..", "evil")); err == nil {
		t.Fatal("escaped")
	}
}

func TestTooLargeFast(t *testing.T) {
	root := mkTree(t, map[string]string{"x.c": "int x;\n"})
	big := strings.Repeat("+"+strings.Repeat("x", 99)+"\n", 500_000) // 50 MB
	diff := "--- a/x.c\n+++ b/x.c\n@@ -1 +1,500000 @@\n" + big
	start := time.Now()
	e := applyErr(t, root, diff, Options{})
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Fatalf("took %v", d)
	}
	if e.Code != CodeTooLarge || !strings.Contains(e.Error(), "too large") {
		t.Fatalf("%+v", e)
	}
}

func TestLimits(t *testing.T) {
	files := map[string]string{}
	var d strings.Builder
	for i := range 5 {
		p := "f" + itoa(i) + ".txt"
		files[p] = "a\n"
		d.WriteString("--- a/" + p + "\n+++ b/" + p + "\n@@ -1 +1 @@\n-a\n+b\n")
	}
	root := mkTree(t, files)
	if e := applyErr(t, root, d.String(), Options{MaxFiles: 4}); e.Code != CodeTooMany {
		t.Fatalf("%+v", e)
	}
	if r := mustApply(t, root, d.String(), Options{MaxFiles: 5}); len(r.Files) != 5 {
		t.Fatal(r.Paths())
	}
	root = mkTree(t, map[string]string{"big.txt": strings.Repeat("x\n", 1000)})
	if e := applyErr(t, root, "--- a/big.txt\n+++ b/big.txt\n@@ -1 +1 @@\n-x\n+y\n", Options{MaxFileBytes: 1000}); e.Code != CodeFileTooBig {
		t.Fatalf("%+v", e)
	}
	// Growing past the limit.
	root = mkTree(t, map[string]string{"s.txt": "x\n"})
	grow := "--- a/s.txt\n+++ b/s.txt\n@@ -1 +1,2 @@\n x\n+" + strings.Repeat("y", 200) + "\n"
	if e := applyErr(t, root, grow, Options{MaxFileBytes: 100}); e.Code != CodeFileTooBig {
		t.Fatalf("%+v", e)
	}
}

func TestFileAndDirConflict(t *testing.T) {
	root := mkTree(t, map[string]string{"x.c": "int x;\n"})
	d := "--- /dev/null\n+++ b/a\n@@ -0,0 +1 @@\n+file\n--- /dev/null\n+++ b/a/b\n@@ -0,0 +1 @@\n+nested\n"
	if e := applyErr(t, root, d, Options{}); e.Code != CodeExists {
		t.Fatalf("%+v", e)
	}
	// Under an existing file of the tree.
	d = "--- /dev/null\n+++ b/x.c/b\n@@ -0,0 +1 @@\n+nested\n"
	if e := applyErr(t, root, d, Options{}); e.Code != CodeEscape {
		t.Fatalf("%+v", e)
	}
}

func TestDefaultProtected(t *testing.T) {
	p := DefaultProtected([]string{"bash", "-c", "./scripts/ci.sh && make -f build/rules.make"})
	for path, want := range map[string]bool{
		"Makefile": true, "src/makefile": true, "GNUmakefile": true, "rules.mk": true,
		"CMakeLists.txt": true, "cmake/foo.cmake": true,
		"go.mod": true, "sub/go.sum": true, "vendor/x/y.go": true,
		"pom.xml": true, "build.gradle": true, "app/build.gradle.kts": true, "settings.gradle": true, "settings.gradle.kts": true,
		"gradle/wrapper/gradle-wrapper.properties": true, ".mvn/wrapper/x": true,
		"setup.py": true, "setup.cfg": true, "pyproject.toml": true, "tox.ini": true, "build.sh": true,
		".git/config": true, "scripts/ci.sh": true, "build/rules.make": true,
		"src/main.c": false, "src/gradle.c": false, "docs/make.md": false, "src/Makefile.c": false, "lib/setup_utils.py": false,
		"../x": true, "/etc/passwd": true,
	} {
		if got := p(path); got != want {
			t.Errorf("%s: %v want %v", path, got, want)
		}
	}
	q := DefaultProtected([]string{"sh", "build.sh"})
	if !q("build.sh") || q("x.sh") {
		t.Fatal("argv")
	}
	q = DefaultProtected([]string{"python3", "tools/build.py", "--config=conf/b.json"})
	if !q("tools/build.py") || !q("conf/b.json") {
		t.Fatal("argv paths")
	}
}

func TestWriteConfined(t *testing.T) {
	r := &Result{Files: []Change{{Path: "a/b.txt", New: []byte("x"), Mode: 0o644}}}
	out := t.TempDir()
	if err := r.Write(out); err != nil {
		t.Fatal(err)
	}
	r = &Result{Files: []Change{{Path: "../escape.txt", New: []byte("x"), Mode: 0o644}}}
	if err := r.Write(out); err == nil {
		t.Fatal("write escaped")
	}
}

func TestSimilarity(t *testing.T) {
	a := "--- a/x.c\n+++ b/x.c\n@@ -1,3 +1,3 @@\n int a;\n-int b;\n+long b;\n int c;\n"
	b := "diff --git a/x.c b/x.c\n--- a/x.c\n+++ b/x.c\n@@ -10,3 +10,3 @@ func\n ctx\n-int   b;\n+long b;  \n ctx\n"
	if s := Similarity(a, b); s != 1 {
		t.Fatalf("same change: %v", s)
	}
	c := "--- a/x.c\n+++ b/x.c\n@@ -1,3 +1,3 @@\n int a;\n-int b;\n+short b;\n int c;\n"
	if s := Similarity(a, c); s != 0.5 {
		t.Fatalf("half: %v", s)
	}
	d := "--- a/y.c\n+++ b/y.c\n@@ -1 +1 @@\n-foo\n+bar\n"
	if s := Similarity(a, d); s != 0 {
		t.Fatalf("different: %v", s)
	}
	if Similarity("", "") != 1 || Similarity(a, "") != 0 {
		t.Fatal("empty")
	}
	if s := Similarity(a, a+"--- a/z\n+++ b/z\n@@ -1 +1 @@\n-q\n+r\n"); s <= 0.5 || s >= 1 {
		t.Fatalf("superset: %v", s)
	}
}

func TestModeChange(t *testing.T) {
	root := mkTree(t, map[string]string{"run": "echo\n"})
	d := "diff --git a/run b/run\nold mode 100644\nnew mode 100755\n"
	c := change(t, mustApply(t, root, d, Options{}), "run")
	if c.Mode != 0o755 || string(c.New) != "echo\n" {
		t.Fatalf("%+v", c)
	}
}

func TestReadFile(t *testing.T) {
	root := mkTree(t, map[string]string{"src/a.c": "int a;\n", "big": strings.Repeat("x", 100)})
	if err := os.Symlink("src", filepath.Join(root, "l")); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(root, "src/a.c", 0); err != nil || string(b) != "int a;\n" {
		t.Fatal(b, err)
	}
	for _, rel := range []string{"l/a.c", "../x", "/etc/passwd", "src", "nope", "big"} {
		if _, err := ReadFile(root, rel, 50); err == nil {
			t.Errorf("%s read", rel)
		}
	}
}
