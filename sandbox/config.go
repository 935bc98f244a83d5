package sandbox

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"
)

// Limits bound one job. Zero fields of a job's Limits take the pool's.
type Limits struct {
	// Wall is the wall-clock limit of a job, enforced by the parent.
	Wall time.Duration `yaml:"wall"`
	// CPU is the CPU-time limit of the whole job, all its processes
	// together, measured on the slot's cgroup and enforced from outside
	// to the millisecond; RLIMIT_CPU (rounded up, per process) is only a
	// backstop where the host has no cgroup.
	CPU time.Duration `yaml:"cpu"`
	// MemoryMB is the address-space budget above the size of the warm
	// interpreter (RLIMIT_AS = current size + budget).
	MemoryMB int `yaml:"memory_mb"`
	// FileSizeMB caps any file the job writes (RLIMIT_FSIZE).
	FileSizeMB int `yaml:"file_size_mb"`
	// Procs caps processes and threads of the job's uid (RLIMIT_NPROC).
	Procs int `yaml:"procs"`
	// OpenFiles caps open descriptors per process (RLIMIT_NOFILE).
	OpenFiles int `yaml:"open_files"`
	// OutputBytes caps stdout and stderr, each; past it the job is killed
	// and flagged OutputLimited.
	OutputBytes int `yaml:"output_bytes"`
	// ReportBytes caps the report channel (serialised return values).
	ReportBytes int `yaml:"report_bytes"`
}

// DefaultLimits are generous enough for HumanEval/MBPP/LiveCodeBench tasks
// on a loaded two-core machine. CPU time decides a busy program's timeout,
// so the verdict does not depend on how loaded the machine is; the wall
// limit, twice as long, only catches programs that sleep or block (time a
// job waits for a free CPU does not count against it, up to five wall
// limits in all).
func DefaultLimits() Limits {
	return Limits{
		Wall:        20 * time.Second,
		CPU:         10 * time.Second,
		MemoryMB:    1024,
		FileSizeMB:  16,
		Procs:       32,
		OpenFiles:   64,
		OutputBytes: 4 << 20,
		ReportBytes: 16 << 20,
	}
}

// withDefaults fills zero fields from d.
func (l Limits) withDefaults(d Limits) Limits {
	if l.Wall <= 0 {
		l.Wall = d.Wall
	}
	if l.CPU <= 0 {
		l.CPU = d.CPU
	}
	if l.MemoryMB <= 0 {
		l.MemoryMB = d.MemoryMB
	}
	if l.FileSizeMB <= 0 {
		l.FileSizeMB = d.FileSizeMB
	}
	if l.Procs <= 0 {
		l.Procs = d.Procs
	}
	if l.OpenFiles <= 0 {
		l.OpenFiles = d.OpenFiles
	}
	if l.OutputBytes <= 0 {
		l.OutputBytes = d.OutputBytes
	}
	if l.ReportBytes <= 0 {
		l.ReportBytes = d.ReportBytes
	}
	return l
}

func (l Limits) validate() error {
	switch {
	case l.Wall <= 0 || l.CPU <= 0:
		return errors.New("sandbox: wall and cpu limits must be positive")
	case l.MemoryMB < 16:
		return fmt.Errorf("sandbox: memory_mb %d < 16", l.MemoryMB)
	case l.FileSizeMB < 1 || l.Procs < 1 || l.OpenFiles < 16:
		return errors.New("sandbox: file_size_mb >= 1, procs >= 1 and open_files >= 16 are required")
	case l.OutputBytes < 1024 || l.ReportBytes < 1024:
		return errors.New("sandbox: output_bytes and report_bytes must be >= 1024")
	}
	return nil
}

// Config configures a Pool.
type Config struct {
	// Workers is the number of warm sandboxes (0 = one per CPU).
	Workers int `yaml:"workers"`
	// Bwrap is the bubblewrap binary.
	Bwrap string `yaml:"bwrap"`
	// Python is the interpreter inside the sandbox; it must live under a
	// directory that is bound read-only (/usr).
	Python string `yaml:"python"`
	// CC is the C compiler that builds the workers' fork server
	// (forkserver/forkserver.c) when neither ForkServerDir nor the user's
	// cache directory ($XDG_CACHE_HOME/murphy, ~/.cache/murphy) holds this
	// source's build; the build is kept there for the next process.
	CC string `yaml:"cc"`
	// ForkServerDir holds prebuilt fork servers (the container image's);
	// one built from this murphy's source (forkserver-SHA.so, SHA: the
	// first 16 hex digits of the source's sha256) is used instead of CC.
	ForkServerDir string `yaml:"fork_server_dir"`
	// UIDBase is the first of the UIDCount host uids handed to workers,
	// one per slot. A uid is locked (flock under LockDir) while a pool
	// uses it, so pools of several processes never share one.
	UIDBase int `yaml:"uid_base"`
	// UIDCount is the number of host uids, from UIDBase on, the pool may
	// hand to workers.
	UIDCount int `yaml:"uid_count"`
	// LockDir holds the uid lock files.
	LockDir string `yaml:"lock_dir"`
	// TmpSizeMB is the size of each sandbox's private tmpfs.
	TmpSizeMB int `yaml:"tmp_size_mb"`
	// HashSeed is PYTHONHASHSEED in every job.
	HashSeed int `yaml:"hash_seed"`
	// Seed seeds Python's random module in every job.
	Seed int64 `yaml:"seed"`
	// SlotMemoryMB caps all processes of one slot through a memory cgroup
	// when the host lets us create one (0 = no cgroup).
	SlotMemoryMB int `yaml:"slot_memory_mb"`
	// StartTimeout bounds the start of one worker.
	StartTimeout time.Duration `yaml:"start_timeout"`
	// Limits are the default per-job limits.
	Limits Limits `yaml:"limits"`
}

// DefaultConfig is one warm sandbox per CPU with DefaultLimits.
func DefaultConfig() Config {
	return Config{
		Workers:       0,
		Bwrap:         "/usr/bin/bwrap",
		Python:        "/usr/bin/python3",
		CC:            "cc",
		ForkServerDir: "/usr/lib/murphy",
		UIDBase:       61000,
		UIDCount:      1000,
		LockDir:       os.TempDir(),
		TmpSizeMB:     64,
		HashSeed:      0,
		Seed:          0,
		SlotMemoryMB:  3072,
		StartTimeout:  30 * time.Second,
		Limits:        DefaultLimits(),
	}
}

// Validate checks the configuration.
func (c Config) Validate() error {
	if c.Workers < 0 {
		return fmt.Errorf("sandbox: workers %d < 0", c.Workers)
	}
	if c.Bwrap == "" || c.Python == "" || c.CC == "" {
		return errors.New("sandbox: bwrap, python and cc are required")
	}
	if c.UIDBase < 1000 || c.UIDCount < 1 || c.UIDBase+c.UIDCount > 1<<31-2 {
		return fmt.Errorf("sandbox: uid range %d+%d must be non-root and above 999", c.UIDBase, c.UIDCount)
	}
	if c.TmpSizeMB < 1 {
		return fmt.Errorf("sandbox: tmp_size_mb %d < 1", c.TmpSizeMB)
	}
	if c.HashSeed < 0 || c.HashSeed > 4294967295 {
		return fmt.Errorf("sandbox: hash_seed %d outside 0..4294967295", c.HashSeed)
	}
	if c.StartTimeout <= 0 {
		return errors.New("sandbox: start_timeout must be positive")
	}
	return c.Limits.validate()
}

func (c Config) workers() int {
	if c.Workers > 0 {
		return c.Workers
	}
	return runtime.NumCPU()
}
