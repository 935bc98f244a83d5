package sandbox

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	stdjson "encoding/json"

	json "github.com/goccy/go-json"
	"github.com/murphy-rl/murphy/topics"
	"golang.org/x/sys/unix"
)

// ctrlMsg is a message of the worker on the control socket.
type ctrlMsg struct {
	Ev     string  `json:"ev"`
	ID     int64   `json:"id"`
	PID    int     `json:"pid"`
	VMSize int64   `json:"vmsize"`
	Status int     `json:"status"`
	Armed  bool    `json:"armed"`
	UTime  float64 `json:"utime"`
	STime  float64 `json:"stime"`
	MaxRSS int64   `json:"maxrss"`
	OK     bool    `json:"ok"`
	Left   int     `json:"left"`
	Why    string  `json:"why"`
	Error  string  `json:"error"`
}

// slot is one warm sandbox: a bwrap process with a Python worker and the
// slot's judge inside.
type slot struct {
	id       int
	uid      int // the candidates'
	judgeUID int
	cfg      *Config
	dir      string // host directory with harness.py and harness.pyc
	cmd      *exec.Cmd
	ctrl     *net.UnixConn
	judge    *net.UnixConn
	msgs     chan ctrlMsg
	jmsgs    chan judgeMsg
	exited   chan struct{}
	log      *tailBuffer
	seq      int64
	broken   string   // why the slot must be replaced ("" = healthy)
	devNull  *os.File // the stdin of jobs without any (the pool's)
	// cpuMark is the slot's CPU time when the last job's end was read
	// (cpuMarked: and nothing has run since).
	cpuMark   time.Duration
	cpuMarked bool
	// cpu reads the slot's CPU time so far (nil without a cgroup) and
	// pids lists its processes.
	cpu  func() (time.Duration, bool)
	pids func() ([]int, bool)
	// jobMemory limits the next job's processes together (nil without a
	// cgroup: each process's RLIMIT_AS only).
	jobMemory func(bytes int64) bool
}

const harnessMount = "/opt/murphy"

// seccompFD is the descriptor bwrap reads the filter from (ExtraFiles[2]).
const seccompFD = 5

// bwrapArgs is the isolation of every worker.
func bwrapArgs(cfg *Config, dir string, uid, judgeUID int) []string {
	a := []string{
		"--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--die-with-parent", "--new-session", "--hostname", "sandbox",
		"--seccomp", strconv.Itoa(seccompFD),
	}
	a = append(a, systemBinds()...)
	return append(a,
		"--proc", "/proc", "--dev", "/dev",
		"--size", strconv.Itoa(cfg.TmpSizeMB<<20), "--tmpfs", "/tmp",
		// /opt readable by every uid: the judge's uid executes the
		// harness again (a fresh interpreter, see SECURITY.md).
		"--perms", "0755", "--dir", "/opt",
		"--ro-bind", dir, harnessMount,
		"--clearenv",
		"--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin",
		"--setenv", "LANG", "C.UTF-8",
		"--setenv", "PYTHONHASHSEED", strconv.Itoa(cfg.HashSeed),
		"--setenv", "HOME", "/tmp/job", "--setenv", "TMPDIR", "/tmp/job",
		"--setenv", "LD_BIND_NOW", "1",
		"--setenv", "LD_PRELOAD", harnessMount+"/forkserver.so",
		"--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_CHOWN",
		"--cap-add", "CAP_DAC_READ_SEARCH",
		"--chdir", "/tmp",
		"--", cfg.Python, "-I", "-B", harnessMount+"/"+harnessCompiled,
		"--job-uid", strconv.Itoa(uid), "--judge-uid", strconv.Itoa(judgeUID),
		"--seed", strconv.FormatInt(cfg.Seed, 10),
	)
}

// systemBinds are the read-only system of every sandbox: /usr, and /bin,
// /lib... as the host has them (symbolic links into /usr or directories).
func systemBinds() []string {
	a := []string{"--ro-bind", "/usr", "/usr"}
	for _, p := range []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		fi, err := os.Lstat(p)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if t, err := os.Readlink(p); err == nil {
				a = append(a, "--symlink", t, p)
			}
		case fi.IsDir():
			a = append(a, "--ro-bind", p, p)
		}
	}
	return a
}

// seqpacket returns a connected pair: ours as a UnixConn, theirs as a file
// to hand to the sandbox.
func seqpacket() (*net.UnixConn, *os.File, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("sandbox: socketpair: %w", err)
	}
	ours := os.NewFile(uintptr(fds[0]), "ctrl")
	defer ours.Close()
	fc, err := net.FileConn(ours)
	if err != nil {
		syscall.Close(fds[1])
		return nil, nil, fmt.Errorf("sandbox: control socket: %w", err)
	}
	return fc.(*net.UnixConn), os.NewFile(uintptr(fds[1]), "ctrl-child"), nil
}

// seccompFile holds the filter program for bwrap to read.
func seccompFile() (*os.File, error) {
	prog, err := SeccompProgram()
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	// A pipe holds 64 KiB; the filter is a few hundred bytes.
	_, err = w.Write(prog)
	w.Close()
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("sandbox: seccomp program: %w", err)
	}
	return r, nil
}

// maxWallFactor bounds how far waiting for a CPU may stretch a job's wall
// limit: a job is killed after this many wall limits whatever it waited.
const maxWallFactor = 5

// runWait is how long the job's main process (the slot's process of the
// job's uid whose parent is not the job's; forked for the job, so it starts
// at zero) has waited on a run queue so far: the longest run_delay of its
// threads (/proc/PID/task/TID/schedstat), time one was ready to run while no
// CPU was free. Only the main process
// counts: the job's answers wait on it, and a child it forked that waits
// for a CPU must not stretch the wall limit of a main process that sleeps.
// False without a cgroup to list the processes or without schedstat.
func (s *slot) runWait() (time.Duration, bool) {
	if s.pids == nil {
		return 0, false
	}
	pids, ok := s.pids()
	if !ok {
		return 0, false
	}
	job := map[int]int{} // pid -> ppid of the job's processes
	for _, pid := range pids {
		if uid, ppid, ok := procOwner(pid); ok && uid == s.uid {
			job[pid] = ppid
		}
	}
	var longest time.Duration
	seen := false
	for pid, ppid := range job {
		if _, child := job[ppid]; child {
			continue
		}
		tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
		if err != nil {
			continue
		}
		for _, t := range tasks {
			b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + t.Name() + "/schedstat")
			if err != nil {
				continue
			}
			if f := strings.Fields(string(b)); len(f) >= 2 {
				if n, err := strconv.ParseInt(f[1], 10, 64); err == nil {
					// The longest wait of one thread: threads waiting for
					// each other's CPU must not add up to more than the
					// time that passed.
					longest = max(longest, time.Duration(n))
					seen = true
				}
			}
		}
	}
	return longest, seen
}

// procOwner reads a process's real uid and parent pid from /proc.
func procOwner(pid int) (uid, ppid int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0, false
	}
	var haveUID, havePPID bool
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 2 && f[0] == "PPid:":
			ppid, err = strconv.Atoi(f[1])
			havePPID = err == nil
		case len(f) >= 2 && f[0] == "Uid:":
			uid, err = strconv.Atoi(f[1])
			haveUID = err == nil
		}
	}
	return uid, ppid, haveUID && havePPID
}

// startSlot starts a worker and its judge and waits until both are ready.
func startSlot(ctx context.Context, cfg *Config, dir string, id, uid, judgeUID int) (*slot, error) {
	ctrl, ctrlChild, err := seqpacket()
	if err != nil {
		return nil, err
	}
	defer ctrlChild.Close()
	judge, judgeChild, err := seqpacket()
	if err != nil {
		ctrl.Close()
		return nil, err
	}
	defer judgeChild.Close()
	filter, err := seccompFile()
	if err != nil {
		ctrl.Close()
		judge.Close()
		return nil, err
	}
	defer filter.Close()
	s := &slot{
		id: id, uid: uid, judgeUID: judgeUID, cfg: cfg, dir: dir,
		ctrl: ctrl, judge: judge, msgs: make(chan ctrlMsg, 16), jmsgs: make(chan judgeMsg, 64),
		exited: make(chan struct{}), log: &tailBuffer{max: 16 << 10},
	}
	s.cmd = exec.Command(cfg.Bwrap, bwrapArgs(cfg, dir, uid, judgeUID)...)
	s.cmd.Env = []string{}
	s.cmd.ExtraFiles = []*os.File{ctrlChild, judgeChild, filter}
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	if err := startPinned(s.cmd, id); err != nil {
		ctrl.Close()
		judge.Close()
		return nil, fmt.Errorf("sandbox: start %s: %w", cfg.Bwrap, err)
	}
	go func() {
		_ = s.cmd.Wait()
		close(s.exited)
	}()
	go readMsgs(s.ctrl, s.msgs)
	go readMsgs(s.judge, s.jmsgs)
	timer := time.NewTimer(cfg.StartTimeout)
	defer timer.Stop()
	workerReady, judgeReady := false, false
	for !workerReady || !judgeReady {
		select {
		case m, ok := <-s.msgs:
			if !ok || m.Ev != "ready" {
				err = fmt.Errorf("sandbox: worker did not start: %s", s.log.String())
			}
			workerReady = true
		case m, ok := <-s.jmsgs:
			if !ok || m.Ev != "ready" {
				err = fmt.Errorf("sandbox: judge did not start: %s", s.log.String())
			}
			judgeReady = true
		case <-timer.C:
			err = fmt.Errorf("sandbox: worker not ready after %s: %s", cfg.StartTimeout, s.log.String())
		case <-ctx.Done():
			err = ctx.Err()
		}
		if err != nil {
			s.stop()
			return nil, err
		}
	}
	return s, nil
}

// startPinned starts the sandbox on one CPU, slot i on CPU i modulo their
// number: its worker, judge and candidates then hand work to each other on
// one core, without waking another (which costs more than the switch).
// The sandbox inherits the mask of the thread that starts it.
func startPinned(cmd *exec.Cmd, i int) error {
	var all unix.CPUSet
	if unix.SchedGetaffinity(0, &all) != nil || all.Count() < 2 {
		return cmd.Start()
	}
	var cpus []int
	for c := 0; c < len(all)*64 && len(cpus) < all.Count(); c++ {
		if all.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var one unix.CPUSet
	one.Set(cpus[i%len(cpus)])
	if unix.SchedSetaffinity(0, &one) != nil {
		return cmd.Start()
	}
	defer func() { _ = unix.SchedSetaffinity(0, &all) }() // the thread is unlocked after; a failure only pins it
	return cmd.Start()
}

// readMsgs decodes the JSON messages of one control socket until EOF.
func readMsgs[T any](c *net.UnixConn, out chan<- T) {
	defer close(out)
	buf := make([]byte, 1<<18)
	for {
		n, _, _, _, err := c.ReadMsgUnix(buf, nil)
		if err != nil || n == 0 {
			return
		}
		var m T
		if json.Unmarshal(buf[:n], &m) != nil {
			continue
		}
		out <- m
	}
}

// stop kills the sandbox: its pid namespace's init dies, and with it
// every process inside.
func (s *slot) stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		_ = s.cmd.Process.Kill()
		select {
		case <-s.exited:
		case <-time.After(5 * time.Second):
		}
	}
	s.ctrl.Close()
	s.judge.Close()
	s.killJob(5 * time.Second)
}

// killJob kills every process of the job's uid from outside the sandbox:
// the slot's cgroup lists them, or a scan of /proc where there is none.
func (s *slot) killJob(deadline time.Duration) int {
	if s.pids == nil {
		return killUID(s.uid, deadline)
	}
	stop := time.Now().Add(deadline)
	for wait := time.Millisecond; ; wait = min(wait*2, 50*time.Millisecond) {
		pids, ok := s.pids()
		if !ok {
			return killUID(s.uid, time.Until(stop))
		}
		n := 0
		for _, pid := range pids {
			if processUID(pid) == s.uid {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				n++
			}
		}
		if n == 0 || time.Now().After(stop) {
			return n
		}
		time.Sleep(wait)
	}
}

// capture reads a pipe, keeping the first max bytes; onOver runs once when
// more arrives. It drains until EOF so that the writer never blocks.
type capture struct {
	max    int
	buf    []byte
	over   bool
	onOver func()
}

func (c *capture) run(r io.ReadCloser, done *sync.WaitGroup) {
	defer done.Done()
	defer r.Close()
	b := make([]byte, 8<<10)
	for {
		n, err := r.Read(b)
		if n > 0 {
			keep := min(n, c.max-len(c.buf))
			c.buf = append(c.buf, b[:keep]...)
			if keep < n && !c.over {
				c.over = true
				if c.onOver != nil {
					c.onOver()
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// encodeProgram is what the candidate process reads: its own code, nothing
// of the tests. harness.py's read_program: the random seed and the largest
// frame the judge reads, 8-byte big-endian integers, then PROGRAM_FIELDS,
// each a 4-byte big-endian length and its UTF-8 bytes.
func encodeProgram(job *Job, seed int64, frameBytes int) ([]byte, error) {
	fields := []string{job.Mode, job.EntryPoint, job.Setup, job.Code}
	n := 16
	for _, f := range fields {
		if len(f) > math.MaxInt32 {
			return nil, fmt.Errorf("program field of %d bytes", len(f))
		}
		n += 4 + len(f)
	}
	b := make([]byte, 0, n)
	b = binary.BigEndian.AppendUint64(b, uint64(seed))
	b = binary.BigEndian.AppendUint64(b, uint64(frameBytes))
	for _, f := range fields {
		b = binary.BigEndian.AppendUint32(b, uint32(len(f)))
		b = append(b, f...)
	}
	return b, nil
}

// Run requests are forkserver.c's struct run_request: its magic and
// version, then six 64-bit integers, in the host's byte order.
const (
	runMagic   = 0x4e55524d // "MRUN"
	runVersion = 2
)

// encodeRun is the worker's request to run job id under lim.
func encodeRun(id int64, lim Limits) []byte {
	b := make([]byte, 0, 8+6*8)
	b = binary.NativeEndian.AppendUint32(b, runMagic)
	b = binary.NativeEndian.AppendUint32(b, runVersion)
	for _, v := range []int64{
		id,
		int64(lim.MemoryMB) << 20,
		int64(math.Ceil(lim.CPU.Seconds())) + 1,
		int64(lim.FileSizeMB) << 20,
		int64(lim.Procs),
		int64(lim.OpenFiles),
	} {
		b = binary.NativeEndian.AppendUint64(b, uint64(v))
	}
	return b
}

// testsPayload is what the judge reads.
type testsPayload struct {
	EntryPoint string        `json:"entry_point"`
	Helpers    string        `json:"helpers,omitempty"`
	Setup      string        `json:"setup,omitempty"`
	Imports    string        `json:"imports,omitempty"`
	Seed       int64         `json:"seed"`
	Tests      []payloadTest `json:"tests"`
}

type payloadTest struct {
	Kind     string `json:"kind"`
	Hidden   bool   `json:"hidden,omitempty"`
	Args     string `json:"args,omitempty"`
	Expected string `json:"expected,omitempty"`
	Code     string `json:"code,omitempty"`
}

// inlineTests is the most tests payload the judge's request carries; a
// larger one goes on a pipe (a message must fit the socket's buffer).
const inlineTests = 128 << 10

// judgeRequest is the judge's request to judge job id: JSON, with the tests
// payload when it is at most inlineTests bytes.
func judgeRequest(id int64, frameBytes int, tests []byte) []byte {
	b := make([]byte, 0, 64+len(tests))
	b = append(b, `{"op":"judge","id":`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `,"frame_bytes":`...)
	b = strconv.AppendInt(b, int64(frameBytes), 10)
	if len(tests) <= inlineTests {
		b = append(b, `,"tests":`...)
		b = append(b, tests...)
	}
	return append(b, '}')
}

func makeTests(job *Job, seed int64) ([]byte, error) {
	p := testsPayload{EntryPoint: job.EntryPoint, Helpers: job.Helpers, Setup: job.Setup, Imports: job.Imports, Seed: seed}
	for i, t := range job.Tests {
		if i > 0 && job.Tests[i-1].Hidden && !t.Hidden {
			return nil, errors.New("sandbox: a visible test after a hidden one")
		}
		switch t.Kind {
		case TestValue:
			p.Tests = append(p.Tests, payloadTest{Kind: t.Kind, Hidden: t.Hidden, Args: t.Args, Expected: t.Expected})
		case TestAssert, TestCheck:
			p.Tests = append(p.Tests, payloadTest{Kind: t.Kind, Hidden: t.Hidden, Code: t.Code})
		default:
			return nil, fmt.Errorf("sandbox: unknown test kind %q", t.Kind)
		}
	}
	// encoding/json: go-json's encoder grows every new goroutine's stack.
	return stdjson.Marshal(p)
}

// smallWrite is the most murphy writes into a fresh pipe at once, without
// waiting: even a pipe cut down to one page by the user's pipe quota holds it.
const smallWrite = 4 << 10

// pipeKind says which ends of a job's pipe murphy itself waits on.
type pipeKind struct {
	pollRead, pollWrite bool
}

var (
	readPipe = pipeKind{pollRead: true}  // murphy reads what the sandbox writes
	feedPipe = pipeKind{}                // murphy writes once, at most smallWrite
	bulkPipe = pipeKind{pollWrite: true} // murphy writes more than smallWrite
)

// feed is the kind of pipe that carries n bytes into the sandbox.
func feed(n int) pipeKind {
	if n > smallWrite {
		return bulkPipe
	}
	return feedPipe
}

// pipes makes one pipe of each kind; on failure none is left open. Only the
// ends murphy waits on are non-blocking and in Go's poller: the sandbox's
// ends are passed on and closed, and registering them (and a small write's
// end) cost two epoll calls each per job.
func pipes(kinds ...pipeKind) ([][2]*os.File, error) {
	out := make([][2]*os.File, 0, len(kinds))
	for _, k := range kinds {
		var p [2]int
		err := unix.Pipe2(p[:], unix.O_CLOEXEC)
		if err == nil && k.pollRead {
			err = unix.SetNonblock(p[0], true)
		}
		if err == nil && k.pollWrite {
			err = unix.SetNonblock(p[1], true)
		}
		if err != nil {
			if p[0] > 0 {
				unix.Close(p[0])
				unix.Close(p[1])
			}
			closeAll(out)
			return nil, err
		}
		out = append(out, [2]*os.File{os.NewFile(uintptr(p[0]), "|0"), os.NewFile(uintptr(p[1]), "|1")})
	}
	return out, nil
}

func closeAll(ps [][2]*os.File) {
	for _, p := range ps {
		p[0].Close()
		p[1].Close()
	}
}

// streamPair is a connected SOCK_STREAM pair (the judge-candidate channel).
func streamPair() (*os.File, *os.File, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	return os.NewFile(uintptr(fds[0]), "chan-judge"), os.NewFile(uintptr(fds[1]), "chan-candidate"), nil
}

// run executes one job. It never returns an error: sandbox failures are in
// Result.SandboxError and set s.broken so that the pool replaces the slot.
func (s *slot) run(ctx context.Context, job *Job, lim Limits) *Result {
	start := time.Now()
	res := &Result{ExitCode: -1, Tests: make([]TestReport, len(job.Tests))}
	defer func() { res.Wall = time.Since(start) }()
	fail := func(kind, format string, args ...any) *Result {
		res.SandboxError, res.SandboxErrorKind = fmt.Sprintf(format, args...), kind
		if s.broken == "" {
			s.broken = res.SandboxError
		}
		return res
	}
	function := job.Mode == ModeFunction
	if !function && job.Mode != ModeProgram {
		res.SandboxError, res.SandboxErrorKind = fmt.Sprintf("unknown job mode %q", job.Mode), topics.SandboxErrorInvalidJob
		return res
	}
	prog, err := encodeProgram(job, s.cfg.Seed, lim.ReportBytes)
	if err != nil {
		res.SandboxError, res.SandboxErrorKind = err.Error(), topics.SandboxErrorInvalidJob
		return res
	}
	var tests []byte
	if function {
		if tests, err = makeTests(job, s.cfg.Seed); err != nil {
			res.SandboxError, res.SandboxErrorKind = err.Error(), topics.SandboxErrorInvalidJob
			return res
		}
	}
	if s.jobMemory != nil && !s.jobMemory(int64(lim.MemoryMB)<<20) {
		return fail(topics.SandboxErrorInternal, "the job's memory limit could not be set")
	}
	// program, stdout, stderr, stdin when the job has any (else the pool's
	// /dev/null), and for a stdio program its hints (a function job's
	// channel is a socket to the judge): {read, write}.
	kinds := []pipeKind{feed(len(prog)), readPipe, readPipe}
	if len(job.Stdin) > 0 {
		kinds = append(kinds, feed(len(job.Stdin)))
	}
	if !function {
		kinds = append(kinds, readPipe)
	}
	ps, err := pipes(kinds...)
	if err != nil {
		return fail(topics.SandboxErrorInternal, "pipe: %v", err)
	}
	progP, outP, errP, rest := ps[0], ps[1], ps[2], ps[3:]
	stdinR, stdinW := s.devNull, (*os.File)(nil)
	if len(job.Stdin) > 0 {
		stdinR, stdinW, rest = rest[0][0], rest[0][1], rest[1:]
	}
	var chanJudge, chanCand, hintsR *os.File
	if function {
		if chanJudge, chanCand, err = streamPair(); err != nil {
			closeAll(ps)
			return fail(topics.SandboxErrorInternal, "socketpair: %v", err)
		}
	} else {
		hintsR, chanCand = rest[0][0], rest[0][1]
	}
	s.seq++
	id := s.seq
	var testsW *os.File
	if function {
		// The tests travel in the request when they fit one message,
		// else on a pipe of their own.
		req, fds := judgeRequest(id, lim.ReportBytes, tests), []int{int(chanJudge.Fd())}
		var tp [][2]*os.File
		if len(tests) > inlineTests {
			if tp, err = pipes(feed(len(tests))); err != nil {
				closeAll(ps)
				chanJudge.Close()
				chanCand.Close()
				return fail(topics.SandboxErrorInternal, "pipe: %v", err)
			}
			testsW, fds = tp[0][1], append([]int{int(tp[0][0].Fd())}, fds...)
		}
		_, _, err = s.judge.WriteMsgUnix(req, syscall.UnixRights(fds...), nil)
		if tp != nil {
			tp[0][0].Close()
		}
		chanJudge.Close()
		if err != nil {
			closeAll(ps)
			chanCand.Close()
			if testsW != nil {
				testsW.Close()
			}
			return fail(topics.SandboxErrorWorker, "send tests: %v", err)
		}
	}
	// The slot was idle since the last job's end was read: its CPU then
	// is this job's start.
	cpuBase, haveCPU := s.cpuMark, s.cpuMarked
	if !haveCPU && s.cpu != nil {
		cpuBase, haveCPU = s.cpu()
	}
	s.cpuMarked = false
	hdr := encodeRun(id, lim)
	rights := syscall.UnixRights(int(progP[0].Fd()), int(stdinR.Fd()), int(outP[1].Fd()), int(errP[1].Fd()), int(chanCand.Fd()))
	_, _, err = s.ctrl.WriteMsgUnix(hdr, rights, nil)
	// Our copies of the sandbox's ends go now, so EOF means the job's
	// processes are gone.
	progP[0].Close()
	if stdinW != nil {
		stdinR.Close()
	}
	outP[1].Close()
	errP[1].Close()
	chanCand.Close()
	if err != nil {
		closeAll(ps)
		if testsW != nil {
			testsW.Close()
		}
		return fail(topics.SandboxErrorWorker, "send job: %v", err)
	}

	kill := make(chan string, 4)
	overFn := func() { kill <- "output" }
	stdout := &capture{max: lim.OutputBytes, onOver: overFn}
	stderr := &capture{max: lim.OutputBytes, onOver: overFn}
	hintCap := &capture{max: 64 << 10}
	var readers sync.WaitGroup
	readers.Add(2)
	go stdout.run(outP[0], &readers)
	go stderr.run(errP[0], &readers)
	if hintsR != nil {
		readers.Add(1)
		go hintCap.run(hintsR, &readers)
	}
	writeAll := func(w *os.File, b []byte) {
		if len(b) > 0 {
			_, _ = w.Write(b)
		}
		w.Close()
	}
	// A small payload fits the fresh pipe: written now, with no goroutine.
	for _, f := range []struct {
		w *os.File
		b []byte
	}{{progP[1], prog}, {stdinW, job.Stdin}, {testsW, tests}} {
		switch {
		case f.w == nil:
		case len(f.b) <= smallWrite:
			writeAll(f.w, f.b)
		default:
			go writeAll(f.w, f.b)
		}
	}

	// The judge's report: an event per test and a few more.
	var report []judgeMsg
	maxEvents := len(job.Tests) + 8
	judged := !function
	var (
		wall     <-chan time.Time
		grace    <-chan time.Time
		cpuTick  *time.Timer
		killed   bool
		exitMsg  *ctrlMsg
		cleaned  bool
		canceled error
		jmsgs    = s.jmsgs
	)
	defer func() {
		if cpuTick != nil {
			cpuTick.Stop()
		}
	}()
	var tick <-chan time.Time
	doKill := func(why string) {
		// What happens after the main process exited is cleanup, not
		// the job's verdict, unless the judge is still working through
		// what the program returned.
		if exitMsg == nil || !judged {
			switch why {
			case "wall", "cpu":
				res.TimedOut = true
			case "output":
				res.OutputLimited = true
			}
		}
		if !killed {
			killed = true
			s.killJob(2 * time.Second)
			d := 10 * time.Second
			if exitMsg != nil {
				d = time.Second
			}
			grace = time.After(d)
		}
	}
	judgeStuck := false
	// nextTick is when the job could first reach its CPU limit: all CPUs
	// busy for what is left of it.
	nextTick := func(used time.Duration) time.Duration {
		left := lim.CPU - used
		return min(max(left/time.Duration(runtime.NumCPU()), time.Millisecond), 100*time.Millisecond)
	}
	// The wall limit catches programs that sleep or block. Time the job's
	// processes spent ready to run while the machine had no CPU for them
	// (a loaded host) does not count against it, so a busy program's
	// verdict stays the CPU limit's, up to maxWall in all.
	wallStart := time.Now()
	haveWait := s.pids != nil
	maxWall := maxWallFactor * lim.Wall
	wallTimer := time.NewTimer(lim.Wall)
	defer wallTimer.Stop()
	wall = wallTimer.C
	if haveCPU {
		cpuTick = time.NewTimer(nextTick(0))
		tick = cpuTick.C
	}
wait:
	for !cleaned || !judged {
		select {
		case m, ok := <-s.msgs:
			if !ok {
				s.killJob(5 * time.Second)
				readers.Wait()
				return fail(topics.SandboxErrorWorker, "worker died: %s", s.log.String())
			}
			if m.ID != id {
				continue
			}
			switch m.Ev {
			case "end":
				exitMsg = &m
				if judged {
					wall, tick = nil, nil
				}
				if !m.OK {
					s.broken = fmt.Sprintf("cleanup after the job failed: %s", m.Why)
				}
				cleaned = true
				if killed && !judged {
					// The judge sees the program's end at once; give it
					// a moment, not the full grace.
					grace = time.After(time.Second)
				}
			case "error":
				s.killJob(5 * time.Second)
				readers.Wait()
				return fail(topics.SandboxErrorWorker, "worker: %s", m.Error)
			}
		case m, ok := <-jmsgs:
			if !ok {
				jmsgs = nil
				if !judged {
					s.killJob(5 * time.Second)
					return fail(topics.SandboxErrorWorker, "judge died: %s", s.log.String())
				}
				continue
			}
			if m.ID != id || (m.Ev != "report" && m.Ev != "judged") {
				continue
			}
			if len(report)+len(m.Report) > maxEvents {
				s.killJob(5 * time.Second)
				return fail(topics.SandboxErrorWorker, "judge: report of more than %d events", maxEvents)
			}
			report = append(report, m.Report...)
			if m.Ev == "judged" {
				judged = true
				if exitMsg != nil {
					wall, tick = nil, nil
				}
			}
		case <-tick:
			used, ok := s.cpu()
			if ok && used-cpuBase >= lim.CPU {
				doKill("cpu")
				tick = nil
				continue
			}
			cpuTick.Reset(nextTick(used - cpuBase))
		case <-wall:
			if haveWait && !killed {
				elapsed := time.Since(wallStart)
				if waited, ok := s.runWait(); ok && elapsed < maxWall {
					if left := lim.Wall - (elapsed - waited); left > time.Millisecond {
						wallTimer.Reset(min(left, maxWall-elapsed))
						continue
					}
				}
			}
			doKill("wall")
		case why := <-kill:
			doKill(why)
		case <-grace:
			s.killJob(5 * time.Second)
			if exitMsg == nil || !cleaned {
				return fail(topics.SandboxErrorHarnessTimeout, "the sandbox did not report the job's end after it was killed")
			}
			// The program is gone and the judge is still busy with what it
			// returned (a set of colliding keys, say): the program's
			// timeout, and a new judge for the next job.
			judgeStuck = true
			s.broken = "the judge overran the job's limits"
			break wait
		case <-ctx.Done():
			if canceled == nil {
				canceled = ctx.Err()
				doKill("canceled")
			}
		}
	}
	if haveCPU {
		if used, ok := s.cpu(); ok {
			res.CPU = used - cpuBase
			s.cpuMark, s.cpuMarked = used, !judgeStuck
		}
	}
	// Every process that held the pipes is dead; wait for the readers.
	drained := make(chan struct{})
	go func() { readers.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(10 * time.Second):
		s.killJob(5 * time.Second)
		return fail(topics.SandboxErrorHarnessTimeout, "output pipes still open after the job ended")
	}
	if exitMsg == nil {
		return fail(topics.SandboxErrorHarness, "no exit status from the worker")
	}
	if !exitMsg.Armed {
		return fail(topics.SandboxErrorHarness, "the harness did not start the job: %s", tail(string(stderr.buf), 2000))
	}
	if canceled != nil {
		res.SandboxError, res.SandboxErrorKind = "canceled: "+canceled.Error(), topics.SandboxErrorCanceled
		if errors.Is(canceled, context.DeadlineExceeded) {
			res.SandboxErrorKind = topics.SandboxErrorHarnessTimeout // the caller's deadline for the job
		}
	}
	if !haveCPU {
		res.CPU = time.Duration((exitMsg.UTime + exitMsg.STime) * float64(time.Second))
	}
	res.MaxRSSKB = exitMsg.MaxRSS
	ws := syscall.WaitStatus(exitMsg.Status)
	if function {
		if judgeStuck {
			res.TimedOut = true
		} else if err := readReport(res, report); err != nil {
			return fail(topics.SandboxErrorHarness, "%v", err)
		}
		switch {
		case ws.Exited():
			res.Exited, res.ExitCode = true, ws.ExitStatus()
		case ws.Signaled():
			res.Signal = ws.Signal().String()
		}
	} else {
		programResult(res, exitMsg.Status, hintCap.buf)
	}
	if ws.Signaled() && (ws.Signal() == syscall.SIGXCPU || (ws.Signal() == syscall.SIGKILL && res.CPU >= lim.CPU)) {
		res.TimedOut = true
	}
	if res.CPU >= lim.CPU {
		res.TimedOut = true
	}
	res.Stdout, res.Stderr = stdout.buf, stderr.buf
	if stdout.over || stderr.over {
		res.OutputLimited = true
	}
	return res
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// tailBuffer keeps the last max bytes written to it (worker diagnostics).
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append([]byte(nil), t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// ErrClosed is returned by Run on a closed pool.
var ErrClosed = errors.New("sandbox: pool closed")
