package sandbox

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"testing"
	"time"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// TestSeccompProgram checks the encoding and, by running the program in
// x/net/bpf's interpreter, the policy itself; it needs no privileges.
func TestSeccompProgram(t *testing.T) {
	prog, err := SeccompProgram()
	if err != nil {
		t.Fatal(err)
	}
	if len(prog) == 0 || len(prog)%8 != 0 {
		t.Fatalf("program is %d bytes, want a non-empty multiple of 8", len(prog))
	}
	again, err := SeccompProgram()
	if err != nil || !bytes.Equal(prog, again) {
		t.Fatalf("second call differs (err %v)", err)
	}
	fresh, err := buildSeccompProgram()
	if err != nil || !bytes.Equal(prog, fresh) {
		t.Fatalf("rebuilt program differs (err %v)", err)
	}

	raw := make([]bpf.RawInstruction, 0, len(prog)/8)
	for b := prog; len(b) > 0; b = b[8:] {
		raw = append(raw, bpf.RawInstruction{
			Op: binary.NativeEndian.Uint16(b), Jt: b[2], Jf: b[3], K: binary.NativeEndian.Uint32(b[4:]),
		})
	}
	insns, ok := bpf.Disassemble(raw)
	if !ok {
		t.Fatal("program does not disassemble")
	}
	vm, err := bpf.NewVM(insns)
	if err != nil {
		t.Fatal(err)
	}
	native, err := arch.GetInfo("")
	if err != nil {
		t.Fatal(err)
	}

	const (
		allow  = uint32(seccomp.ActionAllow)
		eperm  = uint32(seccomp.ActionErrno) | uint32(unix.EPERM)
		enosys = uint32(seccomp.ActionErrno) | uint32(unix.ENOSYS)
		kill   = uint32(seccomp.ActionKillProcess)
	)
	type call struct {
		name string
		args []uint64
		want uint32
	}
	sigchld := uint64(unix.SIGCHLD)
	threadFlags := uint64(unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND |
		unix.CLONE_THREAD | unix.CLONE_SYSVSEM | unix.CLONE_SETTLS | unix.CLONE_PARENT_SETTID |
		unix.CLONE_CHILD_CLEARTID)
	calls := []call{
		{"getpid", nil, allow},
		{"openat", nil, allow},
		{"clone", []uint64{sigchld}, allow},
		{"clone", []uint64{threadFlags}, allow},
		{"clone", []uint64{unix.CLONE_NEWUSER | sigchld}, eperm},
		{"clone", []uint64{unix.CLONE_NEWNET}, eperm},
		{"clone", []uint64{unix.CLONE_NEWNS | threadFlags}, eperm},
		{"clone3", nil, enosys},
		{"personality", []uint64{0xffffffff}, allow},
		{"personality", []uint64{0}, eperm},
		{"personality", []uint64{0x0040000}, eperm}, // ADDR_NO_RANDOMIZE
		{"personality", []uint64{1<<32 | 0xffffffff}, eperm},
	}
	denied := seccompDenied
	if runtime.GOARCH == "amd64" {
		denied = append(denied[:len(denied):len(denied)], seccompDeniedAMD64...)
	}
	for _, name := range denied {
		calls = append(calls, call{name, nil, eperm})
	}
	for _, c := range calls {
		got := runSeccomp(t, vm, uint32(native.ID), uint32(native.SyscallNames[c.name]), c.args...)
		if got != c.want {
			t.Errorf("%s%v: action %#x, want %#x", c.name, c.args, got, c.want)
		}
	}

	// Foreign ABIs: i386 or AArch32 is killed, x32 gets ENOSYS.
	foreign := arch.ARM
	if runtime.GOARCH == "amd64" {
		foreign = arch.I386
		if got := runSeccomp(t, vm, uint32(native.ID), uint32(arch.X32.SyscallNames["getpid"]|arch.X32.SeccompMask)); got != enosys {
			t.Errorf("x32 getpid: action %#x, want %#x", got, enosys)
		}
	}
	if got := runSeccomp(t, vm, uint32(foreign.ID), uint32(foreign.SyscallNames["getpid"])); got != kill {
		t.Errorf("%s getpid: action %#x, want %#x", foreign.Name, got, kill)
	}
}

// runSeccomp evaluates the filter on a struct seccomp_data.
func runSeccomp(t *testing.T, vm *bpf.VM, auditArch, nr uint32, args ...uint64) uint32 {
	t.Helper()
	data := make([]byte, 64)
	binary.NativeEndian.PutUint32(data[0:], nr)
	binary.NativeEndian.PutUint32(data[4:], auditArch)
	for i, a := range args {
		binary.NativeEndian.PutUint64(data[16+8*i:], a)
	}
	// The kernel loads 32-bit words in native order, x/net/bpf in network
	// order: swap each word so that both see the same values.
	for i := 0; i < len(data); i += 4 {
		binary.BigEndian.PutUint32(data[i:], binary.NativeEndian.Uint32(data[i:]))
	}
	got, err := vm.Run(data)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(got)
}

// seccompProbeScript tries each denied class through libc's syscall() with
// the numbers passed as JSON in argv[1], each in a forked child (so that a
// call that succeeds, as in the control run, has no lasting effect), then
// checks that ordinary things still work. It prints one JSON object.
const seccompProbeScript = `
import ctypes, errno, json, mmap, os, platform, signal, socket, subprocess, sys, threading, time

NR = json.loads(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
CLONE_NEWUSER, SIGCHLD, IPC_CREAT = 0x10000000, 17, 0o1000

def arg(a):
    return ctypes.c_long(a) if isinstance(a, int) else a

def sys_(nr, *args):
    r = libc.syscall(ctypes.c_long(nr), *map(arg, args))
    return ctypes.get_errno() if r == -1 else 0

def call(name, *args):
    return lambda: sys_(NR[name], *args)

def in_child(fn):
    pid = os.fork()
    if pid == 0:
        try:
            code = fn()
        except BaseException:
            code = 255
        os._exit(code if isinstance(code, int) else 254)
    _, st = os.waitpid(pid, 0)
    if os.WIFSIGNALED(st):
        return "killed by " + signal.Signals(os.WTERMSIG(st)).name
    code = os.WEXITSTATUS(st)
    return "ok" if code == 0 else errno.errorcode.get(code, str(code))

def clone(flags):
    def fn():
        r = libc.syscall(ctypes.c_long(NR["clone"]), ctypes.c_ulong(flags), None, None, None, None)
        if r == 0:
            os._exit(0)  # the new process, had the filter let it through
        if r == -1:
            return ctypes.get_errno()
        os.waitpid(r, 0)
        return 0
    return fn

def setns():
    return sys_(NR["setns"], os.open("/proc/self/ns/uts", os.O_RDONLY), 0)

def process_vm_readv():
    src, dst = ctypes.create_string_buffer(b"secret", 16), ctypes.create_string_buffer(16)
    local = (ctypes.c_void_p * 2)(ctypes.addressof(dst), 16)
    remote = (ctypes.c_void_p * 2)(ctypes.addressof(src), 16)
    return sys_(NR["process_vm_readv"], os.getpid(), local, 1, remote, 1, 0)

def int80():
    # mov eax, 20 (i386 getpid); int 0x80; ret
    m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    m.write(b"\xb8\x14\x00\x00\x00\xcd\x80\xc3")
    ctypes.CFUNCTYPE(ctypes.c_long)(ctypes.addressof(ctypes.c_char.from_buffer(m)))()
    return 0

buf = ctypes.create_string_buffer(256)  # zeroed attr/params structs
probes = {
    "shmget": call("shmget", 0, 4096, IPC_CREAT | 0o600),
    "msgget": call("msgget", 0, IPC_CREAT | 0o600),
    "semget": call("semget", 0, 1, IPC_CREAT | 0o600),
    "mq_open": call("mq_open", b"murphy-probe", os.O_RDWR | os.O_CREAT, 0o600, None),
    "add_key": call("add_key", b"user", b"murphy-probe", b"x", 1, -2),
    "keyctl": call("keyctl", 0, -2, 1),
    "unshare(CLONE_NEWUSER)": call("unshare", CLONE_NEWUSER),
    "clone(CLONE_NEWUSER|SIGCHLD)": clone(CLONE_NEWUSER | SIGCHLD),
    "clone(SIGCHLD)": clone(SIGCHLD),
    "setns": setns,
    "ptrace(PTRACE_TRACEME)": call("ptrace", 0, 0, None, None),
    "process_vm_readv": process_vm_readv,
    "bpf": call("bpf", 0, buf, 128),
    "io_uring_setup": call("io_uring_setup", 1, buf),
    "userfaultfd": call("userfaultfd", 1 | os.O_CLOEXEC),
    "mount": call("mount", b"none", b"/tmp", b"tmpfs", 0, None),
    "perf_event_open": call("perf_event_open", buf, 0, -1, -1, 0),
    "clone3": call("clone3", None, 0),
    "personality(query)": call("personality", 0xffffffff),
    "personality(ADDR_NO_RANDOMIZE)": call("personality", 0x0040000),
}
if platform.machine() == "x86_64":
    probes["ioperm"] = call("ioperm", 0x80, 1, 1)
    probes["x32 getpid"] = lambda: sys_(0x40000000 | 39)
    probes["i386 int 0x80"] = int80
result = {"probes": {k: in_child(fn) for k, fn in probes.items()}, "works": {}}

def fork():
    pid = os.fork()
    if pid == 0:
        os._exit(7)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 7

def thread():
    box = []
    t = threading.Thread(target=box.append, args=(1,))
    t.start()
    t.join()
    assert box == [1]

def anon_mmap():
    m = mmap.mmap(-1, 1 << 20)
    m[:5] = b"hello"
    assert m[:5] == b"hello"

def socketpair():
    a, b = socket.socketpair()
    a.sendall(b"x")
    assert b.recv(1) == b"x"

def setsid():
    assert in_child(lambda: os.setsid() or 0) == "ok"

def files():
    assert open("/etc/passwd").read()
    with open("/tmp/probe", "w") as f:
        f.write("x")
    assert open("/tmp/probe").read() == "x"

for name, fn in [("fork", fork), ("thread", thread),
                 ("subprocess", lambda: subprocess.run(["/bin/true"], check=True)),
                 ("mmap", anon_mmap), ("socketpair", socketpair), ("setsid", setsid),
                 ("sleep", lambda: time.sleep(0.01)), ("files", files)]:
    try:
        fn()
        result["works"][name] = "ok"
    except BaseException as e:
        result["works"][name] = "%s: %r" % (type(e).__name__, e)
print(json.dumps(result))
`

type seccompProbeResult struct {
	Probes map[string]string `json:"probes"`
	Works  map[string]string `json:"works"`
}

// runSeccompProbe runs the probe script in bwrap, with the filter when prog
// is non-nil.
func runSeccompProbe(t *testing.T, prog []byte) (*seccompProbeResult, error) {
	t.Helper()
	native, err := arch.GetInfo("")
	if err != nil {
		return nil, err
	}
	numbers, err := json.Marshal(native.SyscallNames)
	if err != nil {
		return nil, err
	}
	args := []string{"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
		"--unshare-pid", "--unshare-ipc", "--unshare-net", "--die-with-parent"}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var extra []*os.File
	if prog != nil {
		// bwrap reads fd 3 to EOF. The program is far smaller than a pipe
		// buffer, so it is written and the write end closed before start.
		r, w, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		defer r.Close()
		_, err = w.Write(prog)
		w.Close()
		if err != nil {
			return nil, err
		}
		args = append(args, "--seccomp", "3")
		extra = []*os.File{r}
	}
	args = append(args, "/usr/bin/python3", "-c", seccompProbeScript, string(numbers))
	cmd := exec.CommandContext(ctx, "/usr/bin/bwrap", args...)
	cmd.ExtraFiles = extra
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("bwrap: %v: %s", err, stderr.Bytes())
	}
	var res seccompProbeResult
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, fmt.Errorf("decoding %q: %v", out, err)
	}
	return &res, nil
}

// TestSeccompBwrap loads the filter into a real bubblewrap sandbox and checks
// that the denied classes fail as intended while ordinary Python works. A
// control run without the filter shows which denials are the filter's doing.
func TestSeccompBwrap(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	for _, p := range []string{"/usr/bin/bwrap", "/usr/bin/python3"} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("needs %s", p)
		}
	}
	control, err := runSeccompProbe(t, nil)
	if err != nil {
		t.Skipf("bwrap cannot make a sandbox here: %v", err)
	}
	prog, err := SeccompProgram()
	if err != nil {
		t.Fatal(err)
	}
	got, err := runSeccompProbe(t, prog)
	if err != nil {
		t.Fatal(err)
	}

	want := map[string]string{
		"shmget": "EPERM", "msgget": "EPERM", "semget": "EPERM", "mq_open": "EPERM",
		"add_key": "EPERM", "keyctl": "EPERM",
		"unshare(CLONE_NEWUSER)": "EPERM", "clone(CLONE_NEWUSER|SIGCHLD)": "EPERM", "setns": "EPERM",
		"ptrace(PTRACE_TRACEME)": "EPERM", "process_vm_readv": "EPERM", "bpf": "EPERM",
		"io_uring_setup": "EPERM", "userfaultfd": "EPERM", "mount": "EPERM", "perf_event_open": "EPERM",
		"clone3":         "ENOSYS",
		"clone(SIGCHLD)": "ok", "personality(query)": "ok", "personality(ADDR_NO_RANDOMIZE)": "EPERM",
	}
	if runtime.GOARCH == "amd64" {
		want["ioperm"] = "EPERM"
		want["x32 getpid"] = "ENOSYS"
		// Only meaningful where the kernel runs i386 code at all.
		if control.Probes["i386 int 0x80"] == "ok" {
			want["i386 int 0x80"] = "killed by SIGSYS"
		} else {
			t.Logf("i386 ABI unavailable (control: %s); not checked", control.Probes["i386 int 0x80"])
		}
	}
	names := make([]string, 0, len(got.Probes))
	for name := range got.Probes {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		t.Logf("%-32s filtered %-18s control %s", name, got.Probes[name], control.Probes[name])
	}
	for name, w := range want {
		if got.Probes[name] != w {
			t.Errorf("%s: got %q, want %q", name, got.Probes[name], w)
		}
	}
	// Calls that succeed without the filter prove that the filter was
	// loaded and is what denies them.
	for _, name := range []string{"shmget", "clone3"} {
		if control.Probes[name] == want[name] {
			t.Errorf("%s: control run also gives %q", name, want[name])
		}
	}
	for _, name := range []string{"fork", "thread", "subprocess", "mmap", "socketpair", "setsid", "sleep", "files"} {
		if got.Works[name] != "ok" {
			t.Errorf("%s under the filter: %s", name, got.Works[name])
		}
	}
}
