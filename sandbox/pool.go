package sandbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/murphy-rl/murphy/topics"
	"golang.org/x/sync/errgroup"
)

//go:embed harness.py
var harnessSource []byte

//go:embed forkserver/forkserver.c
var forkServerSource []byte

// Runner runs jobs; *Pool implements it.
type Runner interface {
	Run(ctx context.Context, job *Job) (*Result, error)
}

// Stats is a snapshot of a pool.
type Stats struct {
	Workers  int
	Busy     int
	Jobs     int64
	Restarts int64
	// Cgroup says whether a per-slot memory cgroup caps each sandbox.
	Cgroup bool
}

// Pool is a set of warm sandboxes; Run blocks until one is free, so the
// pool also bounds the concurrency of its callers.
type Pool struct {
	cfg      Config
	dir      string
	idle     chan *poolSlot
	all      []*poolSlot
	busy     atomic.Int64
	jobs     atomic.Int64
	restarts atomic.Int64
	closed   chan struct{}
	once     sync.Once
	cg       *cgroups
	devNull  *os.File // the stdin of every job without one
}

type poolSlot struct {
	id    int
	lease *uidLease // the candidates' uid
	judge *uidLease // the judge's uid
	s     *slot     // nil while it could not be (re)started
}

// leakLimit is how far a slot's anonymous and shared memory may stay above
// its level at start after a job before the slot is replaced: a job must
// leave nothing behind, and the judge's caches stay well below it.
const leakLimit = 64 << 20

// writeHarness puts harness.py, its compiled form that the workers run and
// the fork server they load in a fresh host directory that every sandbox
// binds read-only. Compiling the harness inside each worker left the
// compiler's garbage in the warm image every job forks (2.2 of its 11 MiB):
// pages each fork copies the table of and each job's exit unmaps.
func writeHarness(cfg *Config) (string, error) {
	dir, err := os.MkdirTemp("", "murphy-sandbox-")
	if err != nil {
		return "", fmt.Errorf("sandbox: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("sandbox: %w", err)
	}
	src := filepath.Join(dir, "harness.py")
	if err := os.WriteFile(src, harnessSource, 0o644); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("sandbox: %w", err)
	}
	pyc, err := harnessPyc(cfg.Python)
	if err == nil {
		err = writeFile(filepath.Join(dir, harnessCompiled), pyc)
	}
	if err == nil {
		err = installForkServer(cfg, dir)
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// harnesses holds the harnesses this process compiled, by cache name.
var harnesses sync.Map // harnessName -> *compiled

// harnessPyc is harness.py compiled by python: once per process and
// interpreter, and kept in the user's cache directory for the next process
// (a compile is an interpreter's start, 0.1-0.2 s of every pool's start).
func harnessPyc(python string) ([]byte, error) {
	name, err := harnessName(python)
	if err != nil {
		return nil, err
	}
	return compileOnce(&harnesses, name, name, func() ([]byte, error) { return compileHarness(python) })
}

// harnessName names the harness compiled by python: the sha256 of the
// harness's source and of the interpreter's file (its resolved path, size
// and modification time), so that an upgraded interpreter, whose bytecode
// may differ, compiles it again.
func harnessName(python string) (string, error) {
	real, err := filepath.EvalSymlinks(python)
	if err != nil {
		return "", fmt.Errorf("sandbox: %w", err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("sandbox: %w", err)
	}
	h := sha256.New()
	h.Write(harnessSource)
	fmt.Fprintf(h, "\x00%s\x00%d\x00%d", real, fi.Size(), fi.ModTime().UnixNano())
	return "harness-" + hex.EncodeToString(h.Sum(nil)[:8]) + ".pyc", nil
}

// compileHarness compiles harness.py with python. The code names the path
// the workers see, so that tracebacks and the harness's own frame filter
// read as they would from the source.
var compileHarness = func(python string) ([]byte, error) {
	tmp, err := os.MkdirTemp("", "murphy-harness-")
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	defer os.RemoveAll(tmp)
	src, pyc := filepath.Join(tmp, "harness.py"), filepath.Join(tmp, harnessCompiled)
	if err := writeFile(src, harnessSource); err != nil {
		return nil, err
	}
	compile := exec.Command(python, "-I", "-B", "-c",
		"import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], dfile=sys.argv[3], doraise=True)",
		src, pyc, harnessMount+"/harness.py")
	compile.Env = []string{}
	if out, err := compile.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("sandbox: compiling the harness with %s: %v\n%s", python, err, out)
	}
	return os.ReadFile(pyc)
}

// forkServerName is the fork server's file name: the first 16 hex digits
// of the sha256 of its source, so that a prebuilt library (Config.ForkServerDir)
// is only ever the one built from this murphy's source.
var forkServerName = func() string {
	sum := sha256.Sum256(forkServerSource)
	return "forkserver-" + hex.EncodeToString(sum[:8]) + ".so"
}()

// ForkServerName is the file name a prebuilt fork server of this build has
// in Config.ForkServerDir.
func ForkServerName() string { return forkServerName }

// forkServers holds the fork servers this process compiled, by compiler.
var forkServers sync.Map // cc -> *compiled

// compiled is a file compiled once per process.
type compiled struct {
	once sync.Once
	out  []byte
	err  error
}

// compileOnce is the file m holds under key, made at most once per
// process: read from the private cache file name when a valid one is kept
// there, else compiled and kept there for the next process.
func compileOnce(m *sync.Map, key, name string, compile func() ([]byte, error)) ([]byte, error) {
	v, _ := m.LoadOrStore(key, &compiled{})
	c := v.(*compiled)
	c.once.Do(func() {
		cache := cachePath(name)
		if c.out = readPrivate(cache); c.out != nil {
			return
		}
		if c.out, c.err = compile(); c.err == nil {
			writePrivate(cache, c.out)
		}
	})
	return c.out, c.err
}

// installForkServer puts the fork server at dir/forkserver.so: the
// prebuilt one in cfg.ForkServerDir when it holds this source's build, else
// one compiled with cfg.CC, once per process and compiler, and kept in the
// user's cache directory for the next process.
func installForkServer(cfg *Config, dir string) error {
	dst := filepath.Join(dir, "forkserver.so")
	if cfg.ForkServerDir != "" {
		if lib, err := os.ReadFile(filepath.Join(cfg.ForkServerDir, forkServerName)); err == nil {
			return writeFile(dst, lib)
		}
	}
	lib, err := compileOnce(&forkServers, cfg.CC, forkServerName, func() ([]byte, error) { return compileForkServer(cfg.CC) })
	if err != nil {
		return err
	}
	return writeFile(dst, lib)
}

// cachePath is where a compiled file is kept between processes ("" when
// there is no cache directory).
func cachePath(name string) string {
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "murphy", name)
}

// readPrivate reads a file writePrivate kept at path, when it is a regular
// file that only this process's user can have written (owned by it, in a
// directory owned by it, neither writable by anyone else: nothing but murphy
// runs the code it holds) and its checksum holds (a damaged file is
// compiled again, not loaded).
func readPrivate(path string) []byte {
	if path == "" {
		return nil
	}
	euid := uint32(os.Geteuid())
	private := func(fi os.FileInfo) bool {
		st, ok := fi.Sys().(*syscall.Stat_t)
		return ok && st.Uid == euid && fi.Mode().Perm()&0o022 == 0
	}
	if fi, err := os.Lstat(filepath.Dir(path)); err != nil || !fi.IsDir() || !private(fi) {
		return nil
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || !private(fi) {
		return nil
	}
	b, err := io.ReadAll(f)
	if err != nil || len(b) < sha256.Size {
		return nil
	}
	body, sum := b[:len(b)-sha256.Size], b[len(b)-sha256.Size:]
	if want := sha256.Sum256(body); !bytes.Equal(sum, want[:]) {
		return nil
	}
	return body
}

// writePrivate stores b and its sha256 at path (a private directory, a file
// replaced whole); a cache that cannot be written is only a slower next
// start.
func writePrivate(path string, b []byte) {
	if path == "" || os.MkdirAll(filepath.Dir(path), 0o700) != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".cache-*")
	if err != nil {
		return
	}
	sum := sha256.Sum256(b)
	_, err = tmp.Write(append(b[:len(b):len(b)], sum[:]...))
	if cerr := tmp.Close(); err == nil && cerr == nil && os.Rename(tmp.Name(), path) == nil {
		return
	}
	os.Remove(tmp.Name())
}

func writeFile(path string, b []byte) error {
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	return nil
}

// compileForkServer compiles forkserver.c with cc and returns the library.
// Its symbols are bound when the worker loads it (-z now), not on a job's
// first call: a lazy binding in a job's process writes the library's GOT
// there.
func compileForkServer(cc string) ([]byte, error) {
	tmp, err := os.MkdirTemp("", "murphy-forkserver-")
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	defer os.RemoveAll(tmp)
	src, lib := filepath.Join(tmp, "forkserver.c"), filepath.Join(tmp, "forkserver.so")
	if err := writeFile(src, forkServerSource); err != nil {
		return nil, err
	}
	build := exec.Command(cc, forkServerFlags(src, lib)...)
	build.Env = []string{"PATH=" + os.Getenv("PATH")}
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("sandbox: compiling the fork server with %s (needs a C compiler and the C library's headers: apt-get install -y gcc libc6-dev, or a prebuilt %s in fork_server_dir): %v\n%s",
			cc, forkServerName, err, out)
	}
	return os.ReadFile(lib)
}

// forkServerFlags are the compiler's arguments that build the fork server
// from src into lib.
func forkServerFlags(src, lib string) []string {
	return []string{"-std=gnu11", "-O2", "-fPIC", "-shared", "-Wl,-z,now", "-o", lib, src}
}

// harnessCompiled is the file the workers run: harness.py compiled by the
// pool's interpreter (which runs a .pyc given as its script).
const harnessCompiled = "harness.pyc"

// NewPool starts cfg.Workers warm sandboxes. It fails when bubblewrap or the
// interpreter is missing or a worker does not come up.
func NewPool(ctx context.Context, cfg Config) (*Pool, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("sandbox: the pool must run as root (it hands each job a non-root uid)")
	}
	for _, p := range []string{cfg.Bwrap, cfg.Python} {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("sandbox: %w (install with: apt-get install -y bubblewrap python3)", err)
		}
	}
	dir, err := writeHarness(&cfg)
	if err != nil {
		return nil, err
	}
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	n := cfg.workers()
	p := &Pool{cfg: cfg, dir: dir, idle: make(chan *poolSlot, n), closed: make(chan struct{}), devNull: devNull}
	p.cg = newCgroups(cfg.SlotMemoryMB, cfg.Limits.Procs)
	skip := map[int]bool{}
	for i := 0; i < n && err == nil; i++ {
		var leases [2]*uidLease
		for k := range leases {
			if leases[k], err = leaseUID(cfg.LockDir, cfg.UIDBase, cfg.UIDCount, skip); err != nil {
				leases[0].release()
				break
			}
			skip[leases[k].uid] = true
		}
		if err == nil {
			p.all = append(p.all, &poolSlot{id: i, lease: leases[0], judge: leases[1]})
		}
	}
	if err == nil {
		// The sandboxes warm up at once, each on its own CPU (startPinned):
		// a pool of n starts in the time of one, not of n.
		g, gctx := errgroup.WithContext(ctx)
		for _, ps := range p.all {
			g.Go(func() error { return p.start(gctx, ps) })
		}
		err = g.Wait()
	}
	// Every slot is handed to idle, started or not, so that Close stops and
	// releases each of them without waiting for one that never came up.
	for _, ps := range p.all {
		p.idle <- ps
	}
	if err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

func (p *Pool) start(ctx context.Context, ps *poolSlot) error {
	s, err := startSlot(ctx, &p.cfg, p.dir, ps.id, ps.lease.uid, ps.judge.uid)
	if err != nil {
		return err
	}
	s.devNull = p.devNull
	p.cg.attach(ps.id, s.cmd.Process.Pid)
	// The judge: out of the job's memory group (a job's OOM kill never
	// chooses it), and, where the host may (CAP_SYS_RESOURCE), at an
	// oom_score_adj of -1000, which no process of the sandbox can set for
	// itself.
	judge := 0
	for _, pid := range processTree(s.cmd.Process.Pid) {
		if uid, _, ok := procOwner(pid); ok && uid == ps.judge.uid {
			judge = pid
		}
	}
	if judge == 0 || !p.cg.splitJob(ps.id, judge) {
		s.stop()
		return fmt.Errorf("sandbox: the judge (pid %d) could not be set apart from the job", judge)
	}
	_ = os.WriteFile("/proc/"+strconv.Itoa(judge)+"/oom_score_adj", []byte("-1000"), 0)
	if p.cg.active() {
		id := ps.id
		s.jobMemory = func(bytes int64) bool { return p.cg.jobMemory(id, bytes) }
	}
	if _, ok := p.cg.cpu(ps.id); ok {
		id := ps.id
		s.cpu = func() (time.Duration, bool) { return p.cg.cpu(id) }
		s.pids = func() ([]int, bool) { return p.cg.pids(id) }
	}
	ps.s = s
	return nil
}

// Run runs job in the next free sandbox. The error is non-nil only when ctx
// ends before a sandbox is free or the pool is closed; a failure of the
// sandbox is reported in Result.SandboxError and the sandbox is replaced.
func (p *Pool) Run(ctx context.Context, job *Job) (*Result, error) {
	var ps *poolSlot
	select {
	case <-p.closed:
		return nil, ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	case ps = <-p.idle:
		select {
		case <-p.closed:
			p.idle <- ps // Close collects it
			return nil, ErrClosed
		default:
		}
	}
	p.busy.Add(1)
	defer func() {
		p.busy.Add(-1)
		p.idle <- ps // never blocks: the channel holds every slot
	}()
	p.jobs.Add(1)
	if ps.s == nil {
		if err := p.start(ctx, ps); err != nil {
			return &Result{ExitCode: -1, SandboxError: "restart sandbox: " + err.Error(), SandboxErrorKind: topics.SandboxErrorRestart}, nil
		}
	}
	lim := job.Limits.withDefaults(p.cfg.Limits)
	p.cg.oomKilled(ps.id) // what happened before the job is not its doing
	res := ps.s.run(ctx, job, lim)
	res.Limits = lim
	if oom := p.cg.oomKilled(ps.id); oom {
		// Whichever process the kernel chose, an OOM kill during the job
		// is the job's verdict: a program cannot trade its verdict for
		// "no verdict" by aiming the killer at the worker. (A killed
		// worker still replaces the slot: s.broken is set.)
		res.MemoryKilled = true
		if res.SandboxErrorKind == topics.SandboxErrorWorker || res.SandboxErrorKind == topics.SandboxErrorHarness {
			res.SandboxError, res.SandboxErrorKind = "", ""
		}
	}
	if n := p.cg.leaked(ps.id, leakLimit); n > leakLimit && ps.s.broken == "" {
		ps.s.broken = fmt.Sprintf("the slot holds %d MiB more than at start after a job", n>>20)
	}
	if ps.s.broken != "" {
		ps.s.stop()
		ps.s = nil
		p.restarts.Add(1)
		if ctx.Err() == nil {
			_ = p.start(context.WithoutCancel(ctx), ps)
		}
	}
	return res, nil
}

// Size is the number of sandboxes.
func (p *Pool) Size() int { return len(p.all) }

// Busy is the number of sandboxes running a job now.
func (p *Pool) Busy() int { return int(p.busy.Load()) }

// Stats returns a snapshot of the pool.
func (p *Pool) Stats() Stats {
	return Stats{Workers: len(p.all), Busy: p.Busy(), Jobs: p.jobs.Load(), Restarts: p.restarts.Load(), Cgroup: p.cg.active()}
}

// WorkerPIDs returns the host pids of the running sandboxes (for health
// checks and tests).
func (p *Pool) WorkerPIDs() []int {
	var pids []int
	for _, ps := range p.all {
		if s := ps.s; s != nil && s.cmd != nil && s.cmd.Process != nil {
			pids = append(pids, s.cmd.Process.Pid)
		}
	}
	return pids
}

// UIDs returns the host uids the pool's jobs run as.
func (p *Pool) UIDs() []int {
	var uids []int
	for _, ps := range p.all {
		uids = append(uids, ps.lease.uid)
	}
	return uids
}

// Close stops every sandbox; running jobs are killed.
func (p *Pool) Close() error {
	p.once.Do(func() {
		close(p.closed)
		// Idle slots are stopped now, busy ones when their job returns
		// (maxWallFactor wall limits bound the wait).
		deadline := time.After(maxWallFactor*p.cfg.Limits.Wall + time.Minute)
		for range len(p.all) {
			select {
			case ps := <-p.idle:
				if ps.s != nil {
					ps.s.stop()
				}
				ps.lease.release()
				ps.judge.release()
			case <-deadline:
			}
		}
		p.cg.remove()
		p.devNull.Close()
		os.RemoveAll(p.dir)
	})
	return nil
}
