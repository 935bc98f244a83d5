package sandbox

import (
	"bufio"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	json "github.com/goccy/go-json"

	"github.com/murphy-rl/murphy/topics"
)

// A Builder runs build commands (compilers, make, go build, javac) over a
// workspace in a fresh bubblewrap sandbox per job: the same seccomp filter,
// namespaces and read-only system as the Python pool, no network, a trusted
// driver (builder.py) that copies the read-only snapshot and the job's
// changed files onto a size-capped tmpfs at /work and runs each command as
// the slot's job uid, reporting its end on a descriptor no command holds.
// CPU time (every process, from the slot's cgroup), memory (cgroup), wall
// time, output and disk are bounded from outside. SECURITY.md has the design.

//go:embed builder.py
var builderSource []byte

// BuildLimits bound each command of a build job. Zero fields of a job's
// limits take the builder's.
type BuildLimits struct {
	// Wall is the wall-clock limit of one command.
	Wall time.Duration `yaml:"wall"`
	// CPU is the CPU time of one command, all its processes together
	// (from the slot's cgroup; RLIMIT_CPU is not used).
	CPU time.Duration `yaml:"cpu"`
	// DiskMB is the size of the writable workspace (/work, a tmpfs).
	DiskMB int `yaml:"disk_mb"`
	// TmpMB is the size of /tmp (build caches, javac output).
	TmpMB int `yaml:"tmp_mb"`
	// Procs caps processes and threads of the job uid (RLIMIT_NPROC).
	Procs int `yaml:"procs"`
	// OpenFiles caps descriptors per process (RLIMIT_NOFILE).
	OpenFiles int `yaml:"open_files"`
	// FileSizeMB caps any one file a command writes (RLIMIT_FSIZE).
	FileSizeMB int `yaml:"file_size_mb"`
	// OutputBytes caps one command's output (stdout and stderr together);
	// past it the command is killed and flagged OutputLimited.
	OutputBytes int `yaml:"output_bytes"`
}

// DefaultBuildLimits fit small and mid-sized C, Go, Java and Python
// projects on a loaded two-core machine.
func DefaultBuildLimits() BuildLimits {
	return BuildLimits{
		Wall: 120 * time.Second, CPU: 60 * time.Second, DiskMB: 256, TmpMB: 512,
		Procs: 256, OpenFiles: 1024, FileSizeMB: 128, OutputBytes: 1 << 20,
	}
}

func (l BuildLimits) withDefaults(d BuildLimits) BuildLimits {
	pick := func(v, dv int) int {
		if v > 0 {
			return v
		}
		return dv
	}
	if l.Wall <= 0 {
		l.Wall = d.Wall
	}
	if l.CPU <= 0 {
		l.CPU = d.CPU
	}
	l.DiskMB, l.TmpMB = pick(l.DiskMB, d.DiskMB), pick(l.TmpMB, d.TmpMB)
	l.Procs, l.OpenFiles = pick(l.Procs, d.Procs), pick(l.OpenFiles, d.OpenFiles)
	l.FileSizeMB, l.OutputBytes = pick(l.FileSizeMB, d.FileSizeMB), pick(l.OutputBytes, d.OutputBytes)
	return l
}

func (l BuildLimits) validate() error {
	switch {
	case l.Wall <= 0 || l.CPU <= 0:
		return errors.New("sandbox: build wall and cpu limits must be positive")
	case l.DiskMB < 1 || l.TmpMB < 1 || l.FileSizeMB < 1:
		return errors.New("sandbox: build disk_mb, tmp_mb and file_size_mb must be >= 1")
	case l.Procs < 1 || l.OpenFiles < 16 || l.OutputBytes < 1024:
		return errors.New("sandbox: build procs >= 1, open_files >= 16 and output_bytes >= 1024 are required")
	}
	return nil
}

// BuilderConfig configures a Builder.
type BuilderConfig struct {
	// Workers is the number of builds run at once (0 = one per CPU).
	Workers int `yaml:"workers"`
	// Bwrap is the bubblewrap binary.
	Bwrap string `yaml:"bwrap"`
	// Python runs the build driver inside the sandbox (under /usr).
	Python string `yaml:"python"`
	// UIDBase is the first host uid handed to build slots, leased like the
	// pool's (a lock file per uid under LockDir); keep the range apart from
	// the pool's.
	UIDBase int `yaml:"uid_base"`
	// UIDCount is the number of host uids, from UIDBase on, for build slots.
	UIDCount int `yaml:"uid_count"`
	// LockDir holds the uid lock files.
	LockDir string `yaml:"lock_dir"`
	// MemoryMB caps every process of one build, tmpfs pages included,
	// through the slot's memory cgroup (0 = no cgroup).
	MemoryMB int `yaml:"memory_mb"`
	// ReadOnly are extra host paths bound read-only at the same place
	// (toolchain configuration outside /usr, a Maven repository...).
	// Missing ones are skipped.
	ReadOnly []string `yaml:"read_only"`
	// MavenRepository is a Maven local repository on the host (e.g.
	// ~/.m2/repository) bound read-only into every build and used as
	// Maven's local repository, so `mvn -o` builds offline from it ("" = an
	// empty one in /tmp).
	MavenRepository string `yaml:"maven_repository"`
	// Env is added to every command's environment (KEY=VALUE), after the
	// builder's own (PATH, HOME, GOCACHE, GOFLAGS, ...).
	Env []string `yaml:"env"`
	// Limits are the default per-command limits.
	Limits BuildLimits `yaml:"limits"`
}

// DefaultBuilderConfig is one build slot per CPU with DefaultBuildLimits.
func DefaultBuilderConfig() BuilderConfig {
	return BuilderConfig{
		Bwrap: "/usr/bin/bwrap", Python: "/usr/bin/python3",
		UIDBase: 63000, UIDCount: 1000, LockDir: os.TempDir(), MemoryMB: 2048,
		ReadOnly: []string{"/etc/alternatives", "/etc/java-17-openjdk", "/etc/java-21-openjdk", "/etc/maven", "/etc/ld.so.cache", "/etc/ssl/certs"},
		Limits:   DefaultBuildLimits(),
	}
}

// Validate checks the configuration.
func (c BuilderConfig) Validate() error {
	if c.Workers < 0 {
		return fmt.Errorf("sandbox: build workers %d < 0", c.Workers)
	}
	if c.Bwrap == "" || c.Python == "" {
		return errors.New("sandbox: bwrap and python paths are required")
	}
	if c.UIDBase < 1000 || c.UIDCount < 1 || c.UIDBase+c.UIDCount > 1<<31-2 {
		return fmt.Errorf("sandbox: build uid range %d+%d must be non-root and above 999", c.UIDBase, c.UIDCount)
	}
	for _, e := range c.Env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return fmt.Errorf("sandbox: build env %q is not KEY=VALUE", e)
		}
	}
	if c.MavenRepository != "" {
		if fi, err := os.Stat(c.MavenRepository); err != nil || !fi.IsDir() || !filepath.IsAbs(c.MavenRepository) {
			return fmt.Errorf("sandbox: maven_repository %q is not an absolute directory", c.MavenRepository)
		}
	}
	return c.Limits.validate()
}

// BuildJob is one build of a workspace.
type BuildJob struct {
	// Tree is the host directory of the snapshot, bound read-only.
	Tree string
	// Overlay, when set, is a host directory of changed and created files
	// copied over the snapshot (a patch's result).
	Overlay string
	// Deleted are workspace paths the job removes after the overlay.
	Deleted []string
	// Commands run in order at the workspace root; the first that fails
	// ends the job.
	Commands [][]string
	// Env is added to the builder's environment for this job.
	Env []string
	// Seed, when set, is a host directory whose subdirectories are copied
	// into /tmp before the commands (a warm build cache kept from an
	// earlier job, e.g. gocache).
	Seed string
	// SeedKey, when Seed is empty, seeds the job with the builder's kept
	// cache for this key (a toolchain), if Warm made one.
	SeedKey string
	// Keep names /tmp subdirectories (e.g. "gocache") copied to Export, a
	// host directory, after the commands (also when one failed). Only jobs
	// over trusted trees keep anything: a kept cache seeds later jobs.
	Keep   []string
	Export string
	// Limits override the builder's where non-zero.
	Limits BuildLimits
	// Deps is a host directory holding a resolved dependency cache (laid
	// out as DepsEnv reads it), bound read-only at /deps; the tools'
	// environment points at what it holds. It takes the place of the
	// builder's MavenRepository.
	Deps string
	// Network, when set, is served on NetworkAddr inside the job's own
	// network namespace: the only address the job can reach (a dependency
	// resolver's mirror; build_net.go).
	Network http.Handler
	// KeepGoing runs every command even when one fails (a resolution job
	// runs the build for what it downloads, whatever it reports).
	KeepGoing bool
	// Files are written under /tmp (relative path: content), as the job
	// uid, before the commands (a tool's settings).
	Files map[string]string
}

// CommandResult is what one command of a build did.
type CommandResult struct {
	Argv []string
	// Ran: the command started.
	Ran bool
	// ExitCode is the main process's exit status (-1 when killed).
	ExitCode int
	Signal   string
	// TimedOut: the wall or CPU limit was reached.
	TimedOut bool
	// OutputLimited: the output passed Limits.OutputBytes.
	OutputLimited bool
	// MemoryKilled: the memory cgroup killed a process of the command.
	MemoryKilled bool
	// DiskFull: the workspace had no space left when the command ended.
	DiskFull bool
	// Output is stdout and stderr together, up to Limits.OutputBytes.
	Output []byte
	CPU    time.Duration
	Wall   time.Duration
}

// OK reports whether the command exited with status 0 within its limits.
func (c *CommandResult) OK() bool {
	return c.Ran && c.ExitCode == 0 && c.Signal == "" && !c.TimedOut && !c.OutputLimited && !c.MemoryKilled
}

// BuildResult is everything observed about one build job.
type BuildResult struct {
	// Commands has one entry per job command (Ran false for those not
	// reached).
	Commands []CommandResult
	// Limits the job ran under.
	Limits BuildLimits
	// SandboxError explains a failure of the sandbox or of preparing the
	// workspace (a snapshot larger than the disk cap), not of the build.
	SandboxError     string
	SandboxErrorKind string
	Wall             time.Duration
}

// OK reports whether every command ran and succeeded.
func (r *BuildResult) OK() bool {
	if r.SandboxError != "" {
		return false
	}
	for i := range r.Commands {
		if !r.Commands[i].OK() {
			return false
		}
	}
	return true
}

// Builder runs build jobs, Workers at a time.
type Builder struct {
	cfg BuilderConfig
	dir string // host directory holding builder.py
	// seeds are kept build caches by key (Warm), under dir/seeds.
	seedMu sync.Mutex
	seeds  map[string]string
	// warming holds the keys whose first Warm runs now; it is closed
	// when that Warm ends.
	warming map[string]chan struct{}
	// seedless holds the keys whose warm-up kept nothing (toolchains
	// without a build cache): their Warms are plain builds.
	seedless map[string]bool
	slots    chan *buildSlot
	all      []*buildSlot
	cg       *cgroups
	closed   chan struct{}
	once     sync.Once
}

type buildSlot struct {
	id    int
	lease *uidLease
}

// NewBuilder leases a uid per slot. It fails when bubblewrap or the
// interpreter is missing or the process is not root.
func NewBuilder(cfg BuilderConfig) (*Builder, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("sandbox: the builder must run as root (it hands each build a non-root uid)")
	}
	for _, p := range []string{cfg.Bwrap, cfg.Python} {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("sandbox: %w (install with: apt-get install -y bubblewrap python3)", err)
		}
	}
	dir, err := os.MkdirTemp("", "murphy-builder-")
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "builder.py"), builderSource, 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	n := cfg.Workers
	if n <= 0 {
		n = runtime.NumCPU()
	}
	b := &Builder{cfg: cfg, dir: dir, slots: make(chan *buildSlot, n), closed: make(chan struct{})}
	// Tagged by the uid range too: two builders of one process (generate's
	// episodes and execute) never share a cgroup.
	b.cg = newCgroupsTagged(fmt.Sprintf("murphy-build-%d", cfg.UIDBase), cfg.MemoryMB, cfg.Limits.Procs)
	skip := map[int]bool{}
	for i := range n {
		lease, err := leaseUID(cfg.LockDir, cfg.UIDBase, cfg.UIDCount, skip)
		if err != nil {
			b.Close()
			return nil, err
		}
		skip[lease.uid] = true
		s := &buildSlot{id: i, lease: lease}
		b.all = append(b.all, s)
		b.slots <- s
	}
	return b, nil
}

// Size is the number of builds run at once.
func (b *Builder) Size() int { return len(b.all) }

// Close waits for running builds and releases the slots.
func (b *Builder) Close() error {
	b.once.Do(func() {
		close(b.closed)
		deadline := time.After(2*b.cfg.Limits.Wall + time.Minute)
		for range len(b.all) {
			select {
			case s := <-b.slots:
				s.lease.release()
			case <-deadline:
			}
		}
		b.cg.remove()
		os.RemoveAll(b.dir)
	})
	return nil
}

// Seed returns the kept build cache for key ("" when there is none).
func (b *Builder) Seed(key string) string {
	b.seedMu.Lock()
	defer b.seedMu.Unlock()
	return b.seeds[key]
}

// Warm runs job, a build of a TRUSTED tree (a task's unpatched snapshot,
// never a candidate's edits), and when the builder has no kept cache for
// key yet, keeps the job's build caches (Go's gocache) as the seed of
// every later job with that SeedKey. One seed per key: it holds what every
// project of the toolchain needs (the standard library), and is never
// replaced or removed while the builder runs, so a job may bind it at any
// time. The result is job's, as Build returns it.
//
// Concurrent Warms of one key run one warm-up: the others wait for it and
// then build with its seed (or warm again if it kept none), so a
// toolchain's caches are built once, not once per concurrent caller.
func (b *Builder) Warm(ctx context.Context, key string, job *BuildJob) (*BuildResult, error) {
	for key != "" && b.Seed(key) == "" {
		b.seedMu.Lock()
		if b.seedless[key] {
			b.seedMu.Unlock()
			break
		}
		wait, busy := b.warming[key]
		if !busy {
			if b.warming == nil {
				b.warming = map[string]chan struct{}{}
			}
			done := make(chan struct{})
			b.warming[key] = done
			b.seedMu.Unlock()
			defer func() {
				b.seedMu.Lock()
				delete(b.warming, key)
				b.seedMu.Unlock()
				close(done)
			}()
			return b.warm(ctx, key, job)
		}
		b.seedMu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-b.closed:
			return nil, ErrBuilderClosed
		}
	}
	j := *job
	j.SeedKey = key
	return b.Build(ctx, &j)
}

// warm runs the first Warm of key and keeps its caches as the key's seed.
func (b *Builder) warm(ctx context.Context, key string, job *BuildJob) (*BuildResult, error) {
	export, err := os.MkdirTemp(b.dir, "seed-")
	if err != nil {
		return nil, fmt.Errorf("sandbox: seed: %w", err)
	}
	j := *job
	j.Keep, j.Export = []string{"gocache"}, filepath.Join(export, "kept")
	res, err := b.Build(ctx, &j)
	if err != nil {
		os.RemoveAll(export)
		return res, err
	}
	if _, serr := os.Stat(filepath.Join(j.Export, "gocache")); serr != nil || res.SandboxError != "" {
		os.RemoveAll(export)
		if serr != nil && res.SandboxError == "" {
			b.seedMu.Lock()
			if b.seedless == nil {
				b.seedless = map[string]bool{}
			}
			b.seedless[key] = true // nothing to keep: later Warms just build
			b.seedMu.Unlock()
		}
		return res, nil
	}
	b.seedMu.Lock()
	defer b.seedMu.Unlock()
	if b.seeds == nil {
		b.seeds = map[string]string{}
	}
	b.seeds[key] = j.Export // one warm-up of a key at a time (Warm)
	return res, nil
}

// ErrBuilderClosed is returned by Build after Close.
var ErrBuilderClosed = errors.New("sandbox: builder closed")

// Build runs job. The error is non-nil only when ctx ends before a slot is
// free or the builder is closed; everything the build or the sandbox does
// is in the result.
func (b *Builder) Build(ctx context.Context, job *BuildJob) (*BuildResult, error) {
	var s *buildSlot
	select {
	case <-b.closed:
		return nil, ErrBuilderClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	case s = <-b.slots:
	}
	defer func() { b.slots <- s }()
	select {
	case <-b.closed:
		return nil, ErrBuilderClosed
	default:
	}
	if job.Seed == "" && job.SeedKey != "" {
		copied := *job
		copied.Seed = b.Seed(job.SeedKey)
		job = &copied
	}
	lim := job.Limits.withDefaults(b.cfg.Limits)
	res := &BuildResult{Limits: lim, Commands: make([]CommandResult, len(job.Commands))}
	for i, c := range job.Commands {
		res.Commands[i] = CommandResult{Argv: append([]string(nil), c...), ExitCode: -1}
	}
	if err := validateJob(job); err != nil {
		res.SandboxError, res.SandboxErrorKind = err.Error(), topics.SandboxErrorInvalidJob
		return res, nil
	}
	start := time.Now()
	b.run(ctx, s, job, lim, res)
	res.Wall = time.Since(start)
	if job.Export != "" {
		if err := sealExport(job.Export); err != nil && res.SandboxError == "" {
			res.SandboxError, res.SandboxErrorKind = "build export: "+err.Error(), topics.SandboxErrorInternal
		}
	}
	if ctx.Err() != nil && res.SandboxError == "" {
		res.SandboxError, res.SandboxErrorKind = "build canceled: "+ctx.Err().Error(), topics.SandboxErrorCanceled
	}
	return res, ctx.Err()
}

// sealExport makes what a job exported root's and read-only to everyone,
// so that any later job (any slot's uid) may read it as a seed and none may
// change it; anything but directories and regular files is removed.
func sealExport(dir string) error {
	return filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if err := os.Lchown(p, 0, 0); err != nil {
				return err
			}
			return os.Chmod(p, 0o555)
		case d.Type().IsRegular():
			if err := os.Lchown(p, 0, 0); err != nil {
				return err
			}
			return os.Chmod(p, 0o444)
		}
		return os.Remove(p)
	})
}

func validateJob(job *BuildJob) error {
	if job.Tree == "" {
		return errors.New("build job without a workspace tree")
	}
	if fi, err := os.Stat(job.Tree); err != nil || !fi.IsDir() {
		return fmt.Errorf("build job tree %q is not a directory", job.Tree)
	}
	if len(job.Commands) == 0 {
		return errors.New("build job without commands")
	}
	for _, c := range job.Commands {
		if len(c) == 0 || c[0] == "" {
			return errors.New("build job with an empty command")
		}
	}
	for _, d := range job.Deleted {
		if d == "" || filepath.IsAbs(d) || !filepath.IsLocal(d) {
			return fmt.Errorf("build job deletes %q outside the workspace", d)
		}
	}
	for _, e := range job.Env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return fmt.Errorf("build env %q is not KEY=VALUE", e)
		}
	}
	for _, k := range job.Keep {
		if k == "" || strings.ContainsAny(k, "/\x00") || k == "." || k == ".." {
			return fmt.Errorf("build job keeps %q: not a /tmp directory name", k)
		}
	}
	if len(job.Keep) > 0 && job.Export == "" {
		return errors.New("build job keeps directories but has no export directory")
	}
	return validateJobInputs(job)
}

// validateJobInputs checks the files a job writes and its dependency
// cache.
func validateJobInputs(job *BuildJob) error {
	for p := range job.Files {
		if p == "" || filepath.IsAbs(p) || !filepath.IsLocal(p) {
			return fmt.Errorf("build job writes %q outside /tmp", p)
		}
	}
	if job.Deps != "" {
		if fi, err := os.Stat(job.Deps); err != nil || !fi.IsDir() || !filepath.IsAbs(job.Deps) {
			return fmt.Errorf("build job dependency cache %q is not an absolute directory", job.Deps)
		}
	}
	return nil
}

// BuildPATH is the PATH of every build command (the host's toolchains,
// bound read-only).
const BuildPATH = "/usr/local/go/bin:/usr/local/bin:/usr/bin:/bin"

// buildEnv is every command's environment: offline, caches in /tmp.
func (b *Builder) buildEnv(job *BuildJob) []string {
	env := []string{
		"PATH=" + BuildPATH,
		"HOME=/tmp/home", "TMPDIR=/tmp", "LANG=C.UTF-8", "SOURCE_DATE_EPOCH=0",
		"GOCACHE=/tmp/gocache", "GOPATH=/tmp/gopath", "GOPROXY=off", "GOTOOLCHAIN=local",
		// -count=1: a candidate's tests run, never answered from the
		// cache a warm-up left (go test caches results of passing tests).
		"GOTELEMETRY=off", "GOFLAGS=-buildvcs=false -count=1", "GONOSUMDB=*", "GOSUMDB=off",
		"PYTHONDONTWRITEBYTECODE=", "PYTHONHASHSEED=0", "MAVEN_OPTS=-Dmaven.repo.local=/tmp/m2",
	}
	if b.cfg.MavenRepository != "" {
		env[len(env)-1] = "MAVEN_OPTS=-Dmaven.repo.local=" + mavenRepositoryMount
	}
	if job.Deps != "" {
		env = append(env, DepsEnv(job.Deps, depsMount)...)
	}
	env = append(env, b.cfg.Env...)
	return append(env, job.Env...)
}

// driverJob is what the driver reads (job.json).
type driverJob struct {
	UID      int               `json:"uid"`
	Env      []string          `json:"-"`
	EnvMap   map[string]string `json:"env"`
	Commands [][]string        `json:"commands"`
	Deleted  []string          `json:"deleted,omitempty"`
	Keep     []string          `json:"keep,omitempty"`
	Files    map[string]string `json:"files,omitempty"`
	Going    bool              `json:"keep_going,omitempty"`
	Limits   struct {
		Procs     int   `json:"procs"`
		OpenFiles int   `json:"open_files"`
		FileSize  int64 `json:"file_size"`
	} `json:"limits"`
}

type driverMsg struct {
	Ev     string  `json:"ev"`
	I      int     `json:"i"`
	Status int     `json:"status"`
	UTime  float64 `json:"utime"`
	STime  float64 `json:"stime"`
	Free   int64   `json:"free"`
}

func (b *Builder) bwrapArgs(s *buildSlot, job *BuildJob, jobDir string, lim BuildLimits) []string {
	a := []string{
		"--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--die-with-parent", "--new-session", "--hostname", "sandbox",
		"--seccomp", strconv.Itoa(buildSeccompFD),
	}
	a = append(a, systemBinds()...)
	// Directories bwrap creates for a bind are 0700: /etc must be readable
	// by the job uid for the toolchain configuration bound under it.
	a = append(a, "--perms", "0755", "--dir", "/etc")
	for _, p := range b.cfg.ReadOnly {
		if _, err := os.Stat(p); err == nil && filepath.IsAbs(p) {
			a = append(a, "--ro-bind", p, p)
		}
	}
	a = append(a,
		"--proc", "/proc", "--dev", "/dev",
		"--size", strconv.Itoa(lim.TmpMB<<20), "--tmpfs", "/tmp",
		"--size", strconv.Itoa(lim.DiskMB<<20), "--tmpfs", "/work",
		"--ro-bind", job.Tree, "/src",
	)
	if job.Overlay != "" {
		a = append(a, "--ro-bind", job.Overlay, "/patch")
	}
	if b.cfg.MavenRepository != "" && job.Deps == "" {
		a = append(a, "--ro-bind", b.cfg.MavenRepository, mavenRepositoryMount)
	}
	if job.Deps != "" {
		a = append(a, "--ro-bind", job.Deps, depsMount)
	}
	if job.Network != nil {
		a = append(a, "--info-fd", strconv.Itoa(buildSeccompFD+1+len(job.Commands)))
	}
	if job.Seed != "" {
		a = append(a, "--ro-bind", job.Seed, "/seed")
	}
	if job.Export != "" {
		a = append(a, "--bind", job.Export, "/export")
	}
	return append(a,
		"--ro-bind", b.dir, "/opt/murphy-builder",
		"--ro-bind", jobDir, "/opt/murphy-build",
		"--clearenv", "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "LANG", "C.UTF-8",
		"--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_CHOWN",
		"--cap-add", "CAP_DAC_READ_SEARCH",
		"--chdir", "/",
		// -S: the driver needs the standard library only, not site-packages
		// start-up hooks (tens of milliseconds per job).
		"--", b.cfg.Python, "-I", "-B", "-S", "/opt/murphy-builder/builder.py",
	)
}

// mavenRepositoryMount is where BuilderConfig.MavenRepository is bound (at
// the top: directories bwrap creates for a mount point are 0700).
const mavenRepositoryMount = "/maven-repository"

// buildSeccompFD is the descriptor bwrap reads the filter from
// (ExtraFiles[2]); commands' outputs follow from fd 6 on.
const buildSeccompFD = 5

func (b *Builder) run(ctx context.Context, s *buildSlot, job *BuildJob, lim BuildLimits, res *BuildResult) {
	r := &buildRun{b: b, s: s, job: job, lim: lim, res: res, uid: s.lease.uid, cur: -1}
	if f := r.execute(ctx); f != nil && res.SandboxError == "" {
		res.SandboxError, res.SandboxErrorKind = f.msg, f.kind
	}
}

// buildRun is one build job on the host side: its sandbox, the host's ends
// of its pipes, the commands' output readers and their progress as the
// driver reports it.
type buildRun struct {
	b      *Builder
	s      *buildSlot
	job    *BuildJob
	lim    BuildLimits
	res    *BuildResult
	uid    int    // the slot's job uid
	jobDir string // host directory of job.json

	// The host's ends: the driver's control pipe, the go byte's pipe and
	// bwrap's info descriptor (nil without a network).
	ctrlR, goW, info *os.File

	cmd    *exec.Cmd
	log    tailBuffer // bwrap's and the driver's own output
	exited chan struct{}
	msgs   chan driverMsg

	outs    []*capture // per command
	outDone sync.WaitGroup
	mu      sync.Mutex // guards the over flags' kill decision

	// The commands' progress: the one running (-1 before the first),
	// when it started and the slot's CPU time then.
	haveCPU  bool
	ready    bool
	cur      int
	started  time.Time
	cpu0     time.Duration
	prepare  time.Duration
	deadline *time.Timer
}

// execute writes the job's spec, starts its sandbox, lets the driver go
// once the sandbox is in the slot's cgroup and watches the commands.
func (r *buildRun) execute(ctx context.Context) *jobFailure {
	jobDir, err := os.MkdirTemp("", "murphy-build-job-")
	if err != nil {
		return failure(topics.SandboxErrorInternal, "build job directory: %v", err)
	}
	defer os.RemoveAll(jobDir)
	_ = os.Chmod(jobDir, 0o755)
	r.jobDir = jobDir
	if f := r.writeSpec(); f != nil {
		return f
	}
	extra, f := r.openPipes()
	defer r.closePipes()
	if f != nil {
		return f
	}
	if f := r.start(extra); f != nil {
		return f
	}
	defer r.collect()
	r.readDriver()
	if f, ok := r.awaitHello(ctx); !ok {
		return f
	}
	stop, err := serveNetwork(r.info, r.job.Network)
	if err != nil {
		return failure(topics.SandboxErrorInternal, "build network: %v", err)
	}
	defer stop()
	if f := r.attach(); f != nil {
		return f
	}
	return r.watch(ctx)
}

// writeSpec writes job.json, what the driver reads, and makes the export
// directory the job uid's.
func (r *buildRun) writeSpec() *jobFailure {
	job, lim, uid := r.job, r.lim, r.uid
	dj := driverJob{UID: uid, Commands: job.Commands, Deleted: job.Deleted, Keep: job.Keep, EnvMap: map[string]string{},
		Files: job.Files, Going: job.KeepGoing}
	if job.Export != "" {
		if err := os.MkdirAll(job.Export, 0o700); err != nil {
			return failure(topics.SandboxErrorInternal, "build export directory: %v", err)
		}
		if err := os.Chown(job.Export, uid, uid); err != nil {
			return failure(topics.SandboxErrorInternal, "build export directory: %v", err)
		}
	}
	for _, e := range r.b.buildEnv(job) {
		k, v, _ := strings.Cut(e, "=")
		dj.EnvMap[k] = v
	}
	dj.Limits.Procs, dj.Limits.OpenFiles, dj.Limits.FileSize = lim.Procs, lim.OpenFiles, int64(lim.FileSizeMB)<<20
	spec, _ := json.Marshal(&dj)
	if err := os.WriteFile(filepath.Join(r.jobDir, "job.json"), spec, 0o644); err != nil {
		return failure(topics.SandboxErrorInternal, "build job spec: %v", err)
	}
	return nil
}

// openPipes makes the sandbox's descriptors, returned in ExtraFiles order:
// the control pipe, the go pipe, the seccomp filter, an output pipe per
// command (read by a capture from now on) and bwrap's info descriptor. The
// host's ends of the first two and of the last are r's; closePipes closes
// them.
func (r *buildRun) openPipes() ([]*os.File, *jobFailure) {
	ctrlR, ctrlW, err := os.Pipe()
	if err != nil {
		return nil, failure(topics.SandboxErrorInternal, "pipe: %v", err)
	}
	r.ctrlR = ctrlR
	goR, goW, err := os.Pipe()
	if err != nil {
		ctrlW.Close()
		return nil, failure(topics.SandboxErrorInternal, "pipe: %v", err)
	}
	r.goW = goW
	filter, err := seccompFile()
	if err != nil {
		ctrlW.Close()
		goR.Close()
		return nil, failure(topics.SandboxErrorInternal, "seccomp: %v", err)
	}
	extra := []*os.File{ctrlW, goR, filter}
	r.outs = make([]*capture, len(r.job.Commands))
	for i := range r.job.Commands {
		rd, w, err := os.Pipe()
		if err != nil {
			for _, f := range extra {
				f.Close()
			}
			return nil, failure(topics.SandboxErrorInternal, "pipe: %v", err)
		}
		extra = append(extra, w)
		r.outs[i] = &capture{max: r.lim.OutputBytes, onOver: func() {
			r.mu.Lock()
			r.res.Commands[i].OutputLimited = true
			r.mu.Unlock()
			killUID(r.uid, time.Second)
		}}
		r.outDone.Add(1)
		go r.outs[i].run(rd, &r.outDone)
	}
	r.info, extra, err = infoPipe(r.job, extra) // bwrap's --info-fd: the sandbox's pid on the host
	if err != nil {
		return nil, failure(topics.SandboxErrorInternal, "pipe: %v", err)
	}
	return extra, nil
}

// closePipes closes the host's ends openPipes made.
func (r *buildRun) closePipes() {
	closeFile(r.info)
	closeFile(r.goW)
	closeFile(r.ctrlR)
}

// start starts the job's sandbox with extra, and closes the sandbox's ends.
func (r *buildRun) start(extra []*os.File) *jobFailure {
	r.log.max = 8 << 10
	cmd := exec.Command(r.b.cfg.Bwrap, r.b.bwrapArgs(r.s, r.job, r.jobDir, r.lim)...)
	cmd.Env = []string{}
	cmd.ExtraFiles = extra
	cmd.Stdout, cmd.Stderr = &r.log, &r.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	err := cmd.Start()
	for _, f := range extra {
		f.Close()
	}
	if err != nil {
		r.outDone.Wait()
		return failure(topics.SandboxErrorInternal, "start %s: %v", r.b.cfg.Bwrap, err)
	}
	r.cmd = cmd
	r.exited = make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(r.exited)
	}()
	return nil
}

// collect ends the sandbox, every process of the job uid with it, and
// keeps each command's output.
func (r *buildRun) collect() {
	_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
	killUID(r.uid, 2*time.Second)
	<-r.exited
	r.outDone.Wait()
	for i := range r.outs {
		r.res.Commands[i].Output = r.outs[i].buf
	}
}

// readDriver decodes the driver's messages on the control pipe into msgs
// until EOF.
func (r *buildRun) readDriver() {
	r.msgs = make(chan driverMsg, 8)
	go func() {
		defer close(r.msgs)
		sc := bufio.NewScanner(r.ctrlR)
		for sc.Scan() {
			var m driverMsg
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				r.msgs <- m
			}
		}
	}()
}

// awaitHello waits for the driver's hello: every process of the sandbox
// exists then, and only then can the whole tree be moved into the slot's
// cgroup. Not ok: the job ends (with no failure when ctx ended).
func (r *buildRun) awaitHello(ctx context.Context) (*jobFailure, bool) {
	hello := time.NewTimer(30 * time.Second)
	select {
	case m, ok := <-r.msgs:
		hello.Stop()
		if !ok || m.Ev != "hello" {
			<-r.exited
			return failure(topics.SandboxErrorHarness, "build driver did not start: %s", strings.TrimSpace(r.log.String())), false
		}
		return nil, true
	case <-hello.C:
		return failure(topics.SandboxErrorHarnessTimeout, "build driver did not start in 30s: %s", strings.TrimSpace(r.log.String())), false
	case <-ctx.Done():
		hello.Stop()
		return nil, false
	}
}

// attach moves the sandbox into the slot's cgroup, resets its OOM count
// and lets the driver go.
func (r *buildRun) attach() *jobFailure {
	r.b.cg.attach(r.s.id, r.cmd.Process.Pid)
	_, r.haveCPU = r.cpuNow()
	r.b.cg.oomKilled(r.s.id) // reset the counter
	if _, err := r.goW.Write([]byte("g")); err != nil {
		return failure(topics.SandboxErrorHarness, "build driver did not start: %s", r.log.String())
	}
	return nil
}

func (r *buildRun) cpuNow() (time.Duration, bool) { return r.b.cg.cpu(r.s.id) }

// watch follows the driver's reports until it ends, enforcing each
// command's wall and CPU limits and the workspace's preparation time.
func (r *buildRun) watch(ctx context.Context) *jobFailure {
	// Preparing the workspace copies at most DiskMB; allow it a generous
	// fixed time plus a second per 16 MiB.
	r.prepare = 30*time.Second + time.Duration(r.lim.DiskMB/16)*time.Second
	r.deadline = time.NewTimer(r.prepare)
	defer r.deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case m, ok := <-r.msgs:
			if !ok {
				return r.driverEnded()
			}
			if f := r.onDriver(m); f != nil {
				return f
			}
		case <-r.deadline.C:
			if f := r.onDeadline(); f != nil {
				return f
			}
		case <-tick.C:
			r.onTick()
		}
	}
}

// driverEnded is the end of the driver's reports: a failure unless every
// command it started ended.
func (r *buildRun) driverEnded() *jobFailure {
	<-r.exited
	if !r.ready {
		return failure(topics.SandboxErrorHarness, "build driver ended before the workspace was ready: %s", strings.TrimSpace(r.log.String()))
	} else if r.cur >= 0 && !r.res.Commands[r.cur].Ran {
		return failure(topics.SandboxErrorWorker, "build driver ended during a command: %s", strings.TrimSpace(r.log.String()))
	}
	return nil
}

// onDriver takes one report of the driver: the workspace ready, a
// command's start or end.
func (r *buildRun) onDriver(m driverMsg) *jobFailure {
	switch m.Ev {
	case "ready":
		r.ready = true
		if m.Status != 0 {
			why := "could not copy the workspace"
			if m.Status>>8 == 28 || m.Free == 0 {
				why = fmt.Sprintf("the workspace does not fit in disk_mb %d", r.lim.DiskMB)
			}
			return failure(topics.SandboxErrorInvalidJob, "build: %s: %s", why, strings.TrimSpace(r.log.String()))
		}
	case "start":
		if m.I < 0 || m.I >= len(r.job.Commands) {
			return failure(topics.SandboxErrorWorker, "build driver protocol: command %d", m.I)
		}
		r.cur, r.started = m.I, time.Now()
		r.cpu0, _ = r.cpuNow()
		r.deadline.Reset(r.lim.Wall)
	case "end":
		if m.I != r.cur {
			return failure(topics.SandboxErrorWorker, "build driver protocol: end of %d during %d", m.I, r.cur)
		}
		r.commandEnded(m)
		r.deadline.Reset(r.prepare)
	case "done":
	}
	return nil
}

// commandEnded records how the running command ended: its wait status,
// CPU time, memory kill and the free disk.
func (r *buildRun) commandEnded(m driverMsg) {
	c := &r.res.Commands[r.cur]
	c.Ran = true
	c.Wall = time.Since(r.started)
	ws := syscall.WaitStatus(m.Status)
	switch {
	case ws.Exited():
		c.ExitCode = ws.ExitStatus()
	case ws.Signaled():
		c.Signal = ws.Signal().String()
	}
	if r.haveCPU {
		now, _ := r.cpuNow()
		c.CPU = now - r.cpu0
	} else {
		c.CPU = time.Duration((m.UTime + m.STime) * float64(time.Second))
	}
	if c.CPU > r.lim.CPU {
		c.TimedOut = true
	}
	c.MemoryKilled = r.b.cg.oomKilled(r.s.id)
	c.DiskFull = m.Free == 0
}

// onDeadline is the running command's wall limit (killed, with ten seconds
// for the driver to report its end), or the driver's silence otherwise.
func (r *buildRun) onDeadline() *jobFailure {
	if r.cur >= 0 && !r.res.Commands[r.cur].Ran {
		r.timeout()
		r.deadline.Reset(10 * time.Second)
		return nil
	}
	return failure(topics.SandboxErrorHarnessTimeout, "build driver did not answer in time: %s", strings.TrimSpace(r.log.String()))
}

// onTick kills the running command once its CPU time passed the limit.
func (r *buildRun) onTick() {
	if r.cur >= 0 && !r.res.Commands[r.cur].Ran && !r.res.Commands[r.cur].TimedOut && r.haveCPU {
		if now, ok := r.cpuNow(); ok && now-r.cpu0 > r.lim.CPU {
			r.timeout()
		}
	}
}

// timeout flags the running command and kills its processes.
func (r *buildRun) timeout() {
	r.mu.Lock()
	r.res.Commands[r.cur].TimedOut = true
	r.mu.Unlock()
	killUID(r.uid, time.Second)
}
