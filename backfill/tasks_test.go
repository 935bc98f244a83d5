package backfill

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/murphy-rl/murphy/backfill/cilog"
	"github.com/murphy-rl/murphy/backfill/deps"
	"github.com/murphy-rl/murphy/compilefix"
	"github.com/murphy-rl/murphy/compilefix/workspace"
	"github.com/murphy-rl/murphy/topics"
)

// reposDir holds the reference repositories (SOURCES.md), used by path.
const reposDir = "../../shared/data/repos"

// sandboxed is one Builder over a real build sandbox, shared by the tests
// of this package (one Go warm-up for all).
var sandboxed struct {
	once    sync.Once
	b       *Builder
	err     error
	skip    string
	closeFn func()
	dir     string
}

func TestMain(m *testing.M) {
	code := m.Run()
	if sandboxed.closeFn != nil {
		sandboxed.closeFn()
	}
	if sandboxed.dir != "" {
		os.RemoveAll(sandboxed.dir)
	}
	os.Exit(code)
}

// sandboxBuilder returns the shared Builder, skipping the test where the
// build sandbox cannot run (not root, no bubblewrap, -short).
func sandboxBuilder(t *testing.T) *Builder {
	t.Helper()
	if testing.Short() {
		t.Skip("builds real repositories in the sandbox")
	}
	sandboxed.once.Do(func() {
		switch {
		case os.Geteuid() != 0:
			sandboxed.skip = "the build sandbox needs root"
			return
		}
		if _, err := os.Stat("/usr/bin/bwrap"); err != nil {
			sandboxed.skip = "bubblewrap is not installed"
			return
		}
		dir, err := os.MkdirTemp("", "murphy-backfill-test-")
		if err != nil {
			sandboxed.err = err
			return
		}
		sandboxed.dir = dir
		storeDir := filepath.Join(dir, "store")
		cfg := compilefix.DefaultConfig()
		cfg.Store = storeDir
		cfg.Builder.Workers = 2
		// Uids of their own (other packages' builders lease 63000 on and
		// 66000 on); the lock directory is the shared default one.
		cfg.Builder.UIDBase, cfg.Builder.UIDCount = 67000, 100
		ctx := context.Background()
		cf, closeCF, err := compilefix.Open(ctx, cfg)
		if err != nil {
			sandboxed.err = err
			return
		}
		store, err := workspace.OpenStore(ctx, storeDir)
		if err != nil {
			closeCF()
			sandboxed.err = err
			return
		}
		dc := deps.DefaultConfig()
		dc.Dir = os.Getenv("MURPHY_DEPS_CACHE") // CI keeps fetched files for the whole run
		b, err := NewBuilder(store, cf, dc, Options{Dir: dir})
		if err != nil {
			store.Close()
			closeCF()
			sandboxed.err = err
			return
		}
		sandboxed.closeFn = func() { b.Deps.Close(); store.Close(); closeCF() }
		sandboxed.b = b
	})
	if sandboxed.skip != "" {
		t.Skip(sandboxed.skip)
	}
	if sandboxed.err != nil {
		t.Fatal(sandboxed.err)
	}
	b := *sandboxed.b
	b.Opts.Logf = t.Logf
	return &b
}

func repoPath(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(reposDir, name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("reference repository missing: %v", err)
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

func TestClassify(t *testing.T) {
	cases := map[string]string{
		"uuid.go":                          ClassSource,
		"src/main/java/a/B.java":           ClassSource,
		"more_itertools/more.py":           ClassSource,
		"cJSON.c":                          ClassSource,
		"uuid_test.go":                     ClassTest,
		"tests/test_more.py":               ClassTest,
		"src/test/java/a/BTest.java":       ClassTest,
		"test.c":                           ClassSource, // cJSON's example program, built by make
		"tests/parse_number.c":             ClassTest,
		"web/app.test.ts":                  ClassTest,
		"Makefile":                         ClassBuild,
		"go.mod":                           ClassBuild,
		"go.sum":                           ClassBuild,
		"pom.xml":                          ClassBuild,
		"build.gradle.kts":                 ClassBuild,
		"package.json":                     ClassBuild,
		"Cargo.toml":                       ClassBuild,
		"pyproject.toml":                   ClassBuild,
		"setup.py":                         ClassBuild,
		".github/workflows/ci.yml":         ClassBuild,
		"cmake/FindX.cmake":                ClassBuild,
		"README.md":                        ClassDocs,
		"docs/api.rst":                     ClassDocs,
		"LICENSE":                          ClassDocs,
		"CONTRIBUTORS":                     ClassDocs,
		"CHANGELOG.md":                     ClassDocs,
		".github/ISSUE_TEMPLATE/bug.md":    ClassDocs,
		"assets/logo.png":                  ClassOther,
		"more_itertools/py.typed":          ClassOther,
		"./library/internal/thing_test.go": ClassTest,
	}
	for p, want := range cases {
		if got := Classify(p); got != want {
			t.Errorf("Classify(%q) = %s, want %s", p, got, want)
		}
	}
}

const splitDiff = `diff --git a/uuid.go b/uuid.go
index 1111111..2222222 100644
--- a/uuid.go
+++ b/uuid.go
@@ -1,3 +1,3 @@
 package uuid
-var x = undefinedName
+var x = 1
 // end
diff --git a/uuid_test.go b/uuid_test.go
index 1111111..2222222 100644
--- a/uuid_test.go
+++ b/uuid_test.go
@@ -1,2 +1,3 @@
 package uuid
+// a test
 // end
diff --git a/README.md b/README.md
index 1111111..2222222 100644
--- a/README.md
+++ b/README.md
@@ -1,2 +1,3 @@
 # uuid
+More words.
 end
diff --git a/go.mod b/go.mod
index 1111111..2222222 100644
--- a/go.mod
+++ b/go.mod
@@ -1 +1,2 @@
 module github.com/google/uuid
+go 1.21
`

func TestSplitPatch(t *testing.T) {
	s, err := SplitPatch(splitDiff)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{ClassSource: {"uuid.go"}, ClassTest: {"uuid_test.go"}, ClassDocs: {"README.md"}, ClassBuild: {"go.mod"}}
	for c, fs := range want {
		if strings.Join(s.Files[c], ",") != strings.Join(fs, ",") {
			t.Errorf("%s files %v, want %v", c, s.Files[c], fs)
		}
		p := s.Patches[c]
		if !strings.HasPrefix(p, "diff --git a/"+fs[0]+" b/"+fs[0]+"\n") {
			t.Errorf("%s patch does not start with its git header:\n%s", c, p)
		}
	}
	src := s.Patches[ClassSource]
	if strings.Contains(src, "uuid_test.go") || strings.Contains(src, "README") || strings.Contains(src, "go.mod") ||
		!strings.Contains(src, "+var x = 1") || !strings.Contains(src, "-var x = undefinedName") {
		t.Errorf("source patch:\n%s", src)
	}
	docsOnly, err := SplitPatch(splitDiff[strings.Index(splitDiff, "diff --git a/README.md"):strings.Index(splitDiff, "diff --git a/go.mod")])
	if err != nil {
		t.Fatal(err)
	}
	if docsOnly.Patches[ClassSource] != "" || len(docsOnly.Files[ClassDocs]) != 1 {
		t.Errorf("docs-only fix split as %v", docsOnly.Files)
	}
}

func TestLogTargetsAndMapPaths(t *testing.T) {
	mk := func(tool, sev, file string, line int, msg string) cilog.Diagnostic {
		return cilog.Diagnostic{Diagnostic: topics.Diagnostic{Tool: tool, Severity: sev, File: file, Line: line, Message: msg}}
	}
	ds := []cilog.Diagnostic{
		mk("go", "error", "/home/runner/work/uuid/uuid/uuid.go", 12, "undefined: x"),
		mk("go", "warning", "uuid.go", 13, "unused"),
		mk("gcc", "error", "src/lib/a.c", 3, "expected ';'"),
		mk("pytest", "error", "tests/test_a.py", 9, "AssertionError"),
		mk("javac", "error", "C:\\a\\repo\\src\\main\\java\\B.java", 4, "cannot find symbol"),
		mk("go", "error", "/usr/local/go/src/fmt/print.go", 1, "elsewhere"),
	}
	targets := LogTargets(ds)
	if len(targets) != 4 {
		t.Fatalf("LogTargets kept %d, want the 4 compile errors: %+v", len(targets), targets)
	}
	files := map[string]bool{"uuid.go": true, "lib/a.c": true, "src/main/java/B.java": true, "print.go": false}
	got := MapPaths(targets, files)
	want := []string{"uuid.go", "lib/a.c", "src/main/java/B.java", "/usr/local/go/src/fmt/print.go"}
	for i, d := range got {
		if d.File != want[i] {
			t.Errorf("target %d: file %q, want %q", i, d.File, want[i])
		}
	}
}

func TestMissingDependency(t *testing.T) {
	cases := []struct {
		out  string
		want bool
	}{
		{"main.go:3:2: no required module provides package github.com/x/y; to add it:\n", true},
		{"go: github.com/x/y@v1.2.3: module lookup disabled by GOPROXY=off\n", true},
		{"Traceback...\nModuleNotFoundError: No module named 'numpy'\n", true},
		{"[ERROR] Failed to execute goal on project a: Could not resolve dependencies for project x\n", true},
		{"a.c:1:10: fatal error: openssl/ssl.h: No such file or directory\n", true},
		{"sh: 1: cmake: not found\n", true},
		{"uuid.go:12:2: undefined: x\n", false},
		{"a.c:3:1: error: expected ';' before '}' token\n", false},
	}
	for _, c := range cases {
		if _, got := missingDependency(c.out); got != c.want {
			t.Errorf("missingDependency(%q) = %v, want %v", c.out, got, c.want)
		}
	}
}

func TestTaskIDIsContent(t *testing.T) {
	a := taskID("google uuid", "misspell-identifier", "sha256:aa", "patch")
	if a != taskID("google uuid", "misspell-identifier", "sha256:aa", "patch") {
		t.Fatal("task id is not deterministic")
	}
	if a == taskID("google uuid", "misspell-identifier", "sha256:aa", "patch2") || a == taskID("google uuid", "misspell-identifier", "sha256:ab", "patch") {
		t.Fatal("task id does not depend on the snapshot and the patch")
	}
	if !strings.HasPrefix(a, "backfill/google-uuid/misspell-identifier-") {
		t.Fatalf("task id %q", a)
	}
}

func TestBadItems(t *testing.T) {
	b := &Builder{} // rejected before anything is built
	cases := []struct {
		name string
		it   Item
	}{
		{"no repository", Item{Kind: KindInject, Build: []string{"make"}}},
		{"missing repository", Item{Kind: KindInject, Repo: "/nonexistent/repo", Build: []string{"make"}}},
		{"no build", Item{Kind: KindInject, Repo: "."}},
		{"unknown kind", Item{Kind: "other", Repo: ".", Build: []string{"make"}}},
		{"history without a fix", Item{Kind: KindHistory, Repo: ".", Fail: "HEAD", Log: "x.log", Build: []string{"make"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := b.BuildItem(context.Background(), c.it)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Tasks) != 0 || len(res.Rejected) != 1 || res.Rejected[0].Reason != RejectBadInput || res.Rejected[0].Detail == "" {
				t.Fatalf("result %+v, want one bad_input rejection", res)
			}
		})
	}
}

// TestLogTargetsOfRealLogs: the targets of real failing logs are their
// compiler errors, once each (Maven's echo folded), and not the build
// tool's summary, a runtime exception or a test failure.
func TestLogTargetsOfRealLogs(t *testing.T) {
	for _, c := range []struct {
		log  string
		want int
	}{
		{"../../shared/data/cilogs/cidiff/astor_1260/fail.log", 3},            // three javac errors, echoed by Maven
		{"../../shared/data/cilogs/cidiff/cidiff_57/fail.log", 0},             // a failing test
		{"../../shared/data/cilogs/cidiff/pushcommentgithub_173/fail.log", 0}, // a Python NameError at run time
		{"../../shared/data/cilogs/bugswarm-gha/7825239642.log", 1},           // javac through Gradle
	} {
		rep, err := cilog.ParseFile(c.log)
		if os.IsNotExist(err) {
			t.Skip("no CI logs at ../../shared/data")
		}
		if err != nil {
			t.Fatal(err)
		}
		targets := LogTargets(rep.Diagnostics)
		if len(targets) != c.want {
			t.Errorf("%s: %d targets, want %d: %+v", c.log, len(targets), c.want, targets)
		}
		for _, d := range targets {
			if d.File == "" || d.Line == 0 {
				t.Errorf("%s: unlocated target %+v", c.log, d)
			}
		}
	}
}
