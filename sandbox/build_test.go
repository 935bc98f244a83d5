package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// requireBuilder skips where the builder cannot run.
func requireBuilder(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the builder needs root")
	}
	if _, err := os.Stat("/usr/bin/bwrap"); err != nil {
		t.Skip("bubblewrap is not installed")
	}
}

func newTestBuilder(t *testing.T, mod func(*BuilderConfig)) *Builder {
	t.Helper()
	requireBuilder(t)
	cfg := DefaultBuilderConfig()
	cfg.Workers = 2
	if mod != nil {
		mod(&cfg)
	}
	b, err := NewBuilder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func build(t *testing.T, b *Builder, job *BuildJob) *BuildResult {
	t.Helper()
	res, err := b.Build(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func sh(script string) []string { return []string{"sh", "-c", script} }

func TestBuilderBuildsAndReportsFailures(t *testing.T) {
	b := newTestBuilder(t, nil)
	tree := writeTree(t, map[string]string{
		"main.c":   "#include <stdio.h>\nint main(void){ printf(\"%d\\n\", foo(3)); return 0; }\n",
		"Makefile": "all: main\nmain: main.c\n\tgcc -o main main.c\n",
	})
	res := build(t, b, &BuildJob{Tree: tree, Commands: [][]string{{"make"}, {"./main"}}})
	c := res.Commands[0]
	if res.OK() || !c.Ran || c.ExitCode != 2 || !strings.Contains(string(c.Output), "undefined reference to `foo'") {
		t.Fatalf("failing build: %+v\n%s", res, c.Output)
	}
	if res.Commands[1].Ran {
		t.Fatal("the command after a failed one ran")
	}
	// The overlay replaces main.c; the snapshot itself is never written.
	over := writeTree(t, map[string]string{"main.c": "#include <stdio.h>\nint main(void){ printf(\"%d\\n\", 3); return 0; }\n"})
	res = build(t, b, &BuildJob{Tree: tree, Overlay: over, Commands: [][]string{{"make"}, {"./main"}, sh("echo x > /src/main.c")}})
	if !res.Commands[0].OK() || strings.TrimSpace(string(res.Commands[1].Output)) != "3" {
		t.Fatalf("patched build: %+v", res)
	}
	if res.Commands[2].OK() {
		t.Fatal("the snapshot is writable")
	}
	if b, _ := os.ReadFile(filepath.Join(tree, "main.c")); !strings.Contains(string(b), "foo(3)") {
		t.Fatal("the snapshot changed")
	}
	// A snapshot is materialised read-only; its copy in the job is writable
	// throughout, also where the overlay touches nothing.
	ro := writeTree(t, map[string]string{"sub/deep/x.c": "int x;\n"})
	for _, d := range []string{"sub/deep", "sub", "."} {
		if err := os.Chmod(filepath.Join(ro, d), 0o555); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = os.Chmod(ro, 0o755) })
	res = build(t, b, &BuildJob{Tree: ro, Commands: [][]string{sh("touch sub/deep/x.o new && rm sub/deep/x.c")}})
	if !res.OK() {
		t.Fatalf("read-only snapshot copy: %+v %s", res, res.Commands[0].Output)
	}
	res = build(t, b, &BuildJob{Tree: tree, Deleted: []string{"main.c"}, Commands: [][]string{sh("test ! -e main.c && test -e Makefile")}})
	if !res.OK() {
		t.Fatalf("deleted file still there: %+v %s", res, res.Commands[0].Output)
	}
}

func TestBuilderLimits(t *testing.T) {
	b := newTestBuilder(t, func(c *BuilderConfig) {
		c.Limits.Wall, c.Limits.CPU = 3*time.Second, time.Second
		c.Limits.OutputBytes, c.Limits.DiskMB, c.Limits.Procs = 64<<10, 8, 64
	})
	tree := writeTree(t, map[string]string{"x": "x\n"})
	cases := []struct {
		name  string
		cmd   []string
		check func(c CommandResult) bool
	}{
		{"sleep", sh("sleep 60"), func(c CommandResult) bool { return c.TimedOut && c.Wall < 10*time.Second }},
		{"two busy children", sh("yes >/dev/null & yes >/dev/null & wait"), func(c CommandResult) bool {
			return c.TimedOut && c.CPU >= time.Second && c.CPU < 3*time.Second
		}},
		{"flood", []string{"yes"}, func(c CommandResult) bool { return c.OutputLimited && len(c.Output) == 64<<10 }},
		{"disk", sh("dd if=/dev/zero of=big bs=1M count=64"), func(c CommandResult) bool { return !c.OK() && c.DiskFull }},
		{"fork bomb", sh("for i in $(seq 200); do sleep 30 & done; wait"), func(c CommandResult) bool { return !c.OK() || c.TimedOut }},
		{"network", []string{"python3", "-c", "import socket; socket.create_connection(('1.1.1.1', 80), timeout=2)"}, func(c CommandResult) bool {
			return !c.OK() && strings.Contains(string(c.Output), "Network is unreachable")
		}},
		{"host files", sh("cat /etc/shadow || ls /root || ls /home/*"), func(c CommandResult) bool { return !c.OK() }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := build(t, b, &BuildJob{Tree: tree, Commands: [][]string{tc.cmd}})
			if c := res.Commands[0]; !tc.check(c) || res.SandboxError != "" {
				t.Fatalf("%+v\n%.400s", res, c.Output)
			}
		})
	}
	// After all that, a build still works.
	if res := build(t, b, &BuildJob{Tree: tree, Commands: [][]string{sh("cat x")}}); !res.OK() {
		t.Fatalf("slot broken: %+v", res)
	}
}

func TestBuilderIsolatesJobsAndCommands(t *testing.T) {
	b := newTestBuilder(t, func(c *BuilderConfig) { c.Workers = 1 })
	tree := writeTree(t, map[string]string{"x": "x\n"})
	res := build(t, b, &BuildJob{Tree: tree, Commands: [][]string{
		sh("echo secret > /tmp/left; echo secret > left; (python3 -c 'import time; time.sleep(60)' marker7x &) ; exit 0"),
		// The first command's background process is gone before the next.
		sh("for p in /proc/[0-9]*; do grep -q mark''er7x $p/cmdline 2>/dev/null && exit 1; done; exit 0"),
	}})
	if !res.OK() {
		t.Fatalf("%+v %s", res, res.Commands[1].Output)
	}
	res = build(t, b, &BuildJob{Tree: tree, Commands: [][]string{sh("test ! -e /tmp/left && test ! -e left")}})
	if !res.OK() {
		t.Fatal("a job saw an earlier job's files")
	}
}

func TestBuilderKeepsAndSeeds(t *testing.T) {
	b := newTestBuilder(t, nil)
	tree := writeTree(t, map[string]string{"x": "x\n"})
	exp := filepath.Join(t.TempDir(), "export")
	// Kept even though the command fails (a baseline build fails).
	res := build(t, b, &BuildJob{Tree: tree, Commands: [][]string{sh("mkdir -p /tmp/cache && echo warm > /tmp/cache/entry && exit 2")},
		Keep: []string{"cache"}, Export: exp})
	if res.Commands[0].ExitCode != 2 {
		t.Fatalf("%+v", res)
	}
	fi, err := os.Stat(filepath.Join(exp, "cache", "entry"))
	if err != nil || fi.Mode().Perm() != 0o444 {
		t.Fatalf("export not sealed: %v %v", fi, err)
	}
	for range 2 { // both slots' uids read the seed; neither changes it
		res = build(t, b, &BuildJob{Tree: tree, Seed: exp, Commands: [][]string{sh("grep -q warm /tmp/cache/entry && ! (echo cold > /tmp/cache/entry) && rm /tmp/cache/entry && echo cold > /tmp/cache/entry && echo new > /tmp/cache/other")}})
		if !res.OK() {
			t.Fatalf("seed: %+v %s", res, res.Commands[0].Output)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(exp, "cache", "entry")); string(got) != "warm\n" {
		t.Fatalf("seed changed: %q", got)
	}
}

func TestBuilderRefusesBadJobs(t *testing.T) {
	b := newTestBuilder(t, nil)
	tree := writeTree(t, map[string]string{"x": "x\n"})
	for _, job := range []*BuildJob{
		{Tree: filepath.Join(tree, "missing"), Commands: [][]string{{"true"}}},
		{Tree: tree},
		{Tree: tree, Commands: [][]string{{}}},
		{Tree: tree, Commands: [][]string{{"true"}}, Deleted: []string{"../x"}},
		{Tree: tree, Commands: [][]string{{"true"}}, Keep: []string{"../etc"}, Export: t.TempDir()},
	} {
		if res := build(t, b, job); res.SandboxError == "" || res.OK() {
			t.Fatalf("accepted %+v", job)
		}
	}
	big := writeTree(t, map[string]string{"x": strings.Repeat("x", 3<<20)})
	res := build(t, b, &BuildJob{Tree: big, Commands: [][]string{{"true"}}, Limits: BuildLimits{DiskMB: 1}})
	if res.SandboxError == "" || !strings.Contains(res.SandboxError, "disk_mb") {
		t.Fatalf("oversized snapshot: %+v", res)
	}
}

func TestBuilderWarmSeedsByKey(t *testing.T) {
	b := newTestBuilder(t, nil)
	tree := writeTree(t, map[string]string{"x": "x\n"})
	res, err := b.Warm(context.Background(), "go", &BuildJob{Tree: tree, Commands: [][]string{sh("mkdir -p /tmp/gocache && echo warm > /tmp/gocache/e; exit 1")}})
	if err != nil || res.Commands[0].ExitCode != 1 || b.Seed("go") == "" {
		t.Fatalf("warm: %v %+v seed %q", err, res, b.Seed("go"))
	}
	first := b.Seed("go")
	// A second Warm of the key keeps the first seed.
	if _, err := b.Warm(context.Background(), "go", &BuildJob{Tree: tree, Commands: [][]string{sh("mkdir -p /tmp/gocache && echo other > /tmp/gocache/e")}}); err != nil || b.Seed("go") != first {
		t.Fatalf("second warm replaced the seed: %v", err)
	}
	res = build(t, b, &BuildJob{Tree: tree, SeedKey: "go", Commands: [][]string{sh("grep -q warm /tmp/gocache/e")}})
	if !res.OK() {
		t.Fatalf("seeded job: %+v", res)
	}
	res = build(t, b, &BuildJob{Tree: tree, SeedKey: "gcc", Commands: [][]string{sh("test ! -e /tmp/gocache")}})
	if !res.OK() {
		t.Fatalf("a job of another key was seeded: %+v", res)
	}
}

// TestBuilderConcurrentWarmsWarmOnce: Warms of one key that overlap run
// one warm-up; the others build with its seed. A key whose warm-up keeps
// nothing is built plainly from then on.
func TestBuilderConcurrentWarmsWarmOnce(t *testing.T) {
	b := newTestBuilder(t, func(c *BuilderConfig) { c.Workers = 3 })
	tree := writeTree(t, map[string]string{"x": "x\n"})
	warm := sh("if [ -e /tmp/gocache/e ]; then echo seeded; else mkdir -p /tmp/gocache && echo warm > /tmp/gocache/e && sleep 1 && echo warmed; fi")
	var wg sync.WaitGroup
	outs := make([]string, 3)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := b.Warm(context.Background(), "go", &BuildJob{Tree: tree, Commands: [][]string{warm}})
			if err != nil || !res.OK() {
				t.Errorf("warm %d: %v %+v", i, err, res)
				return
			}
			outs[i] = strings.TrimSpace(string(res.Commands[0].Output))
		}()
	}
	wg.Wait()
	slices.Sort(outs)
	if !slices.Equal(outs, []string{"seeded", "seeded", "warmed"}) {
		t.Fatalf("outputs %q, want one warm-up and two seeded builds", outs)
	}
	res, err := b.Warm(context.Background(), "javac", &BuildJob{Tree: tree, Commands: [][]string{{"true"}}})
	if err != nil || !res.OK() || b.Seed("javac") != "" || !b.seedless["javac"] {
		t.Fatalf("seedless warm: %v %+v", err, res)
	}
}

// TestOpenBuilderShares: equal configurations share one builder until the
// last share closes; another configuration gets its own.
func TestOpenBuilderShares(t *testing.T) {
	requireBuilder(t)
	cfg := DefaultBuilderConfig()
	cfg.Workers = 1
	a, err := OpenBuilder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := OpenBuilder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	other := cfg
	other.MemoryMB++
	c, err := OpenBuilder(other)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if a.Builder != b.Builder || a.Builder == c.Builder {
		t.Fatalf("sharing: a=%p b=%p c=%p", a.Builder, b.Builder, c.Builder)
	}
	if err := a.Close(); err != nil || a.Close() != nil {
		t.Fatal(err)
	}
	tree := writeTree(t, map[string]string{"x": "x\n"})
	if res := build(t, b.Builder, &BuildJob{Tree: tree, Commands: [][]string{{"true"}}}); !res.OK() {
		t.Fatalf("the remaining share cannot build: %+v", res)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Build(context.Background(), &BuildJob{Tree: tree, Commands: [][]string{{"true"}}}); !errors.Is(err, ErrBuilderClosed) {
		t.Fatalf("after the last share: %v", err)
	}
}

// TestBuilderNetworkIsTheHandlerOnly: a job given a Network handler
// reaches it at NetworkAddr, and nothing else: not a server on the host's
// loopback, not a name lookup; a job without one reaches nothing.
func TestBuilderNetworkIsTheHandlerOnly(t *testing.T) {
	b := newTestBuilder(t, nil)
	tree := writeTree(t, map[string]string{"x": "x\n"})
	host, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	go func() {
		_ = http.Serve(host, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "host") }))
	}()
	var hits atomic.Int32
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprintf(w, "mirror %s", r.URL.Path)
	})
	get := func(url string) string {
		return fmt.Sprintf(`python3 -c "import urllib.request,sys
try:
    print(urllib.request.urlopen('%s', timeout=5).read().decode())
except Exception as e:
    print('refused', type(e).__name__)
"`, url)
	}
	script := get("http://"+NetworkAddr+"/maven/x.pom") + " && " + get("http://"+host.Addr().String()+"/") + " && " + get("http://example.com/")
	res := build(t, b, &BuildJob{Tree: tree, Network: h, Commands: [][]string{sh(script)}})
	out := string(res.Commands[0].Output)
	if !res.OK() || !strings.Contains(out, "mirror /maven/x.pom") || strings.Contains(out, "host\n") || strings.Count(out, "refused") != 2 {
		t.Fatalf("%+v\n%s", res, out)
	}
	if hits.Load() != 1 {
		t.Errorf("%d requests reached the handler", hits.Load())
	}
	res = build(t, b, &BuildJob{Tree: tree, Commands: [][]string{sh(get("http://" + NetworkAddr + "/"))}})
	if out := string(res.Commands[0].Output); !strings.Contains(out, "refused") {
		t.Fatalf("a job without a handler reached %s: %s", NetworkAddr, out)
	}
}

// TestBuilderDepsFilesKeepGoing: a dependency cache is bound read-only and
// named in the environment; files are written under /tmp as the job's;
// KeepGoing runs every command.
func TestBuilderDepsFilesKeepGoing(t *testing.T) {
	b := newTestBuilder(t, nil)
	tree := writeTree(t, map[string]string{"x": "x\n"})
	deps := writeTree(t, map[string]string{"maven/g/a/1/a-1.pom": "<project/>\n", "python/mod.py": "X = 1\n"})
	res := build(t, b, &BuildJob{Tree: tree, Deps: deps, KeepGoing: true, Files: map[string]string{"home/.m2/settings.xml": "<settings/>\n"},
		Commands: [][]string{
			sh(`test -f /deps/maven/g/a/1/a-1.pom && ! touch /deps/maven/new && echo "$MAVEN_OPTS" | grep -q /deps/maven && python3 -c "import mod; assert mod.X == 1"`),
			sh("exit 3"),
			sh(`test -O /tmp/home/.m2/settings.xml && grep -q settings /tmp/home/.m2/settings.xml && test -z "$GOMODCACHE"`),
		}})
	if res.SandboxError != "" || !res.Commands[0].OK() || res.Commands[1].ExitCode != 3 || !res.Commands[2].OK() {
		t.Fatalf("%+v\n%s\n%s", res, res.Commands[0].Output, res.Commands[2].Output)
	}
	if res := build(t, b, &BuildJob{Tree: tree, Commands: [][]string{{"true"}}, Files: map[string]string{"../etc/x": ""}}); res.SandboxError == "" {
		t.Fatal("a file outside /tmp was accepted")
	}
}
