package sandbox

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// uidProcesses lists host pids whose real or effective uid is uid. Job
// processes are not dumpable (they dropped privileges from root), so the
// owner of /proc/<pid> is root and only the status file tells their uid.
func uidProcesses(uid int) []int {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	want := strconv.Itoa(uid)
	var pids []int
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + n + "/status")
		if err != nil {
			continue
		}
		if i := bytes.Index(b, []byte("\nUid:")); i >= 0 {
			sc := bufio.NewScanner(bytes.NewReader(b[i+5:]))
			sc.Split(bufio.ScanWords)
			for k := 0; k < 2 && sc.Scan(); k++ {
				if sc.Text() == want {
					pids = append(pids, pid)
					break
				}
			}
		}
	}
	return pids
}

// killUID kills every process of uid from outside the sandbox and waits
// until none is left (or the deadline passes). It returns how many remain.
func killUID(uid int, deadline time.Duration) int {
	stop := time.Now().Add(deadline)
	for wait := time.Millisecond; ; wait = min(wait*2, 50*time.Millisecond) {
		pids := uidProcesses(uid)
		if len(pids) == 0 {
			return 0
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if time.Now().After(stop) {
			return len(pids)
		}
		time.Sleep(wait)
	}
}

// uidLease is a host uid reserved for one slot: an exclusive flock on a
// file named after it, released when the lease is closed or the process dies.
type uidLease struct {
	uid  int
	file *os.File
}

func leaseUID(dir string, base, count int, skip map[int]bool) (*uidLease, error) {
	for uid := base; uid < base+count; uid++ {
		if skip[uid] {
			continue
		}
		path := filepath.Join(dir, fmt.Sprintf("murphy-sandbox-uid-%d.lock", uid))
		f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|syscall.O_CLOEXEC, 0o600)
		if err != nil {
			return nil, fmt.Errorf("sandbox: uid lock: %w", err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			continue
		}
		// A uid that any process holds belongs to someone else: a pool
		// never kills what it did not start. (A pool that died left
		// nothing behind: its sandboxes die with it.)
		if len(uidProcesses(uid)) > 0 {
			f.Close()
			continue
		}
		return &uidLease{uid: uid, file: f}, nil
	}
	return nil, fmt.Errorf("sandbox: no free uid in %d..%d", base, base+count-1)
}

// processUID returns the real uid of a process, or -1.
func processUID(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return -1
	}
	i := bytes.Index(b, []byte("\nUid:"))
	if i < 0 {
		return -1
	}
	f := bytes.Fields(b[i+5 : min(len(b), i+64)])
	if len(f) == 0 {
		return -1
	}
	uid, err := strconv.Atoi(string(f[0]))
	if err != nil {
		return -1
	}
	return uid
}

func (l *uidLease) release() {
	if l != nil && l.file != nil {
		l.file.Close()
		l.file = nil
	}
}
