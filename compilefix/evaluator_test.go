package compilefix

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/murphy-rl/murphy/compilefix/workspace"
	"github.com/murphy-rl/murphy/tasks/builtin"
	"github.com/murphy-rl/murphy/topics"
)

// openCompileFix opens a CompileFix over a store seeded with the built-in
// snapshots, and returns the built-in compile-fix tasks by id.
func openCompileFix(t *testing.T) (*Evaluator, map[string]*topics.Task, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the build sandbox needs root")
	}
	if _, err := os.Stat("/usr/bin/bwrap"); err != nil {
		t.Skip("bubblewrap is not installed")
	}
	ctx := context.Background()
	dir := t.TempDir()
	store, err := workspace.OpenStore(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	snaps, err := builtin.CompileFixSnapshots()
	if err != nil {
		t.Fatal(err)
	}
	for d, tb := range snaps {
		if err := store.Put(ctx, d, tb); err != nil {
			t.Fatal(err)
		}
	}
	store.Close()
	cfg := DefaultConfig()
	cfg.Store = dir
	cfg.Builder.Workers = 2
	cf, closeCF, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeCF)
	ts, err := builtin.CompileFixTasks()
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]*topics.Task{}
	for i := range ts {
		byID[ts[i].TaskID] = &ts[i]
	}
	return cf, byID, dir
}

func evalCF(t *testing.T, cf *Evaluator, task *topics.Task, diff string) Outcome {
	t.Helper()
	out, err := cf.Evaluate(context.Background(), task, diff, topics.DefaultFeedbackBytes)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCompileFixBuiltinReferences runs every built-in compile-fix task's
// reference patch in the build sandbox: it must pass, and the unpatched
// build (the baseline) must report the task's targets.
func TestCompileFixBuiltinReferences(t *testing.T) {
	cf, byID, _ := openCompileFix(t)
	if len(byID) < 12 {
		t.Fatalf("%d built-in compile-fix tasks, want >= 12", len(byID))
	}
	langs := map[string]bool{}
	for id, task := range byID {
		langs[task.Language] = true
		out := evalCF(t, cf, task, task.ReferencePatch)
		if out.Status != topics.StatusPassed || out.TargetsFixed != out.TargetsTotal || out.TargetsTotal == 0 {
			t.Errorf("%s: reference is %s (%d/%d targets fixed):\n%s", id, out.Status, out.TargetsFixed, out.TargetsTotal, out.Feedback)
		}
	}
	if len(langs) < 3 {
		t.Errorf("languages %v, want >= 3", langs)
	}
}

// TestCompileFixVerdicts covers what a candidate may send: a patch that
// leaves the error, one that deletes the offending line, broken diffs.
func TestCompileFixVerdicts(t *testing.T) {
	cf, byID, _ := openCompileFix(t)
	task := byID["murphy/cf-c-ini"]
	if task == nil {
		t.Fatal("no murphy/cf-c-ini")
	}
	// A comment elsewhere: applies, the build still fails on the targets.
	src, _ := os.ReadFile(filepath.Join("..", "tasks", "builtin", "compilefix", "c-ini", "src", "ini.h"))
	first := strings.SplitN(string(src), "\n", 2)[0]
	noop := fmt.Sprintf("--- a/ini.h\n+++ b/ini.h\n@@ -1 +1,2 @@\n+/* touched */\n %s\n", first)
	out := evalCF(t, cf, task, noop)
	if out.Status != topics.StatusCompileError || out.TargetsFixed != 0 || len(out.Diagnostics) == 0 {
		t.Fatalf("no-op patch: %+v", out)
	}
	if !strings.Contains(out.Feedback, "ini.c:53") || !strings.Contains(out.Feedback, "expected") {
		t.Fatalf("feedback does not name the target:\n%s", out.Feedback)
	}
	if len(out.Feedback) > topics.DefaultFeedbackBytes {
		t.Fatalf("feedback %d bytes", len(out.Feedback))
	}
	// A compile scope leaves the errors outside it out of the comparison
	// and the listed diagnostics; the failing build still does not compile.
	scoped := *task
	scf := *task.CompileFix
	scoped.CompileFix, scf.Scope = &scf, []string{"main.c"}
	out = evalCF(t, cf, &scoped, noop)
	if out.Status != topics.StatusCompileError || out.TargetsTotal != 0 || len(out.Diagnostics) != 0 {
		t.Fatalf("scoped to main.c: %s %v\n%s", out.Status, out.Diagnostics, out.Feedback)
	}
	for name, diff := range map[string]string{
		"empty":      "",
		"prose":      "I think the fix is to add a semicolon.",
		"no match":   "--- a/ini.c\n+++ b/ini.c\n@@ -50,3 +50,3 @@\n-this line is not there\n+nor this\n context\n",
		"no file":    "--- a/nope.c\n+++ b/nope.c\n@@ -1 +1 @@\n-a\n+b\n",
		"escape":     "--- a/../../etc/passwd\n+++ b/../../etc/passwd\n@@ -1 +1 @@\n-root\n+toor\n",
		"absolute":   "--- /etc/passwd\n+++ /etc/passwd\n@@ -1 +1 @@\n-root\n+toor\n",
		"symlink":    "diff --git a/evil b/evil\nnew file mode 120000\n--- /dev/null\n+++ b/evil\n@@ -0,0 +1 @@\n+/etc/shadow\n\\ No newline at end of file\n",
		"makefile":   "--- a/Makefile\n+++ b/Makefile\n@@ -1 +1 @@\n-x\n+all:\n",
		"build gone": "diff --git a/Makefile b/Makefile\ndeleted file mode 100644\n--- a/Makefile\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n",
	} {
		out := evalCF(t, cf, task, diff)
		if out.Status != topics.StatusPatchFailed || !strings.Contains(out.Feedback, "does not apply") {
			t.Errorf("%s: %s\n%s", name, out.Status, out.Feedback)
		}
	}
	start := time.Now()
	huge := "--- a/ini.c\n+++ b/ini.c\n@@ -1 +1 @@\n" + strings.Repeat("+x\n", 50<<20/3)
	if out := evalCF(t, cf, task, huge); out.Status != topics.StatusPatchFailed || time.Since(start) > 5*time.Second {
		t.Errorf("50 MB diff: %s in %s", out.Status, time.Since(start))
	}
	// After all that, the reference still passes.
	if out := evalCF(t, cf, task, task.ReferencePatch); out.Status != topics.StatusPassed {
		t.Fatalf("reference after hostile patches: %s\n%s", out.Status, out.Feedback)
	}
}

// TestCompileFixHostileSources are patches whose code attacks the build:
// reading host files at compile time, hanging the compiler, flooding its
// output. Each gets a clear status; none leaks or breaks the slot.
func TestCompileFixHostileSources(t *testing.T) {
	cf, byID, _ := openCompileFix(t)
	task := *byID["murphy/cf-c-ini"]
	task.TimeoutMS = 5000
	src, err := os.ReadFile(filepath.Join("..", "tasks", "builtin", "compilefix", "c-ini", "src", "ini.c"))
	if err != nil {
		t.Fatal(err)
	}
	fix := func(extra string) string {
		// The reference repair plus one more line after the fixed one.
		fixed := strings.Replace(string(src), "*eq = '\\0'\n", "*eq = '\\0';\n"+extra+"\n", 1)
		return udiff.Unified("a/ini.c", "b/ini.c", string(src), fixed)
	}
	cases := []struct {
		name, line string
		want       []string
		leak       string
	}{
		{"host file", `#include "/etc/shadow"`, []string{topics.StatusCompileError}, "root:"},
		{"proc environ", `#include "/proc/1/environ"`, []string{topics.StatusCompileError}, "PATH="},
		{"hang", `#include "/dev/zero"`, []string{topics.StatusTimeout, topics.StatusMemory, topics.StatusCompileError}, ""},
		{"flood", `#include "/dev/urandom"`, []string{topics.StatusTimeout, topics.StatusMemory, topics.StatusCompileError, topics.StatusOutputLimit}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := evalCF(t, cf, &task, fix(c.line))
			ok := false
			for _, w := range c.want {
				ok = ok || out.Status == w
			}
			if !ok {
				t.Fatalf("status %s, want one of %v\n%s", out.Status, c.want, out.Feedback)
			}
			if c.leak != "" && strings.Contains(out.Feedback, c.leak) {
				t.Fatalf("feedback leaks %q:\n%s", c.leak, out.Feedback)
			}
		})
	}
	if out := evalCF(t, cf, &task, task.ReferencePatch); out.Status != topics.StatusPassed {
		t.Fatalf("reference after hostile sources: %s\n%s", out.Status, out.Feedback)
	}
}

// TestCompileFixBadWorkspace: a task naming a snapshot the store lacks, or
// one whose stored object is corrupt, is a sandbox error (invalid_job), not
// a verdict on the candidate.
func TestCompileFixBadWorkspace(t *testing.T) {
	cf, byID, dir := openCompileFix(t)
	task := *byID["murphy/cf-py-todo"]
	cfs := *task.CompileFix
	task.CompileFix = &cfs
	cfs.Workspace = "sha256:" + strings.Repeat("0", 64)
	if out := evalCF(t, cf, &task, task.ReferencePatch); out.Status != topics.StatusSandboxError || out.SandboxErrorKind != topics.SandboxErrorInvalidJob {
		t.Fatalf("missing snapshot: %+v", out)
	}
	// Corrupt the stored object of another task, before it is cached.
	victim := *byID["murphy/cf-py-config"]
	key, err := workspace.Key(victim.CompileFix.Workspace)
	if err != nil {
		t.Fatal(err)
	}
	obj := filepath.Join(dir, key)
	b, err := os.ReadFile(obj)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(obj, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if out := evalCF(t, cf, &victim, victim.ReferencePatch); out.Status != topics.StatusSandboxError || out.SandboxErrorKind != topics.SandboxErrorInvalidJob {
		t.Fatalf("corrupt snapshot: %+v", out)
	}
	// Other tasks are unaffected.
	if out := evalCF(t, cf, byID["murphy/cf-py-todo"], byID["murphy/cf-py-todo"].ReferencePatch); out.Status != topics.StatusPassed {
		t.Fatalf("healthy task: %s\n%s", out.Status, out.Feedback)
	}
}

// TestCompileFixMavenOffline builds a Maven project offline from a
// read-only dependency cache (the host's local repository): the baseline's
// javac error comes through Maven's report, and the reference builds.
func TestCompileFixMavenOffline(t *testing.T) {
	home, _ := os.UserHomeDir()
	repo := filepath.Join(home, ".m2", "repository")
	if _, err := exec.LookPath("mvn"); err != nil {
		t.Skip("maven is not installed")
	}
	if _, err := os.Stat(filepath.Join(repo, "org", "apache", "maven", "plugins", "maven-compiler-plugin")); err != nil {
		t.Skip("no maven-compiler-plugin in " + repo)
	}
	if os.Geteuid() != 0 {
		t.Skip("the build sandbox needs root")
	}
	ctx := context.Background()
	const pom = `<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
<groupId>x</groupId><artifactId>x</artifactId><version>1</version>
<properties><maven.compiler.source>17</maven.compiler.source><maven.compiler.target>17</maven.compiler.target>
<project.build.sourceEncoding>UTF-8</project.build.sourceEncoding></properties></project>
`
	broken := "package x;\n\npublic class A {\n    int f() {\n        return y;\n    }\n}\n"
	fixed := strings.Replace(broken, "return y;", "return 1;", 1)
	tree := t.TempDir()
	for p, c := range map[string]string{"pom.xml": pom, "src/main/java/x/A.java": broken} {
		if err := os.MkdirAll(filepath.Join(tree, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tree, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	storeDir := t.TempDir()
	store, err := workspace.OpenStore(ctx, storeDir)
	if err != nil {
		t.Fatal(err)
	}
	digest, err := store.PutDir(ctx, tree)
	store.Close()
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Store, cfg.Builder.Workers, cfg.Builder.MavenRepository = storeDir, 1, repo
	cf, closeCF, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer closeCF()
	ref := udiff.Unified("a/src/main/java/x/A.java", "b/src/main/java/x/A.java", broken, fixed)
	task := &topics.Task{SchemaVersion: topics.SchemaVersion, TaskID: "maven", Kind: topics.KindCompileFix, Prompt: "fix", Language: "java",
		ReferencePatch: ref, TimeoutMS: 120000, CompileFix: &topics.CompileFix{Workspace: digest,
			Build: []string{"mvn", "-o", "-B", "-q", "compile"}, Toolchain: "maven"}}
	noop := udiff.Unified("a/pom.xml", "b/pom.xml", pom, pom+"\n")
	if out := evalCF(t, cf, task, noop); out.Status != topics.StatusPatchFailed {
		t.Fatalf("a pom.xml edit: %s\n%s", out.Status, out.Feedback) // build configuration
	}
	out := evalCF(t, cf, task, udiff.Unified("a/src/main/java/x/A.java", "b/src/main/java/x/A.java", broken, broken+"// touched\n"))
	if out.Status != topics.StatusCompileError || !strings.Contains(out.Feedback, "A.java:5") || !strings.Contains(out.Feedback, "cannot find symbol") {
		t.Fatalf("unfixed: %s\n%s", out.Status, out.Feedback)
	}
	if out := evalCF(t, cf, task, ref); out.Status != topics.StatusPassed {
		t.Fatalf("reference: %s\n%s", out.Status, out.Feedback)
	}
}

// TestOpenWithoutBubblewrap: a host without bubblewrap gets a clear error
// from Open, nothing left open, and no panic (the deferred cleanup once
// called the nil named result).
func TestOpenWithoutBubblewrap(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	cfg.Store = t.TempDir()
	cfg.CacheDir = t.TempDir()
	cfg.Builder.Bwrap = filepath.Join(t.TempDir(), "no-bwrap")
	cf, closeCF, err := Open(context.Background(), cfg)
	if err == nil {
		closeCF()
		t.Fatal("Open succeeded without bubblewrap")
	}
	if cf != nil || closeCF != nil {
		t.Errorf("Open failed but returned %v and a close func", cf)
	}
	if os.Geteuid() == 0 && !strings.Contains(err.Error(), "no-bwrap") {
		t.Errorf("error %q does not name the missing bubblewrap", err)
	}
	// The snapshot cache was released: another cache may lock its directory.
	// A process another test forks at that moment holds a copy of the lock's
	// descriptor until it execs, so the lock is awaited for a moment.
	var again *workspace.Cache
	var closeAgain func()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if again, closeAgain, err = workspace.OpenCache(context.Background(), cfg.Store, cfg.CacheDir, 1<<20, "x-"); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("the failed Open left the cache locked: %v", err)
	}
	_ = again
	closeAgain()
}
