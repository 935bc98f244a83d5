package sandbox

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestForkServerPrebuilt: a pool loads the prebuilt fork server of its own
// source from ForkServerDir without a compiler, ignores any other file
// there, and says what to install when it has neither.
func TestForkServerPrebuilt(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the sandbox pool needs root")
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // no fork server kept by an earlier process
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler")
	}
	lib, err := compileForkServer(cc)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// A library of other source (another murphy's) is never loaded.
	if err := os.WriteFile(filepath.Join(dir, "forkserver-0000000000000000.so"), []byte("not a library"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Workers, cfg.CC, cfg.ForkServerDir = 1, "/nonexistent/cc", dir
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := NewPool(ctx, cfg); err == nil || !strings.Contains(err.Error(), "apt-get install -y gcc libc6-dev") {
		t.Fatalf("without a compiler or a prebuilt fork server: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, ForkServerName()), lib, 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := NewPool(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	res := run(t, p, &Job{Mode: ModeProgram, Code: "print('ok')\n"})
	if res.SandboxError != "" || string(res.Stdout) != "ok\n" {
		t.Fatalf("%+v", res)
	}
}

// TestForkServerCache: a fork server a process compiled is kept in the
// user's cache directory, and the next process (here: another compiler
// name, which this process has not built with) loads it without a
// compiler; a cache that others could have written is never loaded.
func TestForkServerCache(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the sandbox pool needs root")
	}
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler")
	}
	cacheHome := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cacheHome)
	tools := t.TempDir()
	ownCC := filepath.Join(tools, "cc")
	if err := os.Symlink(cc, ownCC); err != nil {
		t.Fatal(err)
	}
	start := func(cc string) error {
		cfg := DefaultConfig()
		cfg.CC, cfg.ForkServerDir = cc, ""
		return startOne(t, cfg)
	}
	if err := start(ownCC); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(cacheHome, "murphy", ForkServerName())
	if fi, err := os.Stat(cache); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the compiled fork server is not kept privately at %s: %v %v", cache, fi, err)
	}
	if err := start(filepath.Join(tools, "no-such-cc")); err != nil {
		t.Fatalf("a kept fork server was not loaded: %v", err)
	}
	if err := os.Chmod(filepath.Dir(cache), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := start(filepath.Join(tools, "no-such-cc-either")); err == nil || !strings.Contains(err.Error(), "apt-get install") {
		t.Fatalf("a fork server others could have written was loaded: %v", err)
	}
}

// startOne starts a pool of one sandbox with cfg and runs a program in it.
func startOne(t *testing.T, cfg Config) error {
	cfg.Workers = 1
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := NewPool(ctx, cfg)
	if err != nil {
		return err
	}
	defer p.Close()
	if res := run(t, p, &Job{Mode: ModeProgram, Code: "print('ok')\n"}); res.SandboxError != "" || string(res.Stdout) != "ok\n" {
		t.Fatalf("%+v", res)
	}
	return nil
}

// TestHarnessCache: the compiled harness is kept privately for the next
// process and loaded from there; a damaged copy is compiled again.
func TestHarnessCache(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the sandbox pool needs root")
	}
	cacheHome := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cacheHome)
	compile := compileHarness
	t.Cleanup(func() { compileHarness = compile; harnesses.Clear() })
	start := func() error {
		harnesses.Clear() // as a new process
		return startOne(t, DefaultConfig())
	}
	if err := start(); err != nil {
		t.Fatal(err)
	}
	name, err := harnessName(DefaultConfig().Python)
	if err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(cacheHome, "murphy", name)
	if fi, err := os.Stat(cache); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the compiled harness is not kept privately at %s: %v %v", cache, fi, err)
	}
	noCompile := errors.New("no compile")
	compileHarness = func(string) ([]byte, error) { return nil, noCompile }
	if err := start(); err != nil {
		t.Fatalf("a kept harness was not loaded: %v", err)
	}
	b, err := os.ReadFile(cache)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(cache, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := start(); !errors.Is(err, noCompile) {
		t.Fatalf("a damaged harness was loaded: %v", err)
	}
	compileHarness = compile
	if err := start(); err != nil || readPrivate(cache) == nil {
		t.Fatalf("a damaged harness was not compiled and kept again: %v", err)
	}
}

// TestPoolStartFailure: a pool whose sandboxes cannot come up fails at
// once, without waiting out the jobs' wall limits, and leaves no uid taken.
func TestPoolStartFailure(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the sandbox pool needs root")
	}
	cfg := DefaultConfig()
	// A range of its own: other packages' pools run jobs under the
	// default uids, and a uid any process holds is never leased.
	cfg.Workers, cfg.StartTimeout, cfg.UIDBase, cfg.UIDCount = 2, time.Millisecond, 69000, 4
	cfg.LockDir = t.TempDir()
	start := time.Now()
	if p, err := NewPool(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "not ready") {
		if p != nil {
			p.Close()
		}
		t.Fatalf("a pool of sandboxes that cannot start: %v", err)
	}
	if el := time.Since(start); el > cfg.Limits.Wall {
		t.Fatalf("the failed start took %s", el)
	}
	cfg.StartTimeout = DefaultConfig().StartTimeout
	p, err := NewPool(context.Background(), cfg)
	if err != nil {
		t.Fatalf("the failed start kept uids: %v", err)
	}
	p.Close()
}

// badRequest is a message a slot's control or judge socket must refuse.
type badRequest struct {
	name string
	msg  []byte
	fds  []int
}

// refuses sends each of the requests on conn, expects an error event for
// it on answers, and checks that the sandbox closed every descriptor it got:
// the only one the requests pass is fd, the write end of a pipe whose last
// writer is then ours.
func refuses[M any](t *testing.T, conn *net.UnixConn, answers <-chan M, event func(M) (ev, err string), requests func(fd int) []badRequest) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, bad := range requests(int(w.Fd())) {
		var oob []byte
		if bad.fds != nil {
			oob = syscall.UnixRights(bad.fds...)
		}
		if _, _, err := conn.WriteMsgUnix(bad.msg, oob, nil); err != nil {
			t.Fatal(err)
		}
		select {
		case m := <-answers:
			if ev, e := event(m); ev != "error" || e != "bad request" {
				t.Errorf("%s: %+v", bad.name, m)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no answer", bad.name)
		}
	}
	w.Close()
	done := make(chan struct{})
	go func() {
		b := make([]byte, 1)
		_, _ = r.Read(b)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a descriptor of a bad request was kept")
	}
}

// TestForkServerBadRequest: a request the fork server cannot read is
// answered with an error, its descriptors are closed, and the slot goes on
// serving.
func TestForkServerBadRequest(t *testing.T) {
	p := testPool(t, 1)
	ps := <-p.idle
	lim := p.cfg.Limits
	refuses(t, ps.s.ctrl, ps.s.msgs, func(m ctrlMsg) (string, string) { return m.Ev, m.Error }, func(fd int) []badRequest {
		return []badRequest{
			{"short", []byte("run"), nil},
			{"no descriptors", encodeRun(1, lim), nil},
			{"one descriptor", encodeRun(2, lim), []int{fd}},
			{"wrong magic", append([]byte("XRUN"), encodeRun(3, lim)[4:]...), []int{fd, fd, fd, fd, fd}},
		}
	})
	p.idle <- ps
	res := run(t, p, &Job{Mode: ModeProgram, Code: "print('ok')\n"})
	if res.SandboxError != "" || string(res.Stdout) != "ok\n" {
		t.Fatalf("after bad requests: %+v", res)
	}
}

// TestJudgeBadRequest: a request the judge cannot read is answered with an
// error and its descriptors are closed; the judge goes on serving.
func TestJudgeBadRequest(t *testing.T) {
	p := testPool(t, 1)
	ps := <-p.idle
	refuses(t, ps.s.judge, ps.s.jmsgs, func(m judgeMsg) (string, string) { return m.Ev, m.Error }, func(fd int) []badRequest {
		return []badRequest{
			{"not JSON", []byte("judge"), []int{fd}},
			{"no descriptors", judgeRequest(1, 1024, []byte(`{"tests":[]}`)), nil},
			{"inline tests and a pipe", judgeRequest(2, 1024, []byte(`{"tests":[]}`)), []int{fd, fd}},
			{"no tests and one descriptor", judgeRequest(3, 1024, make([]byte, inlineTests+1)), []int{fd}},
			{"wrong op", []byte(`{"op":"run","id":4,"frame_bytes":1024,"tests":{}}`), []int{fd}},
		}
	})
	p.idle <- ps
	res := run(t, p, &Job{Mode: ModeFunction, Code: "def f(x):\n    return x\n", EntryPoint: "f",
		Tests: []Test{{Kind: TestValue, Args: "1", Expected: "1"}}})
	if res.SandboxError != "" || !res.Tests[0].Passed {
		t.Fatalf("after bad requests: %+v", res)
	}
}

// TestArenaAllocatorNeverHandsOutFreedMemory: CPython 3.11 frees its
// data-stack chunks (of other sizes than an arena) through the arena
// allocator the fork server gives the worker's interpreter; a freed block
// handed out again as a 1 MiB arena overlapped later ones and crashed the
// interpreter. Deep recursion between allocations, under the library
// alone, must run to its end.
func TestArenaAllocatorNeverHandsOutFreedMemory(t *testing.T) {
	cfg := DefaultConfig()
	if _, err := exec.LookPath(cfg.CC); err != nil {
		t.Skip("no C compiler")
	}
	lib, err := compileForkServer(cfg.CC)
	if err != nil {
		t.Fatal(err)
	}
	so := filepath.Join(t.TempDir(), "forkserver.so")
	if err := os.WriteFile(so, lib, 0o644); err != nil {
		t.Fatal(err)
	}
	script := `import sys
sys.setrecursionlimit(10000)
def down(n):
    return 0 if n == 0 else 1 + down(n - 1)
keep = []
for r in range(30):
    down(900 + r)
    keep.append([bytearray(200) for _ in range(5000)])
    keep.append([[i] * 50 for i in range(2000)])
    x = 0
    for _ in range(60):
        x = [x]
    keep.append(x)
    if len(keep) > 20:
        del keep[:10]
print("ok")
`
	cmd := exec.Command(cfg.Python, "-I", "-c", script)
	cmd.Env = append(os.Environ(), "LD_PRELOAD="+so)
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("the interpreter on the arena allocator: %v\n%s", err, out)
	}
}
