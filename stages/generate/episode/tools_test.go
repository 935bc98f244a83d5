package episode

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// snapshot writes files (path -> contents) under a fresh directory.
func snapshot(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, c := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func newTools(t *testing.T, root string, build BuildFunc, cfg ToolsConfig) *Tools {
	t.Helper()
	tl, err := NewTools(root, build, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

// call runs a tool with arguments given as a Go value.
func callTool(t *testing.T, tl *Tools, name string, args any) Output {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	out, err := tl.Call(context.Background(), name, string(b))
	if err != nil {
		t.Fatalf("%s %s: %v", name, b, err)
	}
	return out
}

type m = map[string]any

func TestPathConfinement(t *testing.T) {
	root := snapshot(t, map[string]string{"src/a.c": "int a;\n", "b.txt": "b\n"})
	outside := snapshot(t, map[string]string{"secret": "hunter2\n"})
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "dirlink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.c", filepath.Join(root, "src", "inner")); err != nil {
		t.Fatal(err)
	}
	tl := newTools(t, root, nil, ToolsConfig{})
	bad := []string{"/etc/passwd", "../" + filepath.Base(outside) + "/secret", "src/../../x", "..", "link", "dirlink/secret",
		"src/inner", "b.txt/x", filepath.Join(outside, "secret")}
	for _, p := range bad {
		for _, c := range []struct {
			tool string
			args any
		}{
			{ToolReadFile, m{"path": p}},
			{ToolEdit, m{"path": p, "old": "", "new": "x"}},
			{ToolSearch, m{"pattern": "hunter", "path": p}},
			{ToolListFiles, m{"path": p}},
		} {
			out := callTool(t, tl, c.tool, c.args)
			if !out.Failed || strings.Contains(out.Text, "hunter2") {
				t.Errorf("%s %q: %+v", c.tool, p, out)
			}
		}
	}
	// Nothing was created, and the links are neither listed nor searched.
	if d, _ := tl.Diff(); d != "" {
		t.Fatalf("refused edits changed the workspace:\n%s", d)
	}
	ls := callTool(t, tl, ToolListFiles, m{})
	if ls.Text != "b.txt\nsrc/a.c\n" {
		t.Fatalf("list_files = %q", ls.Text)
	}
	if s := callTool(t, tl, ToolSearch, m{"pattern": "hunter|int"}); strings.Contains(s.Text, "hunter") || !strings.Contains(s.Text, "src/a.c:1: int a;") {
		t.Fatalf("search = %q", s.Text)
	}
	// Clean relative forms are fine.
	if r := callTool(t, tl, ToolReadFile, m{"path": "./src//a.c"}); r.Failed || !strings.Contains(r.Text, "int a;") {
		t.Fatalf("read ./src//a.c = %+v", r)
	}
}

func TestEditExactlyOnce(t *testing.T) {
	root := snapshot(t, map[string]string{"a.c": "x = 1;\ny = 2;\nx = 1;\n"})
	tl := newTools(t, root, nil, ToolsConfig{})
	out := callTool(t, tl, ToolEdit, m{"path": "a.c", "old": "x = 1;", "new": "x = 3;"})
	if !out.Failed || !strings.Contains(out.Text, "occurs 2 times") {
		t.Fatalf("twice: %+v", out)
	}
	out = callTool(t, tl, ToolEdit, m{"path": "a.c", "old": "z = 1;", "new": "x"})
	if !out.Failed || !strings.Contains(out.Text, "does not occur") {
		t.Fatalf("absent: %+v", out)
	}
	out = callTool(t, tl, ToolEdit, m{"path": "a.c", "old": "", "new": "x"})
	if !out.Failed || !strings.Contains(out.Text, "old is empty") {
		t.Fatalf("empty old on an existing file: %+v", out)
	}
	out = callTool(t, tl, ToolEdit, m{"path": "a.c", "old": "x"})
	if !out.Failed {
		t.Fatalf("missing new: %+v", out)
	}
	out = callTool(t, tl, ToolEdit, m{"path": "a.c", "old": "y = 2;\nx = 1;", "new": "y = 2;\nx = 4;\nw = 5;"})
	if out.Failed || !strings.Contains(out.Text, "     3\tx = 4;") || !strings.Contains(out.Text, "     4\tw = 5;") {
		t.Fatalf("unique edit: %+v", out)
	}
	if b, _ := tl.Read("a.c"); string(b) != "x = 1;\ny = 2;\nx = 4;\nw = 5;\n" {
		t.Fatalf("after edit: %q", b)
	}
	// Reading sees the overlay; the snapshot is untouched.
	if r := callTool(t, tl, ToolReadFile, m{"path": "a.c", "start_line": 3, "end_line": 9}); r.Text != "a.c (lines 3-4 of 4)\n     3\tx = 4;\n     4\tw = 5;\n" {
		t.Fatalf("read range = %q", r.Text)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "a.c")); string(b) != "x = 1;\ny = 2;\nx = 1;\n" {
		t.Fatal("the snapshot was written")
	}
	// Editing back to the snapshot leaves no change.
	callTool(t, tl, ToolEdit, m{"path": "a.c", "old": "x = 4;\nw = 5;\n", "new": "x = 1;\n"})
	if d, _ := tl.Diff(); d != "" {
		t.Fatalf("edited back, diff:\n%s", d)
	}
	// Creating a file.
	out = callTool(t, tl, ToolEdit, m{"path": "new/b.h", "old": "", "new": "int b;\n"})
	if out.Failed {
		t.Fatal(out.Text)
	}
	if ls := callTool(t, tl, ToolListFiles, m{}); ls.Text != "a.c\nnew/b.h (new)\n" {
		t.Fatalf("list = %q", ls.Text)
	}
	if out := callTool(t, tl, ToolEdit, m{"path": "nope.c", "old": "a", "new": "b"}); !out.Failed {
		t.Fatalf("edit of a missing file: %+v", out)
	}
}

func TestToolMisuse(t *testing.T) {
	tl := newTools(t, snapshot(t, map[string]string{"a": "1\n", "bin": "a\x00b"}), nil, ToolsConfig{})
	ctx := context.Background()
	for _, c := range []struct{ tool, args, want string }{
		{"rm", `{}`, "unknown tool"},
		{ToolReadFile, `{"path":`, "not a JSON object"},
		{ToolReadFile, `{"path":"a","start_line":"x"}`, "not a JSON object"},
		{ToolReadFile, `{}`, "a path is required"},
		{ToolReadFile, `{"path":"a","start_line":5}`, "past the end"},
		{ToolReadFile, `{"path":"bin"}`, "binary"},
		{ToolReadFile, `{"path":"."}`, "workspace root"},
		{ToolSearch, `{}`, "needs a pattern"},
		{ToolBuild, ``, "no build"},
	} {
		out, err := tl.Call(ctx, c.tool, c.args)
		if err != nil || !out.Failed || !strings.HasPrefix(out.Text, "error: ") || !strings.Contains(out.Text, c.want) {
			t.Errorf("%s %s: %+v %v", c.tool, c.args, out, err)
		}
	}
	if out, _ := tl.Call(ctx, ToolSubmit, ""); !out.Submitted {
		t.Fatal("submit did not submit")
	}
	s := callTool(t, tl, ToolSearch, m{"pattern": "(1"})
	if !strings.Contains(s.Text, "searched for it literally") && !strings.Contains(s.Text, "searched for literally") {
		t.Fatalf("invalid regexp: %q", s.Text)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := tl.Call(cctx, ToolReadFile, `{"path":"a"}`); err == nil {
		t.Fatal("a call after the context ended ran")
	}
}

func TestOutputCaps(t *testing.T) {
	var big strings.Builder
	for i := 0; i < 2000; i++ {
		big.WriteString("line with some text é\n")
	}
	root := snapshot(t, map[string]string{"big.txt": big.String()})
	tl := newTools(t, root, nil, ToolsConfig{MaxOutputBytes: 1024, MaxSearchResults: 7, MaxReadLines: 100000})
	r := callTool(t, tl, ToolReadFile, m{"path": "big.txt"})
	if len(r.Text) > 1024 || !strings.Contains(r.Text, "bytes omitted") || !strings.HasPrefix(r.Text, "big.txt (lines 1-2000 of 2000)") ||
		!strings.HasSuffix(r.Text, "  2000\tline with some text é\n") || !utf8.ValidString(r.Text) {
		t.Fatalf("capped read (%d bytes):\n%s", len(r.Text), r.Text)
	}
	s := callTool(t, tl, ToolSearch, m{"pattern": "some"})
	if strings.Count(s.Text, "big.txt:") != 7 || !strings.Contains(s.Text, "(2000 matches; the first 7 are shown)") {
		t.Fatalf("capped search:\n%s", s.Text)
	}
	tl2 := newTools(t, root, nil, ToolsConfig{MaxReadLines: 10})
	if r := callTool(t, tl2, ToolReadFile, m{"path": "big.txt"}); !strings.Contains(r.Text, "(lines 1-10 of 2000)") || !strings.Contains(r.Text, "1990 more lines") {
		t.Fatalf("line-capped read:\n%s", r.Text)
	}
	for _, n := range []int{1, 10, 49, 50, 64, 100, 333} {
		c := CapOutput(strings.Repeat("ab\nçd", 100), n)
		if len(c) > max(n, 1) || !utf8.ValidString(c) {
			t.Fatalf("CapOutput(%d) = %d bytes %q", n, len(c), c)
		}
	}
	if CapOutput("short", 0) != "short" || CapOutput("short", 5) != "short" {
		t.Fatal("CapOutput cut text within the bound")
	}
}

func TestDiffAppliesWithPatch(t *testing.T) {
	if _, err := exec.LookPath("patch"); err != nil {
		t.Skip("patch not installed")
	}
	files := map[string]string{
		"main.c":     "#include <stdio.h>\n\nint main(void) {\n\tprintf(\"hi\\n\");\n\treturn 0;\n}\n",
		"lib/u.c":    "int u(void) { return 1; }\n",
		"lib/gone.c": "int gone;\n",
		"noeol.txt":  "a\nb",
	}
	root := snapshot(t, files)
	var gotChanged map[string][]byte
	var gotDeleted []string
	build := func(ctx context.Context, changed map[string][]byte, deleted []string) (bool, string, error) {
		gotChanged, gotDeleted = changed, deleted
		return false, "main.c:4:2: error: nope\n", nil
	}
	tl := newTools(t, root, build, ToolsConfig{})
	callTool(t, tl, ToolEdit, m{"path": "main.c", "old": "\"hi\\n\"", "new": "\"hello\\n\""})
	callTool(t, tl, ToolEdit, m{"path": "lib/new.h", "old": "", "new": "int u(void);\n"})
	callTool(t, tl, ToolEdit, m{"path": "noeol.txt", "old": "b", "new": "c"})
	if err := tl.Delete("lib/gone.c"); err != nil {
		t.Fatal(err)
	}
	if err := tl.Delete("../x"); err == nil {
		t.Fatal("deleted outside the workspace")
	}
	out := callTool(t, tl, ToolBuild, m{})
	if out.Text != "build failed:\nmain.c:4:2: error: nope\n" || tl.Builds() != 1 {
		t.Fatalf("build output %q", out.Text)
	}
	if len(gotChanged) != 3 || string(gotChanged["lib/new.h"]) != "int u(void);\n" || len(gotDeleted) != 1 || gotDeleted[0] != "lib/gone.c" {
		t.Fatalf("build got changed %v deleted %v", gotChanged, gotDeleted)
	}
	if ls := callTool(t, tl, ToolListFiles, m{"path": "lib"}); ls.Text != "lib/new.h (new)\nlib/u.c\n" {
		t.Fatalf("list lib = %q", ls.Text)
	}

	diff, err := tl.Diff()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"diff --git a/lib/gone.c b/lib/gone.c\ndeleted file mode 100644\n--- a/lib/gone.c\n+++ /dev/null\n",
		"diff --git a/lib/new.h b/lib/new.h\nnew file mode 100644\n--- /dev/null\n+++ b/lib/new.h\n",
		"--- a/main.c\n+++ b/main.c\n", "\\ No newline at end of file"} {
		if !strings.Contains(diff, want) {
			t.Fatalf("diff lacks %q:\n%s", want, diff)
		}
	}
	// patch -p1 on a copy of the snapshot gives the episode's view.
	cp := snapshot(t, files)
	cmd := exec.Command("patch", "-p1", "--batch", "--silent")
	cmd.Dir, cmd.Stdin = cp, strings.NewReader(diff)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("patch -p1: %v\n%s\n%s", err, b, diff)
	}
	for _, p := range []string{"main.c", "lib/u.c", "lib/new.h", "noeol.txt"} {
		want, _ := tl.Read(p)
		got, err := os.ReadFile(filepath.Join(cp, p))
		if err != nil || string(got) != string(want) {
			t.Errorf("%s after patch: %q (%v), want %q", p, got, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(cp, "lib/gone.c")); !os.IsNotExist(err) {
		t.Errorf("lib/gone.c survived the patch: %v", err)
	}
	if _, err := exec.LookPath("git"); err == nil {
		cp2 := snapshot(t, files)
		cmd := exec.Command("git", "apply", "--check", "-")
		cmd.Dir, cmd.Stdin = cp2, strings.NewReader(diff)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git apply --check: %v\n%s", err, b)
		}
	}
}
