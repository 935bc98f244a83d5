package builtin

// The built-in compile-fix tasks: small multi-file projects in C, Go, Java
// and Python, each with one injected compile error. See
// compilefix/README.md for the layout of a task directory.

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/murphy-rl/murphy/compilefix/patch"
	"github.com/murphy-rl/murphy/compilefix/workspace"
	"github.com/murphy-rl/murphy/topics"
)

//go:embed all:compilefix
var compileFixFS embed.FS

// compileFixRoot is the embedded directory holding one directory per task.
const compileFixRoot = "compilefix"

// Timeouts of the built-in compile-fix tasks: the CPU time of one build
// command (all its processes). A Go build with an empty build cache
// compiles the standard library packages it imports (about 20 s of CPU
// for fmt and its dependencies), so Go tasks get more.
const (
	compileFixTimeoutMS   = 60_000
	compileFixGoTimeoutMS = 120_000
)

// storedSuffix is appended to the Go files of a snapshot (*.go, go.mod,
// go.sum) where they are stored in this repository: a directory holding a
// go.mod is a separate module that go:embed leaves out, and broken .go
// files would otherwise be packages of murphy's own module.
const storedSuffix = ".txt"

// compileFixSpec is the task.json of a task directory.
type compileFixSpec struct {
	TaskID    string              `json:"task_id"`
	Language  string              `json:"language"`
	Toolchain string              `json:"toolchain"`
	Build     []string            `json:"build"`
	Tests     []string            `json:"tests,omitempty"`
	Statement string              `json:"statement"`
	Targets   []topics.Diagnostic `json:"target_diagnostics"`
}

// compileFixSet is the decoded task set, computed once.
type compileFixSet struct {
	tasks     []topics.Task
	snapshots map[string][]byte
}

var loadCompileFixSet = sync.OnceValues(func() (*compileFixSet, error) {
	return loadCompileFix(compileFixFS, compileFixRoot)
})

// CompileFixTasks returns the built-in compile-fix tasks, sorted by task
// id, each validated. Every call returns fresh values that the caller may
// modify.
func CompileFixTasks() ([]topics.Task, error) {
	set, err := loadCompileFixSet()
	if err != nil {
		return nil, err
	}
	out := make([]topics.Task, len(set.tasks))
	for i := range set.tasks {
		out[i] = cloneTask(set.tasks[i])
		if err := out[i].Validate(); err != nil {
			return nil, fmt.Errorf("builtin compile-fix task %s: %w", out[i].TaskID, err)
		}
	}
	return out, nil
}

// CompileFixSnapshots returns the workspace snapshots of the built-in
// compile-fix tasks, digest to canonical tarball (workspace.Pack), for
// seeding a workspace store. Every call returns a fresh map and slices.
func CompileFixSnapshots() (map[string][]byte, error) {
	set, err := loadCompileFixSet()
	if err != nil {
		return nil, err
	}
	out := make(map[string][]byte, len(set.snapshots))
	for d, b := range set.snapshots {
		out[d] = bytes.Clone(b)
	}
	return out, nil
}

func cloneTask(t topics.Task) topics.Task {
	t.Tests = append([]topics.TestCase(nil), t.Tests...)
	if t.CompileFix != nil {
		cf := *t.CompileFix
		cf.Build = append([]string(nil), cf.Build...)
		cf.Tests = append([]string(nil), cf.Tests...)
		cf.Scope = append([]string(nil), cf.Scope...)
		cf.Targets = append([]topics.Diagnostic(nil), cf.Targets...)
		t.CompileFix = &cf
	}
	return t
}

// loadCompileFix reads every task directory under root of fsys.
func loadCompileFix(fsys fs.FS, root string) (*compileFixSet, error) {
	entries, err := fs.ReadDir(fsys, root)
	if err != nil {
		return nil, fmt.Errorf("builtin compile-fix tasks: %w", err)
	}
	set := &compileFixSet{snapshots: map[string][]byte{}}
	seen := map[string]string{}
	for _, e := range entries {
		if !e.IsDir() {
			continue // README.md
		}
		dir := path.Join(root, e.Name())
		t, tarball, err := loadCompileFixTask(fsys, dir)
		if err != nil {
			return nil, fmt.Errorf("builtin compile-fix task %s: %w", dir, err)
		}
		if other, dup := seen[t.TaskID]; dup {
			return nil, fmt.Errorf("builtin compile-fix task %s: task_id %q already defined by %s", dir, t.TaskID, other)
		}
		seen[t.TaskID] = dir
		set.tasks = append(set.tasks, t)
		set.snapshots[t.CompileFix.Workspace] = tarball
	}
	if len(set.tasks) == 0 {
		return nil, fmt.Errorf("builtin compile-fix tasks: none under %s", root)
	}
	sort.Slice(set.tasks, func(i, j int) bool { return set.tasks[i].TaskID < set.tasks[j].TaskID })
	return set, nil
}

func loadCompileFixTask(fsys fs.FS, dir string) (topics.Task, []byte, error) {
	var spec compileFixSpec
	raw, err := fs.ReadFile(fsys, path.Join(dir, "task.json"))
	if err != nil {
		return topics.Task{}, nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		return topics.Task{}, nil, fmt.Errorf("task.json: %w", err)
	}
	patch, err := fs.ReadFile(fsys, path.Join(dir, "fix.patch"))
	if err != nil {
		return topics.Task{}, nil, err
	}
	src, err := fs.Sub(fsys, path.Join(dir, "src"))
	if err != nil {
		return topics.Task{}, nil, err
	}
	snap, err := newSnapshotFS(src)
	if err != nil {
		return topics.Task{}, nil, err
	}
	if err := checkSpec(&spec, path.Base(dir), snap); err != nil {
		return topics.Task{}, nil, err
	}
	digest, tarball, err := workspace.Pack(snap)
	if err != nil {
		return topics.Task{}, nil, err
	}
	prompt, err := compileFixPrompt(&spec, snap)
	if err != nil {
		return topics.Task{}, nil, err
	}
	timeout := compileFixTimeoutMS
	if spec.Language == "go" {
		timeout = compileFixGoTimeoutMS
	}
	t := topics.Task{
		SchemaVersion:  topics.SchemaVersion,
		TaskID:         spec.TaskID,
		Kind:           topics.KindCompileFix,
		Source:         "murphy-builtin",
		Prompt:         prompt,
		TimeoutMS:      timeout,
		RewardPolicy:   topics.RewardTiered,
		ReferencePatch: string(patch),
		Language:       spec.Language,
		CompileFix: &topics.CompileFix{
			Workspace: digest,
			Build:     spec.Build,
			Toolchain: spec.Toolchain,
			Targets:   spec.Targets,
			Tests:     spec.Tests,
		},
	}
	if err := t.Validate(); err != nil {
		return topics.Task{}, nil, err
	}
	return t, tarball, nil
}

// checkSpec checks what Validate does not: the id names the directory,
// the language is one of the set's, and every target is an error at a
// line of a file of the snapshot.
func checkSpec(spec *compileFixSpec, name string, snap *snapshotFS) error {
	if want := "murphy/cf-" + name; spec.TaskID != want {
		return fmt.Errorf("task_id %q, want %q", spec.TaskID, want)
	}
	switch spec.Language {
	case "c", "go", "java", "python":
	default:
		return fmt.Errorf("language %q is not c, go, java or python", spec.Language)
	}
	if strings.TrimSpace(spec.Statement) == "" {
		return fmt.Errorf("no statement")
	}
	if len(spec.Targets) == 0 {
		return fmt.Errorf("no target diagnostics")
	}
	for i, d := range spec.Targets {
		if d.Severity != "error" || d.Tool == "" || d.Line < 1 || d.Message == "" {
			return fmt.Errorf("target %d: want an error with a tool, a line and a message", i)
		}
		if _, ok := snap.stored[d.File]; !ok || snap.dirs[d.File] {
			return fmt.Errorf("target %d: %q is not a file of the snapshot", i, d.File)
		}
	}
	return nil
}

// compileFixPrompt is the statement, the build command, the targets as the
// failing build states them and every file of the snapshot.
func compileFixPrompt(spec *compileFixSpec, snap *snapshotFS) (string, error) {
	var b strings.Builder
	b.WriteString(strings.TrimSpace(spec.Statement))
	fmt.Fprintf(&b, "\n\nThe build command `%s`, run at the root of the project below, fails with:\n\n", strings.Join(spec.Build, " "))
	for _, d := range spec.Targets {
		b.WriteString(formatDiagnostic(d))
		b.WriteByte('\n')
	}
	files := snap.files()
	var config []string
	for _, f := range files {
		if patch.BuildConfig(f) { // a repair must not touch it: the executor refuses such patches
			config = append(config, f)
		}
	}
	b.WriteString("\nRepair it with a unified diff against these files")
	if len(spec.Tests) > 0 {
		fmt.Fprintf(&b, "; after the build, `%s` must pass", strings.Join(spec.Tests, " "))
	}
	if len(config) > 0 {
		fmt.Fprintf(&b, ". The build configuration (%s) must not change", strings.Join(config, ", "))
	}
	b.WriteString(".\n")
	for _, f := range files {
		data, err := fs.ReadFile(snap, f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "\n--- %s ---\n%s", f, data)
		if len(data) > 0 && data[len(data)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	return b.String(), nil
}

// formatDiagnostic writes d the way its tool prints its first line.
func formatDiagnostic(d topics.Diagnostic) string {
	msg := d.Message
	loc := d.File + ":" + strconv.Itoa(d.Line)
	switch d.Tool {
	case "go":
		if d.Column > 0 {
			loc += ":" + strconv.Itoa(d.Column)
		}
		return loc + ": " + msg
	case "javac":
		return loc + ": " + d.Severity + ": " + strings.ReplaceAll(msg, "\n", "\n  ")
	case "python":
		if d.Code != "" {
			msg = d.Code + ": " + msg
		}
		return fmt.Sprintf("File %q, line %d: %s", d.File, d.Line, msg)
	}
	if d.Column > 0 {
		loc += ":" + strconv.Itoa(d.Column)
	}
	return loc + ": " + d.Severity + ": " + msg
}

// snapshotFS is a task's src directory as the snapshot sees it: the Go
// files stored with storedSuffix under their real names. It implements
// fs.ReadDirFS so that workspace.Pack walks the renamed tree.
type snapshotFS struct {
	base fs.FS
	// stored maps a snapshot path to its stored path ("." to ".").
	stored map[string]string
	dirs   map[string]bool
}

// snapshotName is the snapshot name of a stored file name and whether it
// was renamed.
func snapshotName(stored string) (string, bool) {
	name, ok := strings.CutSuffix(stored, storedSuffix)
	if ok && (strings.HasSuffix(name, ".go") || name == "go.mod" || name == "go.sum") {
		return name, true
	}
	return stored, false
}

func newSnapshotFS(base fs.FS) (*snapshotFS, error) {
	s := &snapshotFS{base: base, stored: map[string]string{".": "."}, dirs: map[string]bool{".": true}}
	err := fs.WalkDir(base, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == "." {
			return nil
		}
		name := d.Name()
		switch {
		case name == "__pycache__" || strings.HasSuffix(name, ".pyc") || strings.HasSuffix(name, ".o") ||
			strings.HasSuffix(name, ".class"):
			return fmt.Errorf("src/%s is build output, not part of the snapshot: remove it", p)
		case !d.IsDir() && (strings.HasSuffix(name, ".go") || name == "go.mod" || name == "go.sum"):
			return fmt.Errorf("src/%s must be stored as %s%s", p, name, storedSuffix)
		}
		snapPath := p
		if !d.IsDir() {
			n, _ := snapshotName(name)
			snapPath = path.Join(path.Dir(p), n)
		}
		if _, dup := s.stored[snapPath]; dup {
			return fmt.Errorf("src/%s and src/%s are both %s in the snapshot", s.stored[snapPath], p, snapPath)
		}
		s.stored[snapPath] = p
		if d.IsDir() {
			s.dirs[snapPath] = true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// files returns the snapshot's file paths, sorted.
func (s *snapshotFS) files() []string {
	var out []string
	for p := range s.stored {
		if !s.dirs[p] {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

func (s *snapshotFS) lookup(op, name string) (string, error) {
	if !fs.ValidPath(name) {
		return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	p, ok := s.stored[name]
	if !ok {
		return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	return p, nil
}

// Open implements fs.FS.
func (s *snapshotFS) Open(name string) (fs.File, error) {
	p, err := s.lookup("open", name)
	if err != nil {
		return nil, err
	}
	f, err := s.base.Open(p)
	if err != nil {
		return nil, err
	}
	sf := &snapshotFile{File: f, name: path.Base(name)}
	if s.dirs[name] {
		return &snapshotDir{snapshotFile: sf, fsys: s, path: name}, nil
	}
	return sf, nil
}

// ReadDir implements fs.ReadDirFS: the stored entries under their
// snapshot names, sorted by them.
func (s *snapshotFS) ReadDir(name string) ([]fs.DirEntry, error) {
	p, err := s.lookup("readdir", name)
	if err != nil {
		return nil, err
	}
	entries, err := fs.ReadDir(s.base, p)
	if err != nil {
		return nil, err
	}
	out := make([]fs.DirEntry, len(entries))
	for i, e := range entries {
		out[i] = e
		if !e.IsDir() {
			if n, renamed := snapshotName(e.Name()); renamed {
				out[i] = renamedEntry{DirEntry: e, name: n}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

// snapshotFile is an open file whose Stat reports its snapshot name.
type snapshotFile struct {
	fs.File
	name string
}

func (f *snapshotFile) Stat() (fs.FileInfo, error) {
	fi, err := f.File.Stat()
	if err != nil || fi.Name() == f.name || f.name == "." {
		return fi, err
	}
	return renamedInfo{FileInfo: fi, name: f.name}, nil
}

// snapshotDir is an open directory listing its snapshot entries.
type snapshotDir struct {
	*snapshotFile
	fsys    *snapshotFS
	path    string
	entries []fs.DirEntry
	read    bool
}

// ReadDir implements fs.ReadDirFile.
func (d *snapshotDir) ReadDir(n int) ([]fs.DirEntry, error) {
	if !d.read {
		entries, err := d.fsys.ReadDir(d.path)
		if err != nil {
			return nil, err
		}
		d.entries, d.read = entries, true
	}
	if n <= 0 {
		out := d.entries
		d.entries = nil
		return out, nil
	}
	if len(d.entries) == 0 {
		return nil, io.EOF
	}
	n = min(n, len(d.entries))
	out := d.entries[:n:n]
	d.entries = d.entries[n:]
	return out, nil
}

type renamedEntry struct {
	fs.DirEntry
	name string
}

func (e renamedEntry) Name() string { return e.name }

func (e renamedEntry) Info() (fs.FileInfo, error) {
	fi, err := e.DirEntry.Info()
	if err != nil {
		return nil, err
	}
	return renamedInfo{FileInfo: fi, name: e.name}, nil
}

type renamedInfo struct {
	fs.FileInfo
	name string
}

func (i renamedInfo) Name() string { return i.name }
