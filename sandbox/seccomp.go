package sandbox

// Seccomp policy of the sandbox.
//
// The filter is a denylist layered on top of the namespaces, capabilities,
// rlimits and cgroups the sandbox already uses: everything is allowed except
// the kernel interfaces below, which ordinary Python code does not need and
// which are where container escapes and kernel exploits usually start. A
// denied call fails with EPERM, so well-behaved code sees an ordinary
// permission error instead of being killed.
//
//   - SysV IPC (shm*, sem*, msg*) and POSIX message queues (mq_*): shared
//     state outside the file system that outlives a job and is not wiped
//     between jobs of a slot.
//   - Keyrings (add_key, request_key, keyctl): kernel-held secrets and a long
//     history of kernel bugs.
//   - Namespaces: unshare, setns, and clone whose flags ask for a new
//     namespace. New user namespaces in particular hand out capabilities
//     that unlock much more kernel surface. clone3 passes its flags in a
//     struct that a seccomp filter cannot read, so it fails with ENOSYS;
//     glibc then falls back to clone, whose flags are checked.
//   - Debugging and introspection of other processes: ptrace,
//     process_vm_readv, process_vm_writev, perf_event_open.
//   - Frequently exploited subsystems: bpf, io_uring_*, userfaultfd (used to
//     win kernel races).
//   - Mounts (the old and the new mount API), chroot and pivot_root.
//   - System administration: kexec_*, *_module, swapon, swapoff, reboot,
//     acct, quotactl*, lookup_dcookie, file handles (name_to_handle_at,
//     open_by_handle_at, which bypass path-based confinement), vhangup and,
//     on amd64, ioperm and iopl.
//   - personality, except the query personality(0xffffffff): changing the
//     persona can, for example, switch off address-space randomisation.
//
// Only the native ABI is allowed. A system call made through another ABI
// (i386 int 0x80 on amd64, AArch32 on arm64) kills the process, since the
// syscall numbers above would not match it; x32 calls on amd64 fail with
// ENOSYS (done by the library).

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// seccompDenied fail with EPERM unconditionally on every supported arch.
var seccompDenied = []string{
	// SysV IPC and POSIX message queues.
	"shmget", "shmat", "shmdt", "shmctl",
	"semget", "semop", "semtimedop", "semctl",
	"msgget", "msgsnd", "msgrcv", "msgctl",
	"mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr",
	// Keyrings.
	"add_key", "request_key", "keyctl",
	// Namespaces (clone is filtered on its flags below).
	"unshare", "setns",
	// Other processes' memory and tracing.
	"ptrace", "process_vm_readv", "process_vm_writev", "perf_event_open",
	// Exploit-prone subsystems.
	"bpf", "io_uring_setup", "io_uring_enter", "io_uring_register", "userfaultfd",
	// Mounts.
	"mount", "umount2", "pivot_root", "chroot",
	"move_mount", "open_tree", "open_tree_attr", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
	// System administration.
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
	"swapon", "swapoff", "reboot", "acct", "quotactl", "quotactl_fd", "lookup_dcookie",
	"name_to_handle_at", "open_by_handle_at", "vhangup",
}

// seccompDeniedAMD64 are x86-only port I/O calls (absent on arm64).
var seccompDeniedAMD64 = []string{"ioperm", "iopl"}

// cloneNamespaceFlags are the clone flags that create a namespace. The flags
// are argument 0 of clone on both amd64 and arm64 (not on s390, which is not
// supported). CLONE_NEWTIME shares its bit with the exit-signal field of
// clone, which no valid signal uses, so including it costs nothing.
const cloneNamespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET |
	unix.CLONE_NEWTIME

// personalityQuery is personality(0xffffffff), which only reads the persona.
const personalityQuery = 0xffffffff

// seccompProgram caches the assembled filter; it depends only on the arch.
var seccompProgram = sync.OnceValues(buildSeccompProgram)

// SeccompProgram returns the filter as the raw array of struct sock_filter
// (8 bytes each, native endianness) that `bwrap --seccomp FD` reads from a
// descriptor. The policy is described at the top of seccomp.go. It fails on
// architectures other than amd64 and arm64. The caller owns the returned
// slice.
func SeccompProgram() ([]byte, error) {
	prog, err := seccompProgram()
	return bytes.Clone(prog), err
}

func buildSeccompProgram() ([]byte, error) {
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		return nil, fmt.Errorf("sandbox: seccomp: unsupported architecture %s", runtime.GOARCH)
	}
	native, err := arch.GetInfo("")
	if err != nil {
		return nil, fmt.Errorf("sandbox: seccomp: %w", err)
	}
	denied := seccompDenied
	if runtime.GOARCH == "amd64" {
		denied = append(denied[:len(denied):len(denied)], seccompDeniedAMD64...)
	}

	policy := seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{
			{
				Action: seccomp.ActionErrno, // EPERM
				Names:  denied,
				NamesWithCondtions: []seccomp.NameWithConditions{
					{Name: "clone", Conditions: seccomp.ArgumentConditions{
						{Argument: 0, Operation: seccomp.BitsSet, Value: cloneNamespaceFlags},
					}},
					{Name: "personality", Conditions: seccomp.ArgumentConditions{
						{Argument: 0, Operation: seccomp.NotEqual, Value: personalityQuery},
					}},
				},
			},
			{
				// The library adds EPERM only to a bare ActionErrno; any
				// other errno is carried in the low 16 bits.
				Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS),
				Names:  []string{"clone3"},
			},
		},
	}
	insns, err := policy.Assemble()
	if err != nil {
		return nil, fmt.Errorf("sandbox: seccomp: %w", err)
	}

	// The library sends a foreign arch to the default action, which is
	// allow here; kill it first instead. Offset 4 of struct seccomp_data
	// is the audit arch.
	prog := append([]bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(native.ID), SkipTrue: 1},
		bpf.RetConstant{Val: uint32(seccomp.ActionKillProcess)},
	}, insns...)
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, fmt.Errorf("sandbox: seccomp: %w", err)
	}
	if len(raw) > 4096 { // BPF_MAXINSNS
		return nil, fmt.Errorf("sandbox: seccomp: program too long (%d instructions)", len(raw))
	}

	// struct sock_filter { __u16 code; __u8 jt; __u8 jf; __u32 k; }
	out := make([]byte, 0, 8*len(raw))
	for _, ins := range raw {
		out = binary.NativeEndian.AppendUint16(out, ins.Op)
		out = append(out, ins.Jt, ins.Jf)
		out = binary.NativeEndian.AppendUint32(out, ins.K)
	}
	return out, nil
}
