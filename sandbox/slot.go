package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	json "github.com/goccy/go-json"
)

// ctrlMsg is a message of the worker on the control socket.
type ctrlMsg struct {
	Ev     string  `json:"ev"`
	ID     int64   `json:"id"`
	PID    int     `json:"pid"`
	VMSize int64   `json:"vmsize"`
	Status int     `json:"status"`
	UTime  float64 `json:"utime"`
	STime  float64 `json:"stime"`
	MaxRSS int64   `json:"maxrss"`
	OK     bool    `json:"ok"`
	Left   int     `json:"left"`
	Error  string  `json:"error"`
}

// slot is one warm sandbox: a bwrap process with a Python worker inside.
type slot struct {
	id     int
	uid    int
	cfg    *Config
	dir    string // host directory with harness.py
	cold   bool
	cmd    *exec.Cmd
	ctrl   *net.UnixConn
	msgs   chan ctrlMsg
	exited chan struct{}
	log    *tailBuffer
	seq    int64
	broken string // why the slot must be replaced ("" = healthy)
}

const harnessMount = "/opt/murphy"

// bwrapArgs is the isolation of every worker.
func bwrapArgs(cfg *Config, dir string, cold bool) []string {
	a := []string{
		"--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--die-with-parent", "--new-session", "--hostname", "sandbox",
		"--ro-bind", "/usr", "/usr",
	}
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
	a = append(a,
		"--proc", "/proc", "--dev", "/dev",
		"--size", strconv.Itoa(cfg.TmpSizeMB<<20), "--tmpfs", "/tmp",
		"--ro-bind", dir, harnessMount,
		"--clearenv",
		"--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin",
		"--setenv", "LANG", "C.UTF-8",
		"--setenv", "PYTHONHASHSEED", strconv.Itoa(cfg.HashSeed),
		"--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_CHOWN",
		"--cap-add", "CAP_DAC_READ_SEARCH",
		"--chdir", "/tmp",
		"--", cfg.Python, "-I", "-B", harnessMount+"/harness.py",
	)
	if cold {
		a = append(a, "--cold")
	}
	return a
}

// startSlot starts a worker and waits until it is ready.
func startSlot(ctx context.Context, cfg *Config, dir string, id, uid int, cold bool) (*slot, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("sandbox: socketpair: %w", err)
	}
	parentF := os.NewFile(uintptr(fds[0]), "ctrl")
	childF := os.NewFile(uintptr(fds[1]), "ctrl-child")
	defer childF.Close()
	fc, err := net.FileConn(parentF)
	parentF.Close()
	if err != nil {
		return nil, fmt.Errorf("sandbox: control socket: %w", err)
	}
	s := &slot{
		id: id, uid: uid, cfg: cfg, dir: dir, cold: cold,
		ctrl: fc.(*net.UnixConn), msgs: make(chan ctrlMsg, 16), exited: make(chan struct{}),
		log: &tailBuffer{max: 16 << 10},
	}
	s.cmd = exec.Command(cfg.Bwrap, bwrapArgs(cfg, dir, cold)...)
	s.cmd.Env = []string{}
	s.cmd.ExtraFiles = []*os.File{childF}
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		s.ctrl.Close()
		return nil, fmt.Errorf("sandbox: start %s: %w", cfg.Bwrap, err)
	}
	go func() {
		_ = s.cmd.Wait()
		close(s.exited)
	}()
	go s.readCtrl()
	timer := time.NewTimer(cfg.StartTimeout)
	defer timer.Stop()
	select {
	case m, ok := <-s.msgs:
		if ok && m.Ev == "ready" {
			return s, nil
		}
		err = fmt.Errorf("sandbox: worker did not start: %s", s.log.String())
	case <-timer.C:
		err = fmt.Errorf("sandbox: worker not ready after %s: %s", cfg.StartTimeout, s.log.String())
	case <-ctx.Done():
		err = ctx.Err()
	}
	s.stop()
	return nil, err
}

func (s *slot) readCtrl() {
	defer close(s.msgs)
	buf := make([]byte, 1<<16)
	for {
		n, _, _, _, err := s.ctrl.ReadMsgUnix(buf, nil)
		if err != nil || n == 0 {
			return
		}
		var m ctrlMsg
		if json.Unmarshal(buf[:n], &m) != nil {
			continue
		}
		s.msgs <- m
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
	killUID(s.uid, 5*time.Second)
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
	b := make([]byte, 64<<10)
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

func newNonce() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// payload is what the harness reads from the job pipe.
type payload struct {
	Mode       string        `json:"mode"`
	Code       string        `json:"code"`
	EntryPoint string        `json:"entry_point,omitempty"`
	Setup      string        `json:"setup,omitempty"`
	Tests      []payloadTest `json:"tests,omitempty"`
}

type payloadTest struct {
	Args     *string `json:"args,omitempty"`
	Expected string  `json:"expected,omitempty"`
	Assert   string  `json:"assert,omitempty"`
	Check    string  `json:"check,omitempty"`
}

func makePayload(job *Job) ([]byte, error) {
	p := payload{Mode: job.Mode, Code: job.Code, EntryPoint: job.EntryPoint, Setup: job.Setup}
	for _, t := range job.Tests {
		switch t.Kind {
		case TestValue:
			args := t.Args
			p.Tests = append(p.Tests, payloadTest{Args: &args, Expected: t.Expected})
		case TestAssert:
			p.Tests = append(p.Tests, payloadTest{Assert: t.Code})
		case TestCheck:
			p.Tests = append(p.Tests, payloadTest{Check: t.Code})
		default:
			return nil, fmt.Errorf("sandbox: unknown test kind %q", t.Kind)
		}
	}
	return json.Marshal(p)
}

// run executes one job. It never returns an error: sandbox failures are in
// Result.SandboxError and set s.broken so that the pool replaces the slot.
func (s *slot) run(ctx context.Context, job *Job, lim Limits) *Result {
	start := time.Now()
	res := &Result{ExitCode: -1}
	defer func() { res.Wall = time.Since(start) }()
	fail := func(format string, args ...any) *Result {
		res.SandboxError = fmt.Sprintf(format, args...)
		if s.broken == "" {
			s.broken = res.SandboxError
		}
		return res
	}
	if job.Mode != ModeFunction && job.Mode != ModeProgram {
		res.SandboxError = fmt.Sprintf("unknown job mode %q", job.Mode)
		return res
	}
	body, err := makePayload(job)
	if err != nil {
		res.SandboxError = err.Error()
		return res
	}
	var pipes [5][2]*os.File // job, stdin, stdout, stderr, report: {read, write}
	for i := range pipes {
		r, w, err := os.Pipe()
		if err != nil {
			for _, p := range pipes[:i] {
				p[0].Close()
				p[1].Close()
			}
			return fail("pipe: %v", err)
		}
		pipes[i] = [2]*os.File{r, w}
	}
	s.seq++
	id := s.seq
	nonce := newNonce()
	hdr, _ := json.Marshal(map[string]any{
		"op": "run", "id": id, "uid": s.uid, "gid": s.uid, "nonce": nonce,
		"seed": s.cfg.Seed, "hash_seed": s.cfg.HashSeed,
		"limits": map[string]any{
			"memory_bytes": int64(lim.MemoryMB) << 20,
			"cpu_seconds":  int64(math.Ceil(lim.CPU.Seconds())),
			"file_bytes":   int64(lim.FileSizeMB) << 20,
			"procs":        lim.Procs,
			"open_files":   lim.OpenFiles,
		},
	})
	rights := syscall.UnixRights(int(pipes[0][0].Fd()), int(pipes[1][0].Fd()),
		int(pipes[2][1].Fd()), int(pipes[3][1].Fd()), int(pipes[4][1].Fd()))
	_, _, err = s.ctrl.WriteMsgUnix(hdr, rights, nil)
	// Our copies of the sandbox's ends go now, so EOF means the job's
	// processes are gone.
	pipes[0][0].Close()
	pipes[1][0].Close()
	pipes[2][1].Close()
	pipes[3][1].Close()
	pipes[4][1].Close()
	if err != nil {
		for _, p := range pipes {
			p[0].Close()
			p[1].Close()
		}
		return fail("send job: %v", err)
	}

	kill := make(chan string, 4)
	overFn := func() { kill <- "output" }
	stdout := &capture{max: lim.OutputBytes, onOver: overFn}
	stderr := &capture{max: lim.OutputBytes, onOver: overFn}
	report := &capture{max: lim.ReportBytes, onOver: overFn}
	var readers sync.WaitGroup
	readers.Add(3)
	go stdout.run(pipes[2][0], &readers)
	go stderr.run(pipes[3][0], &readers)
	go report.run(pipes[4][0], &readers)
	go func() {
		_, _ = pipes[0][1].Write(body)
		pipes[0][1].Close()
	}()
	go func() {
		if len(job.Stdin) > 0 {
			_, _ = pipes[1][1].Write(job.Stdin)
		}
		pipes[1][1].Close()
	}()

	var (
		wall     <-chan time.Time
		grace    <-chan time.Time
		startBy  = time.After(s.cfg.StartTimeout)
		killed   bool
		exitMsg  *ctrlMsg
		canceled error
	)
	doKill := func(why string) {
		// What happens after the main process exited is cleanup, not
		// the job's verdict.
		if exitMsg == nil {
			switch why {
			case "wall":
				res.TimedOut = true
			case "output":
				res.OutputLimited = true
			}
		}
		if !killed {
			killed = true
			killUID(s.uid, 2*time.Second)
			grace = time.After(10 * time.Second)
		}
	}
wait:
	for {
		select {
		case m, ok := <-s.msgs:
			if !ok {
				killUID(s.uid, 5*time.Second)
				readers.Wait()
				return fail("worker died: %s", s.log.String())
			}
			if m.ID != id {
				continue
			}
			switch m.Ev {
			case "started":
				startBy = nil
				wall = time.After(lim.Wall)
			case "exit":
				exitMsg = &m
				wall = nil
			case "clean":
				if !m.OK {
					s.broken = fmt.Sprintf("cleanup left %d processes", m.Left)
				}
				break wait
			case "error":
				killUID(s.uid, 5*time.Second)
				readers.Wait()
				return fail("worker: %s", m.Error)
			}
		case <-startBy:
			killUID(s.uid, 5*time.Second)
			return fail("job not started after %s", s.cfg.StartTimeout)
		case <-wall:
			doKill("wall")
		case why := <-kill:
			doKill(why)
		case <-grace:
			killUID(s.uid, 5*time.Second)
			return fail("worker did not report the job's end after it was killed")
		case <-ctx.Done():
			if canceled == nil {
				canceled = ctx.Err()
				doKill("canceled")
			}
		}
	}
	// Every process that held the pipes is dead; wait for the readers.
	drained := make(chan struct{})
	go func() { readers.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(10 * time.Second):
		killUID(s.uid, 5*time.Second)
		return fail("output pipes still open after the job ended")
	}
	if exitMsg == nil {
		return fail("no exit status from the worker")
	}
	if canceled != nil {
		res.SandboxError = "canceled: " + canceled.Error()
	}
	ws := syscall.WaitStatus(exitMsg.Status)
	switch {
	case ws.Exited():
		res.Exited, res.ExitCode = true, ws.ExitStatus()
	case ws.Signaled():
		res.Signal = ws.Signal().String()
		if ws.Signal() == syscall.SIGXCPU {
			res.TimedOut = true
		}
	}
	res.CPU = time.Duration((exitMsg.UTime + exitMsg.STime) * float64(time.Second))
	res.MaxRSSKB = exitMsg.MaxRSS
	// The CPU rlimit kills with SIGKILL at its hard limit (a second past the
	// soft one, for programs that ignore SIGXCPU). Reported CPU time is
	// sampled, so allow it to fall a little short of the limit.
	if ws.Signaled() && ws.Signal() == syscall.SIGKILL && res.CPU >= lim.CPU*9/10 {
		res.TimedOut = true
	}
	res.Stdout, res.Stderr = stdout.buf, stderr.buf
	if stdout.over || stderr.over || report.over {
		res.OutputLimited = true
	}
	st := newReportState(nonce, job, res)
	st.feed(report.buf)
	if !res.Hello && res.SandboxError == "" {
		res.SandboxError = "the harness did not start the job: " + tail(string(res.Stderr), 2000)
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
