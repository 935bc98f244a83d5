package builtin

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/murphy-rl/murphy/compilefix/patch"
	"github.com/murphy-rl/murphy/compilefix/workspace"
	"github.com/murphy-rl/murphy/topics"
)

func TestCompileFixTasks(t *testing.T) {
	tasks, err := CompileFixTasks()
	if err != nil {
		t.Fatalf("CompileFixTasks: %v", err)
	}
	if len(tasks) < 12 {
		t.Fatalf("got %d tasks, want at least 12", len(tasks))
	}
	snaps, err := CompileFixSnapshots()
	if err != nil {
		t.Fatalf("CompileFixSnapshots: %v", err)
	}
	langs := map[string]int{}
	ids := map[string]bool{}
	for i, task := range tasks {
		if i > 0 && tasks[i-1].TaskID >= task.TaskID {
			t.Errorf("tasks not sorted by id: %s before %s", tasks[i-1].TaskID, task.TaskID)
		}
		if ids[task.TaskID] {
			t.Errorf("duplicate task_id %s", task.TaskID)
		}
		ids[task.TaskID] = true
		langs[task.Language]++
		t.Run(task.TaskID, func(t *testing.T) {
			if err := task.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			cf := task.CompileFix
			if task.Kind != topics.KindCompileFix || task.Source != "murphy-builtin" || task.RewardPolicy != topics.RewardTiered {
				t.Errorf("kind %q, source %q, reward policy %q", task.Kind, task.Source, task.RewardPolicy)
			}
			if task.TimeoutMS < 10_000 || task.TimeoutMS > 300_000 {
				t.Errorf("timeout_ms %d outside 10s..300s", task.TimeoutMS)
			}
			tarball, ok := snaps[cf.Workspace]
			if !ok {
				t.Fatalf("no snapshot for workspace %s", cf.Workspace)
			}
			if workspace.Digest(tarball) != cf.Workspace {
				t.Errorf("snapshot digest %s, want %s", workspace.Digest(tarball), cf.Workspace)
			}
			files := tarFiles(t, tarball)
			if n := countSources(files); n < 2 || n > 5 {
				t.Errorf("%d source files, want 2 to 5", n)
			}
			if !strings.HasSuffix(task.Prompt, "\n") {
				t.Error("prompt does not end with a newline")
			}
			if !strings.Contains(task.Prompt, "`"+strings.Join(cf.Build, " ")+"`") {
				t.Error("prompt does not name the build command")
			}
			for name, data := range files {
				if !strings.Contains(task.Prompt, "\n--- "+name+" ---\n"+string(data)) {
					t.Errorf("prompt lacks the contents of %s", name)
				}
			}
			for _, d := range cf.Targets {
				if _, ok := files[d.File]; !ok {
					t.Errorf("target file %s is not in the snapshot", d.File)
				}
				if !strings.Contains(task.Prompt, formatDiagnostic(d)) {
					t.Errorf("prompt lacks the target %q", formatDiagnostic(d))
				}
			}
			protected := patch.DefaultProtected(cf.Build)
			for _, p := range patchPaths(task.ReferencePatch) {
				if protected(p) {
					t.Errorf("fix.patch touches the build configuration file %s", p)
				}
				if _, ok := files[p]; !ok {
					t.Errorf("fix.patch names %s, which is not in the snapshot", p)
				}
			}
			if len(patchPaths(task.ReferencePatch)) == 0 {
				t.Error("fix.patch names no file")
			}
		})
	}
	if len(langs) < 3 {
		t.Errorf("languages %v, want at least 3", langs)
	}
	if len(snaps) != len(tasks) {
		t.Errorf("%d snapshots for %d tasks", len(snaps), len(tasks))
	}
}

// Every call returns fresh values with the same content.
func TestCompileFixFreshAndStable(t *testing.T) {
	a, err := CompileFixTasks()
	if err != nil {
		t.Fatal(err)
	}
	want := a[0].CompileFix.Workspace
	wantBuild := a[0].CompileFix.Build[0]
	wantMsg := a[0].CompileFix.Targets[0].Message
	a[0].CompileFix.Workspace = "changed"
	a[0].CompileFix.Build[0] = "changed"
	a[0].CompileFix.Targets[0].Message = "changed"
	a[0].Prompt = "changed"
	b, err := CompileFixTasks()
	if err != nil {
		t.Fatal(err)
	}
	if b[0].CompileFix.Workspace != want || b[0].CompileFix.Build[0] != wantBuild ||
		b[0].CompileFix.Targets[0].Message != wantMsg || b[0].Prompt == "changed" {
		t.Error("a caller's change to a returned task shows in the next call")
	}
	s1, err := CompileFixSnapshots()
	if err != nil {
		t.Fatal(err)
	}
	s1[want][0] ^= 0xff
	delete(s1, want)
	s2, err := CompileFixSnapshots()
	if err != nil {
		t.Fatal(err)
	}
	if workspace.Digest(s2[want]) != want {
		t.Error("a caller's change to a returned snapshot shows in the next call")
	}

	// The digests do not depend on the cached load: a second load from the
	// embedded files gives the same ones.
	set, err := loadCompileFix(compileFixFS, compileFixRoot)
	if err != nil {
		t.Fatal(err)
	}
	for i, task := range set.tasks {
		if task.CompileFix.Workspace != b[i].CompileFix.Workspace {
			t.Errorf("%s: digest %s on reload, %s before", task.TaskID, task.CompileFix.Workspace, b[i].CompileFix.Workspace)
		}
	}
}

// The renaming view of a Go task's src directory is a well-behaved fs.FS
// whose files carry their real names.
func TestSnapshotFS(t *testing.T) {
	src, err := fsSub("go-tokenizer")
	if err != nil {
		t.Fatal(err)
	}
	if err := fstest.TestFS(src, "go.mod", "main.go", "token/lexer.go", "token/lexer_test.go", "token/token.go"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"go.mod.txt", "main.go.txt", "../README.md"} {
		if _, err := src.Open(name); err == nil {
			t.Errorf("Open(%q) succeeded", name)
		}
	}
	if n, ok := snapshotName("notes.txt"); ok || n != "notes.txt" {
		t.Errorf("snapshotName(notes.txt) = %q, %v", n, ok)
	}
}

func fsSub(name string) (*snapshotFS, error) {
	sub, err := fs.Sub(compileFixFS, path.Join(compileFixRoot, name, "src"))
	if err != nil {
		return nil, err
	}
	return newSnapshotFS(sub)
}

// A stray build output or an unrenamed Go file in a src directory is an
// error, not part of a snapshot.
func TestSnapshotFSRejects(t *testing.T) {
	for name, file := range map[string]string{
		"pycache": "pkg/__pycache__/m.cpython-311.pyc",
		"object":  "ring.o",
		"go file": "main.go",
		"go.mod":  "go.mod",
	} {
		fsys := fstest.MapFS{"Makefile": {Data: []byte("all:\n")}, file: {Data: []byte("x")}}
		if _, err := newSnapshotFS(fsys); err == nil {
			t.Errorf("%s: %s accepted", name, file)
		}
	}
	fsys := fstest.MapFS{"a.go.txt": {Data: []byte("package a\n")}, "a.go.txt.txt": {Data: []byte("x")}}
	if _, err := newSnapshotFS(fsys); err != nil {
		t.Errorf("a.go.txt.txt (a.go.txt in the snapshot) refused: %v", err)
	}
}

// Each task's build, run with the real toolchain in a clean environment
// like the build sandbox's, fails with its targets; after fix.patch it
// succeeds and the tests command passes.
func TestCompileFixBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every task twice with the real toolchains")
	}
	patchBin, err := exec.LookPath("patch")
	if err != nil {
		t.Skip("GNU patch not installed")
	}
	if out, err := exec.Command(patchBin, "--version").Output(); err != nil || !bytes.Contains(out, []byte("GNU patch")) {
		t.Skip("patch is not GNU patch")
	}
	tasks, err := CompileFixTasks()
	if err != nil {
		t.Fatal(err)
	}
	snaps, err := CompileFixSnapshots()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	env := buildEnv(t, tmp)
	needs := map[string][]string{"c": {"gcc", "make"}, "go": {"go"}, "java": {"javac", "sh"}, "python": {"python3"}}
	for _, task := range tasks {
		t.Run(task.TaskID, func(t *testing.T) {
			for _, tool := range needs[task.Language] {
				if _, err := lookPath(env, tool); err != nil {
					t.Skipf("%s not installed: %s tasks not built", tool, task.Language)
				}
			}
			cf := task.CompileFix
			dir := t.TempDir()
			extract(t, snaps[cf.Workspace], dir)

			out, err := runIn(dir, env, cf.Build)
			if err == nil {
				t.Fatalf("the broken tree builds:\n%s", out)
			}
			text := normQuotes(string(out))
			flat := strings.Join(strings.Fields(text), " ")
			for _, d := range cf.Targets {
				if !located(text, d) {
					t.Errorf("output lacks the location %s:%d of target %q:\n%s", d.File, d.Line, d.Message, out)
				}
				for _, l := range strings.Split(normQuotes(d.Message), "\n") {
					if !strings.Contains(flat, strings.Join(strings.Fields(l), " ")) {
						t.Errorf("output lacks the message %q:\n%s", l, out)
					}
				}
			}

			p := exec.Command(patchBin, "-p1", "--batch", "--forward", "--fuzz=0", "--no-backup-if-mismatch")
			p.Dir, p.Stdin = dir, strings.NewReader(task.ReferencePatch)
			if out, err := p.CombinedOutput(); err != nil {
				t.Fatalf("patch -p1 < fix.patch: %v\n%s", err, out)
			}
			if out, err := runIn(dir, env, cf.Build); err != nil {
				t.Fatalf("the patched tree does not build: %v\n%s", err, out)
			}
			if len(cf.Tests) > 0 {
				if out, err := runIn(dir, env, cf.Tests); err != nil {
					t.Fatalf("the tests of the patched tree fail: %v\n%s", err, out)
				}
			}
		})
	}
}

// buildEnv is the build sandbox's environment (sandbox/build.go) with the
// caches, HOME and TMPDIR under dir, and the host PATH after the
// sandbox's so that a toolchain installed elsewhere is still found.
func buildEnv(t *testing.T, dir string) []string {
	t.Helper()
	for _, d := range []string{"home", "tmp"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return []string{
		"PATH=/usr/local/go/bin:/usr/local/bin:/usr/bin:/bin:" + os.Getenv("PATH"),
		"HOME=" + filepath.Join(dir, "home"), "TMPDIR=" + filepath.Join(dir, "tmp"),
		"LANG=C.UTF-8", "SOURCE_DATE_EPOCH=0",
		"GOCACHE=" + filepath.Join(dir, "gocache"), "GOPATH=" + filepath.Join(dir, "gopath"),
		"GOPROXY=off", "GOTOOLCHAIN=local", "GOTELEMETRY=off", "GOFLAGS=-buildvcs=false",
		"GONOSUMDB=*", "GOSUMDB=off", "PYTHONHASHSEED=0",
	}
}

func lookPath(env []string, tool string) (string, error) {
	for _, e := range env {
		if dirs, ok := strings.CutPrefix(e, "PATH="); ok {
			for _, d := range filepath.SplitList(dirs) {
				p := filepath.Join(d, tool)
				if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
					return p, nil
				}
			}
		}
	}
	return "", exec.ErrNotFound
}

// runIn runs argv in dir with env, its output combined, in at most two
// minutes.
func runIn(dir string, env, argv []string) ([]byte, error) {
	bin, err := lookPath(env, argv[0])
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, argv[1:]...)
	cmd.Dir, cmd.Env = dir, env
	return cmd.CombinedOutput()
}

// located reports whether out places a diagnostic at d's file and line,
// in one of the forms the tools print: "file:line:col:" (gcc, go),
// "file:line:" (javac), `File "./file", line N` and "(base, line N)"
// (Python's compileall).
func located(out string, d topics.Diagnostic) bool {
	n := strconv.Itoa(d.Line)
	loc := d.File + ":" + n + ":"
	if (d.Tool == "gcc" || d.Tool == "go") && d.Column > 0 {
		loc += strconv.Itoa(d.Column) + ":"
	}
	if strings.Contains(out, loc) || strings.Contains(out, d.File+`", line `+n+"\n") {
		return true
	}
	return strings.Contains(out, "'./"+d.File+"'") && strings.Contains(out, "("+path.Base(d.File)+", line "+n+")")
}

// normQuotes maps gcc's typographic quotes to ASCII ones, so that a test
// machine without a UTF-8 locale still matches.
func normQuotes(s string) string {
	return strings.NewReplacer("‘", "'", "’", "'").Replace(s)
}

func tarFiles(t *testing.T, tarball []byte) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(tarball))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[h.Name] = data
		}
	}
}

func extract(t *testing.T, tarball []byte, dir string) {
	t.Helper()
	for name, data := range tarFiles(t, tarball) {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

var sourceExt = regexp.MustCompile(`\.(c|h|go|java|py)$`)

// countSources counts the source files of a project, tests and headers
// excluded.
func countSources(files map[string][]byte) int {
	n := 0
	for name := range files {
		base := path.Base(name)
		if sourceExt.MatchString(base) && !strings.HasSuffix(base, ".h") && !strings.HasSuffix(base, "_test.go") &&
			!strings.HasPrefix(base, "test_") && base != "__init__.py" {
			n++
		}
	}
	return n
}

// patchPaths are the paths a unified diff names (a/ and b/ prefixes cut).
func patchPaths(patch string) []string {
	var out []string
	seen := map[string]bool{}
	for _, l := range strings.Split(patch, "\n") {
		var p string
		switch {
		case strings.HasPrefix(l, "--- a/"), strings.HasPrefix(l, "+++ b/"):
			p = l[6:]
		case strings.HasPrefix(l, "diff --git "):
			for _, f := range strings.Fields(l)[2:] {
				f = strings.TrimPrefix(strings.TrimPrefix(f, "a/"), "b/")
				if !seen[f] {
					seen[f] = true
					out = append(out, f)
				}
			}
			continue
		default:
			continue
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}
