package backfill

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/backfill/inject"
)

// uuidHistory is google-uuid with three commits on top of its history: a
// breaking one (an identifier misspelt in uuid.go), a fix that repairs it
// and also touches a test and the README, and, on a side branch from the
// breaking commit, a "fix" that only changes the README.
type uuidHistory struct {
	dir, bundle             string
	fail, fix, docsOnly     string
	log, driftLog, mutation string
	file                    string
}

func runGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=murphy", "-c", "user.email=murphy@example.com", "-c", "advice.detachedHead=false"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func newUUIDHistory(t *testing.T) *uuidHistory {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not installed")
	}
	src := repoPath(t, "google-uuid.bundle")
	base := t.TempDir()
	h := &uuidHistory{dir: filepath.Join(base, "uuid"), file: "uuid.go"}
	runGit(t, base, "clone", "-q", src, h.dir)
	runGit(t, h.dir, "checkout", "-q", "-b", "work") // the bundle's HEAD is detached
	path := filepath.Join(h.dir, h.file)
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m, err := inject.Inject("go", inject.OpMisspell, h.file, orig, 3)
	if err != nil {
		t.Fatal(err)
	}
	h.mutation = m.Description
	write := func(p string, b []byte) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(h.dir, p), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	appendTo := func(p, s string) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(h.dir, p))
		if err != nil {
			t.Fatal(err)
		}
		write(p, append(b, s...))
	}
	write(h.file, m.New)
	runGit(t, h.dir, "commit", "-q", "-am", "refactor: rename")
	h.fail = runGit(t, h.dir, "rev-parse", "HEAD")

	// The failing CI log: the build's output with the paths of a GitHub
	// runner's checkout, in a GitHub Actions job log.
	build := exec.Command("go", "build", "./...")
	build.Dir = h.dir
	build.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false", "GOPROXY=off", "GOTOOLCHAIN=local", "GOWORK=off")
	out, err := build.CombinedOutput()
	if err == nil {
		t.Fatalf("the breaking commit builds (%s)", m.Description)
	}
	ci := strings.ReplaceAll(string(out), "./", "/home/runner/work/uuid/uuid/")
	h.log = filepath.Join(base, "fail.log")
	writeGHALog(t, h.log, ci)
	h.driftLog = filepath.Join(base, "drift.log")
	writeGHALog(t, h.driftLog, "# github.com/google/uuid\n/home/runner/work/uuid/uuid/hash.go:9:2: undefined: sha512.Sum512_224\n")

	write(h.file, orig)
	appendTo("uuid_test.go", "\n// TestNothing is a reminder.\n")
	appendTo("README.md", "\nThe build is fixed.\n")
	runGit(t, h.dir, "commit", "-q", "-am", "fix the build")
	h.fix = runGit(t, h.dir, "rev-parse", "HEAD")

	runGit(t, h.dir, "checkout", "-q", "-b", "docs", h.fail)
	appendTo("README.md", "\nDocumentation only.\n")
	runGit(t, h.dir, "commit", "-q", "-am", "docs")
	h.docsOnly = runGit(t, h.dir, "rev-parse", "HEAD")

	h.bundle = filepath.Join(base, "uuid.bundle")
	runGit(t, h.dir, "bundle", "create", "-q", h.bundle, "--all")
	return h
}

// writeGHALog writes output as the "Run go build" step of a GitHub
// Actions job log: timestamps before every line, groups, the error
// annotation at the end.
func writeGHALog(t *testing.T, path, output string) {
	t.Helper()
	ts := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	var b strings.Builder
	line := func(s string) {
		ts = ts.Add(123456700 * time.Nanosecond)
		fmt.Fprintf(&b, "%s %s\n", ts.Format("2006-01-02T15:04:05.0000000Z"), s)
	}
	line("##[group]Run actions/checkout@v4")
	line("Syncing repository: google/uuid")
	line("##[endgroup]")
	line("##[group]Run go build ./...")
	line("\x1b[36;1mgo build ./...\x1b[0m")
	line("shell: /usr/bin/bash -e {0}")
	line("##[endgroup]")
	for _, l := range strings.Split(strings.TrimRight(output, "\n"), "\n") {
		line(l)
	}
	line("##[error]Process completed with exit code 1.")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

var goBuild = []string{"go", "build", "./..."}

// TestHistoryTask builds the task of a real failing/fixing pair from a
// bundle: the failing revision is the snapshot, the targets are the log's
// errors that its sandbox build reproduces, the reference patch is the
// fix's source hunks (the test and README hunks split out and recorded),
// and the reference passes as execute grades it.
func TestHistoryTask(t *testing.T) {
	b := sandboxBuilder(t)
	h := newUUIDHistory(t)
	res, err := b.BuildItem(context.Background(), Item{Kind: KindHistory, Repo: h.bundle, Fail: h.fail, Fix: h.fix, Log: h.log, Build: goBuild})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tasks) != 1 || len(res.Rejected) != 0 {
		t.Fatalf("%d tasks, rejected %+v; want one task", len(res.Tasks), res.Rejected)
	}
	task, prov := res.Tasks[0], res.Provenance[0]
	if err := task.Validate(); err != nil {
		t.Fatal(err)
	}
	cf := task.CompileFix
	if task.Language != "go" || task.Source != SourceHistory || !strings.HasPrefix(task.TaskID, "backfill/uuid/") {
		t.Errorf("task %s: language %s source %s", task.TaskID, task.Language, task.Source)
	}
	ref := task.ReferencePatch
	if !strings.Contains(ref, "diff --git a/uuid.go b/uuid.go") || strings.Contains(ref, "uuid_test.go") || strings.Contains(ref, "README") {
		t.Errorf("the reference patch is not the source hunks alone:\n%s", ref)
	}
	if !strings.Contains(prov.Split[ClassTest], "TestNothing") || !strings.Contains(prov.Split[ClassDocs], "The build is fixed") {
		t.Errorf("the test and docs hunks are not recorded: %+v", prov.Split)
	}
	if prov.Fail != h.fail || prov.Fix != h.fix || prov.TaskID != task.TaskID {
		t.Errorf("provenance %+v", prov)
	}
	if len(cf.Targets) == 0 {
		t.Fatal("no targets")
	}
	for _, d := range cf.Targets {
		if d.File != h.file || d.Line == 0 || d.Severity != "error" {
			t.Errorf("target %+v: want an error at %s (the log's runner path mapped into the repository)", d, h.file)
		}
	}
	if res.Cause != "compile" {
		t.Errorf("log cause %q, want compile", res.Cause)
	}
	// The same pair from the working repository gives the same task.
	again, err := b.BuildItem(context.Background(), Item{Kind: KindHistory, Repo: h.dir, Name: "uuid", Fail: h.fail, Fix: h.fix, Log: h.log, Build: goBuild})
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Tasks) != 1 || again.Tasks[0].TaskID != task.TaskID || again.Tasks[0].ReferencePatch != ref {
		t.Errorf("the same pair from the repository directory: %+v", again)
	}
}

// TestHistoryRejections: items that cannot make a task are rejected with
// their reason, one by one.
func TestHistoryRejections(t *testing.T) {
	b := sandboxBuilder(t)
	h := newUUIDHistory(t)
	cases := []struct {
		name   string
		it     Item
		reason string
		detail string
	}{
		{"nonexistent revision", Item{Fail: "0123456789abcdef0123456789abcdef01234567", Fix: h.fix, Log: h.log, Build: goBuild},
			RejectBadInput, "does not exist"},
		{"nonexistent fix", Item{Fail: h.fail, Fix: "no-such-branch", Log: h.log, Build: goBuild}, RejectBadInput, "no-such-branch"},
		{"missing log", Item{Fail: h.fail, Fix: h.fix, Log: filepath.Join(t.TempDir(), "none.log"), Build: goBuild}, RejectBadInput, "log"},
		{"docs-only fix", Item{Fail: h.fail, Fix: h.docsOnly, Log: h.log, Build: goBuild}, RejectNoSourceChange, "README.md"},
		{"log not reproduced", Item{Fail: h.fail, Fix: h.fix, Log: h.driftLog, Build: goBuild}, RejectNotReproduced, "reproduces none"},
		{"build never finishes", Item{Fail: h.fail, Fix: h.fix, Log: h.log, Build: []string{"sh", "-c", "sleep 600"}, TimeoutMS: 1000},
			RejectTimeout, "did not finish"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			it := c.it
			it.Kind, it.Repo = KindHistory, h.dir
			start := time.Now()
			res, err := b.BuildItem(context.Background(), it)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Tasks) != 0 || len(res.Rejected) != 1 {
				t.Fatalf("%d tasks, rejected %+v; want one rejection", len(res.Tasks), res.Rejected)
			}
			rj := res.Rejected[0]
			if rj.Reason != c.reason || !strings.Contains(rj.Detail, c.detail) {
				t.Fatalf("rejected %s: %s; want %s mentioning %q", rj.Reason, rj.Detail, c.reason, c.detail)
			}
			t.Logf("%s: %s (%s)", rj.Reason, rj.Detail, time.Since(start).Round(time.Millisecond))
		})
	}
}
