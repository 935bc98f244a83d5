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
	j := &slotJob{s: s, job: job, lim: lim, function: job.Mode == ModeFunction,
		res: &Result{ExitCode: -1, Tests: make([]TestReport, len(job.Tests))}}
	defer func() { j.res.Wall = time.Since(start) }()
	if err := j.encode(); err != nil {
		j.res.SandboxError, j.res.SandboxErrorKind = err.Error(), topics.SandboxErrorInvalidJob
		return j.res
	}
	if f := j.execute(ctx); f != nil {
		j.res.SandboxError, j.res.SandboxErrorKind = f.msg, f.kind
		if s.broken == "" {
			s.broken = f.msg
		}
	}
	return j.res
}

// jobFailure is a failure of the sandbox during a job (a pool slot's or a
// build's): the result's SandboxError and its kind.
type jobFailure struct{ kind, msg string }

func failure(kind, format string, args ...any) *jobFailure {
	return &jobFailure{kind: kind, msg: fmt.Sprintf(format, args...)}
}

// slotJob is one job on the host side while its slot runs it: what it sends,
// the host's ends of its descriptors, its limits' clocks and what the worker
// and the judge reported.
type slotJob struct {
	s        *slot
	job      *Job
	lim      Limits
	res      *Result
	function bool
	id       int64
	// prog is what the candidate reads, tests what the judge reads (a
	// function job's).
	prog, tests []byte

	// Every pipe of the job ({read, write}), and the ends of each.
	ps                  [][2]*os.File
	progP, outP, errP   [2]*os.File
	stdinR, stdinW      *os.File // stdinW nil: stdinR is the pool's /dev/null
	chanJudge, chanCand *os.File // a stdio program's chanCand is its hints pipe's write end
	hintsR, testsW      *os.File

	// The host's readers of the job's output, and the kills they ask for.
	stdout, stderr, hints *capture
	readers               sync.WaitGroup
	kill                  chan string

	// The slot's CPU time at the job's start (haveCPU: from its cgroup).
	cpuBase time.Duration
	haveCPU bool

	// The wait for the job's end: the limits' clocks, and what the worker
	// and the judge said.
	wall, tick, grace  <-chan time.Time
	wallTimer, cpuTick *time.Timer
	wallStart          time.Time
	haveWait           bool
	maxWall            time.Duration
	jmsgs              <-chan judgeMsg
	report             []judgeMsg
	maxEvents          int
	judged             bool
	killed             bool
	exitMsg            *ctrlMsg
	cleaned            bool
	judgeStuck         bool
	canceled           error
}

// encode makes what the candidate and the judge read; an error is the
// job's (invalid) and leaves the slot as it was.
func (j *slotJob) encode() error {
	if !j.function && j.job.Mode != ModeProgram {
		return fmt.Errorf("unknown job mode %q", j.job.Mode)
	}
	prog, err := encodeProgram(j.job, j.s.cfg.Seed, j.lim.ReportBytes)
	if err != nil {
		return err
	}
	j.prog = prog
	if j.function {
		if j.tests, err = makeTests(j.job, j.s.cfg.Seed); err != nil {
			return err
		}
	}
	return nil
}

// execute runs the encoded job: sends it, awaits its end, collects its
// result.
func (j *slotJob) execute(ctx context.Context) *jobFailure {
	s := j.s
	if s.jobMemory != nil && !s.jobMemory(int64(j.lim.MemoryMB)<<20) {
		return failure(topics.SandboxErrorInternal, "the job's memory limit could not be set")
	}
	if f := j.openPipes(); f != nil {
		return f
	}
	s.seq++
	j.id = s.seq
	if j.function {
		if f := j.sendTests(); f != nil {
			return f
		}
	}
	j.cpuBase, j.haveCPU = s.cpuStart()
	if f := j.sendJob(); f != nil {
		return f
	}
	j.startIO()
	if f := j.await(ctx); f != nil {
		return f
	}
	j.accountCPU()
	if f := j.drain(); f != nil {
		return f
	}
	return j.verdict()
}

// openPipes makes the job's descriptors: program, stdout, stderr, stdin
// when the job has any (else the pool's /dev/null), and for a stdio program
// its hints (a function job's channel is a socket to the judge).
func (j *slotJob) openPipes() *jobFailure {
	kinds := []pipeKind{feed(len(j.prog)), readPipe, readPipe}
	if len(j.job.Stdin) > 0 {
		kinds = append(kinds, feed(len(j.job.Stdin)))
	}
	if !j.function {
		kinds = append(kinds, readPipe)
	}
	ps, err := pipes(kinds...)
	if err != nil {
		return failure(topics.SandboxErrorInternal, "pipe: %v", err)
	}
	j.ps = ps
	var rest [][2]*os.File
	j.progP, j.outP, j.errP, rest = ps[0], ps[1], ps[2], ps[3:]
	j.stdinR = j.s.devNull
	if len(j.job.Stdin) > 0 {
		j.stdinR, j.stdinW, rest = rest[0][0], rest[0][1], rest[1:]
	}
	if j.function {
		if j.chanJudge, j.chanCand, err = streamPair(); err != nil {
			closeAll(ps)
			return failure(topics.SandboxErrorInternal, "socketpair: %v", err)
		}
	} else {
		j.hintsR, j.chanCand = rest[0][0], rest[0][1]
	}
	return nil
}

// sendTests starts the judge on the job: the tests travel in the request
// when they fit one message, else on a pipe of their own.
func (j *slotJob) sendTests() *jobFailure {
	req, fds := judgeRequest(j.id, j.lim.ReportBytes, j.tests), []int{int(j.chanJudge.Fd())}
	var tp [][2]*os.File
	if len(j.tests) > inlineTests {
		var err error
		if tp, err = pipes(feed(len(j.tests))); err != nil {
			closeAll(j.ps)
			j.chanJudge.Close()
			j.chanCand.Close()
			return failure(topics.SandboxErrorInternal, "pipe: %v", err)
		}
		j.testsW, fds = tp[0][1], append([]int{int(tp[0][0].Fd())}, fds...)
	}
	_, _, err := j.s.judge.WriteMsgUnix(req, syscall.UnixRights(fds...), nil)
	if tp != nil {
		tp[0][0].Close()
	}
	j.chanJudge.Close()
	if err != nil {
		closeAll(j.ps)
		j.chanCand.Close()
		if j.testsW != nil {
			j.testsW.Close()
		}
		return failure(topics.SandboxErrorWorker, "send tests: %v", err)
	}
	return nil
}

// cpuStart is the slot's CPU time at a job's start: the slot was idle
// since the last job's end was read, so its CPU then is this job's start.
func (s *slot) cpuStart() (time.Duration, bool) {
	base, ok := s.cpuMark, s.cpuMarked
	if !ok && s.cpu != nil {
		base, ok = s.cpu()
	}
	s.cpuMarked = false
	return base, ok
}

// sendJob asks the worker to run the job, handing it the candidate's
// descriptors.
func (j *slotJob) sendJob() *jobFailure {
	hdr := encodeRun(j.id, j.lim)
	rights := syscall.UnixRights(int(j.progP[0].Fd()), int(j.stdinR.Fd()), int(j.outP[1].Fd()), int(j.errP[1].Fd()), int(j.chanCand.Fd()))
	_, _, err := j.s.ctrl.WriteMsgUnix(hdr, rights, nil)
	// Our copies of the sandbox's ends go now, so EOF means the job's
	// processes are gone.
	j.progP[0].Close()
	if j.stdinW != nil {
		j.stdinR.Close()
	}
	j.outP[1].Close()
	j.errP[1].Close()
	j.chanCand.Close()
	if err != nil {
		closeAll(j.ps)
		if j.testsW != nil {
			j.testsW.Close()
		}
		return failure(topics.SandboxErrorWorker, "send job: %v", err)
	}
	return nil
}

// startIO starts the readers of the job's output and hints, and writes the
// program, stdin and tests.
func (j *slotJob) startIO() {
	j.kill = make(chan string, 4)
	overFn := func() { j.kill <- "output" }
	j.stdout = &capture{max: j.lim.OutputBytes, onOver: overFn}
	j.stderr = &capture{max: j.lim.OutputBytes, onOver: overFn}
	j.hints = &capture{max: 64 << 10}
	j.readers.Add(2)
	go j.stdout.run(j.outP[0], &j.readers)
	go j.stderr.run(j.errP[0], &j.readers)
	if j.hintsR != nil {
		j.readers.Add(1)
		go j.hints.run(j.hintsR, &j.readers)
	}
	// A small payload fits the fresh pipe: written now, with no goroutine.
	for _, f := range []struct {
		w *os.File
		b []byte
	}{{j.progP[1], j.prog}, {j.stdinW, j.job.Stdin}, {j.testsW, j.tests}} {
		switch {
		case f.w == nil:
		case len(f.b) <= smallWrite:
			writeAll(f.w, f.b)
		default:
			go writeAll(f.w, f.b)
		}
	}
}

// writeAll writes b and closes w.
func writeAll(w *os.File, b []byte) {
	if len(b) > 0 {
		_, _ = w.Write(b)
	}
	w.Close()
}

// await waits until the worker reported the job's end and cleanup and the
// judge its report, enforcing the job's limits meanwhile.
func (j *slotJob) await(ctx context.Context) *jobFailure {
	j.startClocks()
	defer j.stopClocks()
	for !j.cleaned || !j.judged {
		var f *jobFailure
		select {
		case m, ok := <-j.s.msgs:
			f = j.onWorker(m, ok)
		case m, ok := <-j.jmsgs:
			f = j.onJudge(m, ok)
		case <-j.tick:
			j.onCPUTick()
		case <-j.wall:
			j.onWall()
		case why := <-j.kill:
			j.doKill(why)
		case <-j.grace:
			// Past the grace the wait ends, one way or the other.
			return j.afterGrace()
		case <-ctx.Done():
			if j.canceled == nil {
				j.canceled = ctx.Err()
				j.doKill("canceled")
			}
		}
		if f != nil {
			return f
		}
	}
	return nil
}

// startClocks starts the job's wall limit and, with the slot's CPU time,
// its CPU polls. The judge's report is an event per test and a few more.
func (j *slotJob) startClocks() {
	j.maxEvents = len(j.job.Tests) + 8
	j.judged = !j.function
	j.jmsgs = j.s.jmsgs
	// The wall limit catches programs that sleep or block. Time the job's
	// processes spent ready to run while the machine had no CPU for them
	// (a loaded host) does not count against it, so a busy program's
	// verdict stays the CPU limit's, up to maxWall in all.
	j.wallStart = time.Now()
	j.haveWait = j.s.pids != nil
	j.maxWall = maxWallFactor * j.lim.Wall
	j.wallTimer = time.NewTimer(j.lim.Wall)
	j.wall = j.wallTimer.C
	if j.haveCPU {
		j.cpuTick = time.NewTimer(j.nextTick(0))
		j.tick = j.cpuTick.C
	}
}

func (j *slotJob) stopClocks() {
	j.wallTimer.Stop()
	if j.cpuTick != nil {
		j.cpuTick.Stop()
	}
}

// nextTick is when the job could first reach its CPU limit: all CPUs busy
// for what is left of it.
func (j *slotJob) nextTick(used time.Duration) time.Duration {
	left := j.lim.CPU - used
	return min(max(left/time.Duration(runtime.NumCPU()), time.Millisecond), 100*time.Millisecond)
}

// onWorker takes a message of the worker: the job's end and cleanup, or
// its error.
func (j *slotJob) onWorker(m ctrlMsg, ok bool) *jobFailure {
	s := j.s
	if !ok {
		s.killJob(5 * time.Second)
		j.readers.Wait()
		return failure(topics.SandboxErrorWorker, "worker died: %s", s.log.String())
	}
	if m.ID != j.id {
		return nil
	}
	switch m.Ev {
	case "end":
		j.exitMsg = &m
		if j.judged {
			j.wall, j.tick = nil, nil
		}
		if !m.OK {
			s.broken = fmt.Sprintf("cleanup after the job failed: %s", m.Why)
		}
		j.cleaned = true
		if j.killed && !j.judged {
			// The judge sees the program's end at once; give it a
			// moment, not the full grace.
			j.grace = time.After(time.Second)
		}
	case "error":
		s.killJob(5 * time.Second)
		j.readers.Wait()
		return failure(topics.SandboxErrorWorker, "worker: %s", m.Error)
	}
	return nil
}

// onJudge takes a message of the judge: events of its report, the last
// one "judged".
func (j *slotJob) onJudge(m judgeMsg, ok bool) *jobFailure {
	if !ok {
		j.jmsgs = nil
		if !j.judged {
			j.s.killJob(5 * time.Second)
			return failure(topics.SandboxErrorWorker, "judge died: %s", j.s.log.String())
		}
		return nil
	}
	if m.ID != j.id || (m.Ev != "report" && m.Ev != "judged") {
		return nil
	}
	if len(j.report)+len(m.Report) > j.maxEvents {
		j.s.killJob(5 * time.Second)
		return failure(topics.SandboxErrorWorker, "judge: report of more than %d events", j.maxEvents)
	}
	j.report = append(j.report, m.Report...)
	if m.Ev == "judged" {
		j.judged = true
		if j.exitMsg != nil {
			j.wall, j.tick = nil, nil
		}
	}
	return nil
}

// onCPUTick kills the job once its CPU time reached the limit, else polls
// again when it first could.
func (j *slotJob) onCPUTick() {
	used, ok := j.s.cpu()
	if ok && used-j.cpuBase >= j.lim.CPU {
		j.doKill("cpu")
		j.tick = nil
		return
	}
	j.cpuTick.Reset(j.nextTick(used - j.cpuBase))
}

// onWall kills the job at its wall limit, stretched by the time its main
// process waited for a CPU (up to maxWall).
func (j *slotJob) onWall() {
	if j.haveWait && !j.killed {
		elapsed := time.Since(j.wallStart)
		if waited, ok := j.s.runWait(); ok && elapsed < j.maxWall {
			if left := j.lim.Wall - (elapsed - waited); left > time.Millisecond {
				j.wallTimer.Reset(min(left, j.maxWall-elapsed))
				return
			}
		}
	}
	j.doKill("wall")
}

// doKill kills the job's processes for why (a limit, or cancellation) and
// gives the sandbox a grace to report the end.
func (j *slotJob) doKill(why string) {
	// What happens after the main process exited is cleanup, not the job's
	// verdict, unless the judge is still working through what the program
	// returned.
	if j.exitMsg == nil || !j.judged {
		switch why {
		case "wall", "cpu":
			j.res.TimedOut = true
		case "output":
			j.res.OutputLimited = true
		}
	}
	if !j.killed {
		j.killed = true
		j.s.killJob(2 * time.Second)
		d := 10 * time.Second
		if j.exitMsg != nil {
			d = time.Second
		}
		j.grace = time.After(d)
	}
}

// afterGrace ends a wait that outlasted the grace after a kill.
func (j *slotJob) afterGrace() *jobFailure {
	j.s.killJob(5 * time.Second)
	if j.exitMsg == nil || !j.cleaned {
		return failure(topics.SandboxErrorHarnessTimeout, "the sandbox did not report the job's end after it was killed")
	}
	// The program is gone and the judge is still busy with what it returned
	// (a set of colliding keys, say): the program's timeout, and a new judge
	// for the next job.
	j.judgeStuck = true
	j.s.broken = "the judge overran the job's limits"
	return nil
}

// accountCPU is the job's CPU time from the slot's cgroup, and the mark
// the next job starts from (unless the judge is still busy).
func (j *slotJob) accountCPU() {
	if !j.haveCPU {
		return
	}
	if used, ok := j.s.cpu(); ok {
		j.res.CPU = used - j.cpuBase
		j.s.cpuMark, j.s.cpuMarked = used, !j.judgeStuck
	}
}

// drain waits for the output readers: every process that held the pipes
// is dead.
func (j *slotJob) drain() *jobFailure {
	drained := make(chan struct{})
	go func() { j.readers.Wait(); close(drained) }()
	select {
	case <-drained:
		return nil
	case <-time.After(10 * time.Second):
		j.s.killJob(5 * time.Second)
		return failure(topics.SandboxErrorHarnessTimeout, "output pipes still open after the job ended")
	}
}

// verdict classifies the job's ending from the worker's exit status, the
// judge's report, the CPU time and the output.
func (j *slotJob) verdict() *jobFailure {
	res, exit := j.res, j.exitMsg
	if exit == nil {
		return failure(topics.SandboxErrorHarness, "no exit status from the worker")
	}
	if !exit.Armed {
		return failure(topics.SandboxErrorHarness, "the harness did not start the job: %s", tail(string(j.stderr.buf), 2000))
	}
	if j.canceled != nil {
		res.SandboxError, res.SandboxErrorKind = "canceled: "+j.canceled.Error(), topics.SandboxErrorCanceled
		if errors.Is(j.canceled, context.DeadlineExceeded) {
			res.SandboxErrorKind = topics.SandboxErrorHarnessTimeout // the caller's deadline for the job
		}
	}
	if !j.haveCPU {
		res.CPU = time.Duration((exit.UTime + exit.STime) * float64(time.Second))
	}
	res.MaxRSSKB = exit.MaxRSS
	ws := syscall.WaitStatus(exit.Status)
	if j.function {
		if f := j.functionVerdict(ws); f != nil {
			return f
		}
	} else {
		programResult(res, exit.Status, j.hints.buf)
	}
	if ws.Signaled() && (ws.Signal() == syscall.SIGXCPU || (ws.Signal() == syscall.SIGKILL && res.CPU >= j.lim.CPU)) {
		res.TimedOut = true
	}
	if res.CPU >= j.lim.CPU {
		res.TimedOut = true
	}
	res.Stdout, res.Stderr = j.stdout.buf, j.stderr.buf
	if j.stdout.over || j.stderr.over {
		res.OutputLimited = true
	}
	return nil
}

// functionVerdict is a function job's tests, from the judge's report, and
// how its process ended.
func (j *slotJob) functionVerdict(ws syscall.WaitStatus) *jobFailure {
	res := j.res
	if j.judgeStuck {
		res.TimedOut = true
	} else if err := readReport(res, j.report); err != nil {
		return failure(topics.SandboxErrorHarness, "%v", err)
	}
	switch {
	case ws.Exited():
		res.Exited, res.ExitCode = true, ws.ExitStatus()
	case ws.Signaled():
		res.Signal = ws.Signal().String()
	}
	return nil
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
