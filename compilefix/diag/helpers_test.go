package diag

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/murphy-rl/murphy/topics"
)

// want is an expected diagnostic; msg is a part of the message, compared
// after NormalizeMessage (so quote styles do not matter).
type want struct {
	sev  string
	file string
	line int
	col  int
	code string
	msg  string
}

func (w want) String() string {
	return fmt.Sprintf("%s %s:%d:%d [%s] %q", w.sev, w.file, w.line, w.col, w.code, w.msg)
}

func show(d topics.Diagnostic) string {
	return fmt.Sprintf("%s %s:%d:%d [%s] %q (%s)", d.Severity, d.File, d.Line, d.Column, d.Code, d.Message, d.Tool)
}

func showAll(ds []topics.Diagnostic) string {
	var b strings.Builder
	for _, d := range ds {
		b.WriteString("\n\t" + show(d))
	}
	return b.String()
}

func matchesWant(d topics.Diagnostic, w want) bool {
	return d.Severity == w.sev && d.File == w.file && d.Line == w.line && d.Column == w.col &&
		d.Code == w.code && strings.Contains(NormalizeMessage(d.Message, ""), NormalizeMessage(w.msg, ""))
}

// check asserts that got holds exactly the wanted diagnostics, in order.
func check(t *testing.T, got []topics.Diagnostic, wants []want) {
	t.Helper()
	if len(got) != len(wants) {
		t.Errorf("got %d diagnostics, want %d:%s", len(got), len(wants), showAll(got))
	}
	for i := 0; i < len(got) && i < len(wants); i++ {
		if !matchesWant(got[i], wants[i]) {
			t.Errorf("diagnostic %d:\n\tgot  %s\n\twant %s", i, show(got[i]), wants[i])
		}
	}
}

// checkUnordered is check for output whose order the tool does not fix
// (go build runs packages in parallel).
func checkUnordered(t *testing.T, got []topics.Diagnostic, wants []want) {
	t.Helper()
	g := append([]topics.Diagnostic(nil), got...)
	w := append([]want(nil), wants...)
	sort.SliceStable(g, func(i, j int) bool {
		if g[i].File != g[j].File {
			return g[i].File < g[j].File
		}
		return g[i].Line*1000+g[i].Column < g[j].Line*1000+g[j].Column
	})
	sort.SliceStable(w, func(i, j int) bool {
		if w[i].file != w[j].file {
			return w[i].file < w[j].file
		}
		return w[i].line*1000+w[i].col < w[j].line*1000+w[j].col
	})
	check(t, g, w)
}

// checkTools asserts every diagnostic names tool.
func checkTools(t *testing.T, got []topics.Diagnostic, tool string) {
	t.Helper()
	for _, d := range got {
		if d.Tool != tool {
			t.Errorf("tool %q, want %q: %s", d.Tool, tool, show(d))
		}
	}
}

// sameDiagnostics asserts a and b agree on everything but the tool.
func sameDiagnostics(t *testing.T, what string, a, b []topics.Diagnostic) {
	t.Helper()
	strip := func(ds []topics.Diagnostic) []string {
		var out []string
		for _, d := range ds {
			d.Tool = ""
			out = append(out, show(d))
		}
		return out
	}
	if x, y := strings.Join(strip(a), "\n"), strings.Join(strip(b), "\n"); x != y {
		t.Errorf("%s differ:\n%s\n---\n%s", what, x, y)
	}
}

// lookTool finds a tool on PATH (or in extra places) or skips the test.
func lookTool(t *testing.T, name string, extra ...string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, e := range extra {
		if st, err := os.Stat(e); err == nil && !st.IsDir() {
			return e
		}
	}
	t.Skipf("%s not installed", name)
	return ""
}

// build runs a tool in dir and returns its combined output; the build is
// expected to fail (it is logged when it does not).
func build(t *testing.T, dir string, env []string, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Logf("%s %s succeeded", name, strings.Join(args, " "))
	}
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("%s: %v", name, err)
	}
	t.Logf("%s %s:\n%s", filepath.Base(name), strings.Join(args, " "), out)
	return out
}

// writeFiles writes files (path -> content) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// tempRoot is t.TempDir with symlinks resolved, since compilers print
// resolved absolute paths.
func tempRoot(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}
