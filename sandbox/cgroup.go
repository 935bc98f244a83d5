package sandbox

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// cgroups gives each slot one memory, pids and CPU-accounting cgroup: an
// outer fence so that many processes each within RLIMIT_AS cannot together
// exhaust the host, the CPU time of a whole job (every process it forked)
// to the nanosecond, the list of the slot's processes, and the slot's
// memory after a job, which must come back to where it started. It is
// skipped when the host does not let us create cgroups (read-only cgroupfs,
// cgroup v2 without delegation); rlimits and per-process rusage apply then.
type cgroups struct {
	mu       sync.Mutex
	memoryMB int
	procs    int
	v2       bool
	memRoot  string // directory under which slot groups are created
	pidsRoot string // v1 pids hierarchy ("" when absent)
	cpuRoot  string // v1 cpuacct hierarchy ("" when absent)
	slots    map[int]string
	pidSlots map[int]string
	cpuSlots map[int]string
	oom      map[int]int64
	base     map[int]int64 // anonymous + shared memory right after the slot started
	// jobs: the slot's job group (its sandbox's processes but the judge);
	// judges: the judge's own group (cgroup v2; v1 keeps it in the slot's).
	jobs     map[int]string
	judges   map[int]string
	disabled bool
	files    openFiles // the groups' files read per job, kept open
}

// openFiles keeps cgroup files open and rereads them from offset 0: a
// cgroup file regenerates its content on every read, and a job reads
// several of them (CPU while it runs, memory and OOM kills after), each
// an open, a path walk and a close otherwise.
type openFiles struct {
	mu sync.Mutex
	m  map[string]*os.File
}

func (o *openFiles) read(path string) ([]byte, error) {
	o.mu.Lock()
	f, ok := o.m[path]
	if !ok {
		var err error
		if f, err = os.Open(path); err != nil {
			o.mu.Unlock()
			return nil, err
		}
		if o.m == nil {
			o.m = map[string]*os.File{}
		}
		o.m[path] = f
	}
	o.mu.Unlock()
	b := make([]byte, 0, 4<<10)
	for {
		n, err := f.ReadAt(b[len(b):cap(b)], int64(len(b)))
		b = b[:len(b)+n]
		if err == io.EOF || (err == nil && n == 0) {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

// closeUnder closes the files kept open under dir (a group being removed
// or replaced).
func (o *openFiles) closeUnder(dir string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for p, f := range o.m {
		if strings.HasPrefix(p, dir+"/") {
			f.Close()
			delete(o.m, p)
		}
	}
}

func newCgroups(memoryMB, procs int) *cgroups {
	return newCgroupsTagged("murphy-sandbox", memoryMB, procs)
}

// newCgroupsTagged is newCgroups under its own directory, named after tag
// and this process, so that several sets of slots never share a group.
func newCgroupsTagged(tag string, memoryMB, procs int) *cgroups {
	c := &cgroups{memoryMB: memoryMB, procs: procs, slots: map[int]string{}, pidSlots: map[int]string{},
		cpuSlots: map[int]string{}, oom: map[int]int64{}, base: map[int]int64{},
		jobs: map[int]string{}, judges: map[int]string{}}
	if memoryMB <= 0 {
		c.disabled = true
		return c
	}
	own, err := ownCgroups()
	if err != nil {
		c.disabled = true
		return c
	}
	tag = fmt.Sprintf("%s-%d", tag, os.Getpid())
	if p, ok := own["memory"]; ok && dirExists("/sys/fs/cgroup/memory") {
		c.memRoot = filepath.Join("/sys/fs/cgroup/memory", p, tag)
		if pp, ok := own["pids"]; ok && dirExists("/sys/fs/cgroup/pids") {
			c.pidsRoot = filepath.Join("/sys/fs/cgroup/pids", pp, tag)
		}
		for _, m := range []string{"cpuacct", "cpu,cpuacct", "cpuacct,cpu"} {
			if cp, ok := own["cpuacct"]; ok && dirExists("/sys/fs/cgroup/"+m) {
				c.cpuRoot = filepath.Join("/sys/fs/cgroup/"+m, cp, tag)
				break
			}
		}
	} else if p, ok := own[""]; ok && fileExists("/sys/fs/cgroup/cgroup.controllers") {
		c.v2 = true
		c.memRoot = filepath.Join("/sys/fs/cgroup", p, tag)
	} else {
		c.disabled = true
		return c
	}
	if err := os.MkdirAll(c.memRoot, 0o755); err != nil {
		c.disabled = true
		return c
	}
	if c.v2 {
		// Children of our group get memory and pids controllers only if
		// we may enable them; without that the fence is off.
		if os.WriteFile(filepath.Join(c.memRoot, "cgroup.subtree_control"), []byte("+memory +pids"), 0) != nil {
			os.Remove(c.memRoot)
			c.disabled = true
			return c
		}
	}
	if c.pidsRoot != "" && os.MkdirAll(c.pidsRoot, 0o755) != nil {
		c.pidsRoot = ""
	}
	if c.cpuRoot != "" && os.MkdirAll(c.cpuRoot, 0o755) != nil {
		c.cpuRoot = ""
	}
	return c
}

func dirExists(p string) bool  { fi, err := os.Stat(p); return err == nil && fi.IsDir() }
func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// ownCgroups maps controller ("" for v2) to this process's cgroup path.
func ownCgroups() (map[string]string, error) {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			out[""] = parts[2]
			continue
		}
		for _, ctl := range strings.Split(parts[1], ",") {
			out[ctl] = parts[2]
		}
	}
	return out, sc.Err()
}

func (c *cgroups) active() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.disabled && len(c.slots) > 0
}

// attach creates the slot's group and moves the sandbox's process tree
// into it; later forks inherit it.
func (c *cgroups) attach(slot, rootPID int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.disabled {
		return
	}
	dir := filepath.Join(c.memRoot, "slot"+strconv.Itoa(slot))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return
	}
	c.files.closeUnder(dir)
	delete(c.jobs, slot)
	delete(c.judges, slot)
	if c.v2 {
		// A replaced slot's groups: processes may join the slot's group
		// again only without controllers for children.
		_ = os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("-memory"), 0)
	}
	limit := strconv.FormatInt(int64(c.memoryMB)<<20, 10)
	var err error
	if c.v2 {
		err = os.WriteFile(filepath.Join(dir, "memory.max"), []byte(limit), 0)
		_ = os.WriteFile(filepath.Join(dir, "memory.swap.max"), []byte("0"), 0)
	} else {
		err = os.WriteFile(filepath.Join(dir, "memory.limit_in_bytes"), []byte(limit), 0)
		_ = os.WriteFile(filepath.Join(dir, "memory.memsw.limit_in_bytes"), []byte(limit), 0)
	}
	if err != nil {
		return
	}
	pdir := ""
	if c.pidsRoot != "" {
		pdir = filepath.Join(c.pidsRoot, "slot"+strconv.Itoa(slot))
		if os.MkdirAll(pdir, 0o755) != nil {
			pdir = ""
		}
	}
	// Room for the sandbox's own processes plus the job's RLIMIT_NPROC.
	pidsMax := []byte(strconv.Itoa(c.procs + 16))
	if c.v2 {
		_ = os.WriteFile(filepath.Join(dir, "pids.max"), pidsMax, 0)
	} else if pdir != "" {
		_ = os.WriteFile(filepath.Join(pdir, "pids.max"), pidsMax, 0)
	}
	cdir := ""
	if c.cpuRoot != "" {
		cdir = filepath.Join(c.cpuRoot, "slot"+strconv.Itoa(slot))
		if os.MkdirAll(cdir, 0o755) != nil {
			cdir = ""
		} else {
			c.files.closeUnder(cdir)
		}
	}
	for _, pid := range processTree(rootPID) {
		b := []byte(strconv.Itoa(pid))
		_ = os.WriteFile(filepath.Join(dir, "cgroup.procs"), b, 0)
		for _, d := range []string{pdir, cdir} {
			if d != "" {
				_ = os.WriteFile(filepath.Join(d, "cgroup.procs"), b, 0)
			}
		}
	}
	c.slots[slot] = dir
	if pdir != "" {
		c.pidSlots[slot] = pdir
	}
	if c.v2 {
		c.cpuSlots[slot] = dir
	} else if cdir != "" {
		c.cpuSlots[slot] = cdir
	}
	c.oom[slot] = c.readOOM(dir)
	c.base[slot] = c.residentLocked(slot)
}

// cpu returns the CPU time the slot's processes used so far.
func (c *cgroups) cpu(slot int) (time.Duration, bool) {
	c.mu.Lock()
	dir, ok := c.cpuSlots[slot]
	v2 := c.v2
	c.mu.Unlock()
	if !ok {
		return 0, false
	}
	if v2 {
		b, err := c.files.read(filepath.Join(dir, "cpu.stat"))
		if err != nil {
			return 0, false
		}
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) == 2 && f[0] == "usage_usec" {
				n, err := strconv.ParseInt(f[1], 10, 64)
				return time.Duration(n) * time.Microsecond, err == nil
			}
		}
		return 0, false
	}
	b, err := c.files.read(filepath.Join(dir, "cpuacct.usage"))
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return time.Duration(n), err == nil
}

// pids lists the slot's processes (host pids), or false without a cgroup.
func (c *cgroups) pids(slot int) ([]int, bool) {
	c.mu.Lock()
	dir, ok := c.slots[slot]
	c.mu.Unlock()
	if !ok {
		return nil, false
	}
	c.mu.Lock()
	dirs := []string{dir}
	for _, d := range []string{c.jobs[slot], c.judges[slot]} {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	c.mu.Unlock()
	var out []int
	for i, d := range dirs {
		// Read afresh each time: cgroup v1 keeps the pid list it built for
		// an open file and serves it again to later reads of that file.
		b, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		if err != nil {
			if i == 0 {
				return nil, false
			}
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out, true
}

// splitJob moves the slot's processes but the judge into the slot's job
// group, whose memory limit is set per job (jobMemory), and the judge out
// of it (cgroup v2: its own group; v1: the slot's): a job's memory is
// every process of the job, and never the judge's. False when the groups could not be made: the slot
// must not run jobs then.
func (c *cgroups) splitJob(slot, judgePID int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	dir, ok := c.slots[slot]
	if !ok {
		return true // no cgroup at all: rlimits only
	}
	job := filepath.Join(dir, "job")
	if os.MkdirAll(job, 0o755) != nil {
		return false
	}
	judge := dir
	if c.v2 {
		judge = filepath.Join(dir, "judge")
		if os.MkdirAll(judge, 0o755) != nil {
			return false
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return false
	}
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			continue
		}
		to := job
		if pid == judgePID {
			to = judge
		}
		if to != dir && os.WriteFile(filepath.Join(to, "cgroup.procs"), []byte(f), 0) != nil && procAlive(pid) {
			return false
		}
	}
	if c.v2 {
		if os.WriteFile(filepath.Join(judge, "cgroup.procs"), []byte(strconv.Itoa(judgePID)), 0) != nil {
			return false
		}
		if os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+memory"), 0) != nil {
			return false
		}
	}
	c.files.closeUnder(job)
	c.jobs[slot] = job
	if c.v2 {
		c.judges[slot] = judge
	}
	c.oom[slot] = c.readOOM(dir) + c.readOOM(job)
	return true
}

func procAlive(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return err == nil
}

// jobMemory limits the slot's job group to what it holds now (the idle
// worker) plus bytes, plus the worker's size again for copy-on-write: the
// memory of every process of the next job together.
func (c *cgroups) jobMemory(slot int, bytes int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	job, ok := c.jobs[slot]
	if !ok {
		return false
	}
	usage, limit := "memory.usage_in_bytes", "memory.limit_in_bytes"
	if c.v2 {
		usage, limit = "memory.current", "memory.max"
	}
	b, err := c.files.read(filepath.Join(job, usage))
	if err != nil {
		return false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return false
	}
	// Never more than the slot's limit leaves beside what is outside the
	// job group now (the judge): the job alone cannot start an OOM kill
	// of the slot's group, the only one the judge is in. (One the judge's
	// growth starts, decoding what the job returned, is the job's: see
	// Pool.Run.)
	//
	// The job's processes fork from the worker: the worker's pages they
	// write (reference counts touch most of the heap) are copied and
	// charged to the group, but not to their address space. So the group
	// holds n more, and a single process's allocations meet RLIMIT_AS (a
	// MemoryError it can report) before the group's limit (a kill).
	lim := 2*n + bytes
	if all, ok := c.usageLocked(slot); ok {
		lim = max(min(lim, int64(c.memoryMB)<<20-(all-n)), n+16<<20)
	}
	return os.WriteFile(filepath.Join(job, limit), []byte(strconv.FormatInt(lim, 10)), 0) == nil
}

// leaked returns how far the slot's anonymous and shared memory stays above
// what it held right after it started (0 without a cgroup), exactly when it
// is above limit; below it, possibly an overestimate.
func (c *cgroups) leaked(slot int, limit int64) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.slots[slot]; !ok {
		return 0
	}
	// The group's whole charge (a counter) bounds its anonymous and shared
	// memory from above: within the limit, memory.stat (every statistic of
	// the group, generated on each read) need not be read.
	if u, ok := c.usageLocked(slot); ok && u-c.base[slot] <= limit {
		return u - c.base[slot]
	}
	return c.residentLocked(slot) - c.base[slot]
}

// usageLocked is the memory charged to the slot's group, page cache
// included.
func (c *cgroups) usageLocked(slot int) (int64, bool) {
	name := "memory.usage_in_bytes"
	if c.v2 {
		name = "memory.current"
	}
	b, err := c.files.read(filepath.Join(c.slots[slot], name))
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n, err == nil
}

func (c *cgroups) residentLocked(slot int) int64 {
	b, err := c.files.read(filepath.Join(c.slots[slot], "memory.stat"))
	if err != nil {
		return 0
	}
	var n int64
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		switch f[0] {
		case "rss", "shmem", "anon":
			v, _ := strconv.ParseInt(f[1], 10, 64)
			n += v
		}
	}
	return n
}

func (c *cgroups) readOOM(dir string) int64 {
	name := "memory.oom_control"
	if c.v2 {
		name = "memory.events"
	}
	b, err := c.files.read(filepath.Join(dir, name))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "oom_kill" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}

// oomKilled reports whether the slot's group OOM-killed a process since
// the last call.
func (c *cgroups) oomKilled(slot int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	dir, ok := c.slots[slot]
	if !ok {
		return false
	}
	n := c.readOOM(dir)
	if job := c.jobs[slot]; job != "" && !c.v2 {
		n += c.readOOM(job) // v1 counts a kill in the group it happened in
	}
	killed := n > c.oom[slot]
	c.oom[slot] = n
	return killed
}

func (c *cgroups) remove() {
	c.mu.Lock()
	defer c.mu.Unlock()
	var dirs []string
	for _, d := range c.jobs {
		dirs = append(dirs, d)
	}
	for _, d := range c.judges {
		dirs = append(dirs, d)
	}
	for _, d := range c.slots {
		dirs = append(dirs, d)
	}
	for _, d := range c.pidSlots {
		dirs = append(dirs, d)
	}
	if !c.v2 {
		for _, d := range c.cpuSlots {
			dirs = append(dirs, d)
		}
	}
	for _, d := range dirs {
		c.files.closeUnder(d)
		for i := 0; i < 50 && os.Remove(d) != nil && dirExists(d); i++ {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if c.memRoot != "" {
		os.Remove(c.memRoot)
	}
	if c.pidsRoot != "" {
		os.Remove(c.pidsRoot)
	}
	if c.cpuRoot != "" {
		os.Remove(c.cpuRoot)
	}
	c.slots, c.pidSlots, c.cpuSlots = map[int]string{}, map[int]string{}, map[int]string{}
	c.jobs, c.judges = map[int]string{}, map[int]string{}
}

// processTree returns root and all its descendants.
func processTree(root int) []int {
	children := map[int][]int{}
	d, err := os.Open("/proc")
	if err != nil {
		return []int{root}
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + n + "/stat")
		if err != nil {
			continue
		}
		// The command name may contain spaces: fields start after ')'.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		children[ppid] = append(children[ppid], pid)
	}
	out := []int{root}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}
