// Package patch applies a candidate's unified diff to a read-only workspace
// tree, in memory, with the tolerance of GNU patch: hunks go at their stated
// line, else at the nearest offset where their context matches, else with up
// to two lines of context fuzz. Paths are confined to the tree: absolute
// paths, "..", symlinks (in the tree or planted by the patch) and protected
// build configuration are refused, each with a short reason fit to show the
// model.
package patch

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
)

// Defaults of Options.
const (
	DefaultMaxBytes     = 1 << 20
	DefaultMaxFiles     = 64
	DefaultMaxFileBytes = 8 << 20
	DefaultFuzz         = 2
)

// Options bound and tune Apply. Zero fields take the defaults.
type Options struct {
	// MaxBytes is the largest diff accepted (default 1 MiB); a larger one is
	// refused before it is parsed.
	MaxBytes int
	// MaxFiles is the most files one diff may touch (default 64).
	MaxFiles int
	// MaxFileBytes is the largest file patched or produced (default 8 MiB).
	MaxFileBytes int64
	// Fuzz is the most context lines a hunk may ignore at each end (default
	// 2; negative for none).
	Fuzz int
	// Protected reports paths (slash-separated, relative to the root) the
	// patch may not touch; nil protects nothing. See DefaultProtected.
	Protected func(path string) bool
}

func (o Options) withDefaults() Options {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxFiles <= 0 {
		o.MaxFiles = DefaultMaxFiles
	}
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = DefaultMaxFileBytes
	}
	switch {
	case o.Fuzz == 0:
		o.Fuzz = DefaultFuzz
	case o.Fuzz < 0:
		o.Fuzz = 0
	}
	return o
}

// Change is the new state of one file.
type Change struct {
	// Path is slash-separated, relative to the tree root.
	Path string
	// New is the file's new content (nil when Deleted).
	New []byte
	// Mode is 0644 or 0755.
	Mode os.FileMode
	// Deleted and Created tell a removed and a new file.
	Deleted, Created bool
	// Offset is the offset in lines of the hunk placed furthest from its
	// stated line; Fuzz the most context lines any hunk ignored.
	Offset, Fuzz int
}

// Result is an applied patch.
type Result struct {
	// Files are the changed files, in the order the diff first names them.
	Files []Change
}

// Paths returns the paths of all changed, created and deleted files,
// sorted.
func (r *Result) Paths() []string {
	out := make([]string, 0, len(r.Files))
	for _, c := range r.Files {
		out = append(out, c.Path)
	}
	sort.Strings(out)
	return out
}

// Deleted returns the paths of deleted files, sorted.
func (r *Result) Deleted() []string {
	var out []string
	for _, c := range r.Files {
		if c.Deleted {
			out = append(out, c.Path)
		}
	}
	sort.Strings(out)
	return out
}

// Write writes every changed and created file under dir (created if
// missing) with its mode, making parent directories as needed; deleted
// files are only listed by Deleted. Writes cannot leave dir.
func (r *Result) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	for _, c := range r.Files {
		if c.Deleted {
			continue
		}
		p := filepath.FromSlash(c.Path)
		if d := filepath.Dir(p); d != "." {
			if err := root.MkdirAll(d, 0o755); err != nil {
				return fmt.Errorf("patch: write %s: %w", c.Path, err)
			}
		}
		if err := root.WriteFile(p, c.New, c.Mode); err != nil {
			return fmt.Errorf("patch: write %s: %w", c.Path, err)
		}
		if err := root.Chmod(p, c.Mode); err != nil {
			return fmt.Errorf("patch: write %s: %w", c.Path, err)
		}
	}
	return nil
}

// Error codes: the class of an *Error.
const (
	CodeEmpty      = "empty"
	CodeTooLarge   = "too_large"
	CodeMalformed  = "malformed"
	CodeBinary     = "binary"
	CodeEscape     = "path_escape"
	CodeProtected  = "protected"
	CodeNotFound   = "not_found"
	CodeExists     = "exists"
	CodeNoMatch    = "no_match"
	CodeMode       = "mode"
	CodeTooMany    = "too_many_files"
	CodeFileTooBig = "file_too_large"
)

// Error is a patch that does not apply. Its message is short and fit to
// show the model, e.g. "hunk 2 of src/a.c does not apply: no match for
// context near line 40".
type Error struct {
	Reason string
	Path   string // "" when the patch as a whole is at fault
	Hunk   int    // 1-based, 0 when no hunk is at fault
	Code   string // one of the Code constants
}

func (e *Error) Error() string {
	switch {
	case e.Hunk > 0 && e.Path != "":
		return fmt.Sprintf("hunk %d of %s does not apply: %s", e.Hunk, e.Path, e.Reason)
	case e.Path != "":
		return e.Path + ": " + e.Reason
	}
	return e.Reason
}

func errf(code, path, format string, args ...any) *Error {
	return &Error{Code: code, Path: path, Reason: fmt.Sprintf(format, args...)}
}

var gitHeader = regexp.MustCompile(`(?m)^diff --git `)

// Apply applies diff to the tree at root, which it only reads, and returns
// the new state of the files it changes. A diff may be wrapped in prose:
// text before the first file header and between files is ignored. Both
// git diffs (names with a/ and b/ prefixes, new, deleted and renamed files,
// modes 100644 and 100755) and plain `diff -u` output are accepted; a plain
// name is taken as is, less a leading a/ or b/, or less its first component
// when only that names an existing file. Any failure is an *Error.
func Apply(root string, diff string, opt Options) (*Result, error) {
	opt = opt.withDefaults()
	if len(diff) > opt.MaxBytes {
		return nil, errf(CodeTooLarge, "", "patch too large: %d bytes (limit %d)", len(diff), opt.MaxBytes)
	}
	if strings.TrimSpace(diff) == "" {
		return nil, errf(CodeEmpty, "", "empty patch")
	}
	diff = stripCRs(diff)
	files, err := parse(diff)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, errf(CodeEmpty, "", "no diff found: expected unified diff headers (--- a/path, +++ b/path, @@ -l,n +l,n @@)")
	}
	if len(files) > opt.MaxFiles {
		return nil, errf(CodeTooMany, "", "patch touches %d files (limit %d)", len(files), opt.MaxFiles)
	}
	t, err := openTree(root, opt)
	if err != nil {
		return nil, err
	}
	defer t.root.Close()
	git := gitHeader.MatchString(diff)
	for _, f := range files {
		if err := t.applyFile(f, git); err != nil {
			return nil, err
		}
	}
	return t.result()
}

// stripCRs removes the CR of every CRLF line when the diff's first file
// header line ends in CRLF, as GNU patch does for a diff that went through
// a CRLF conversion; a git diff of a CRLF file (LF headers, CRLF content)
// is kept as it is.
func stripCRs(diff string) string {
	rest := diff
	for rest != "" {
		line, next, _ := strings.Cut(rest, "\n")
		if strings.HasPrefix(line, "--- ") || strings.HasPrefix(line, "+++ ") || strings.HasPrefix(line, "diff --git ") {
			if strings.HasSuffix(line, "\r") {
				return strings.ReplaceAll(diff, "\r\n", "\n")
			}
			return diff
		}
		rest = next
	}
	return diff
}

// parse runs go-gitdiff, which must not take the process down on hostile
// input.
func parse(diff string) (files []*gitdiff.File, err error) {
	defer func() {
		if r := recover(); r != nil {
			files, err = nil, errf(CodeMalformed, "", "malformed patch: %v", r)
		}
	}()
	files, _, perr := gitdiff.Parse(strings.NewReader(diff))
	if perr != nil {
		msg := strings.TrimPrefix(perr.Error(), "gitdiff: ")
		return nil, errf(CodeMalformed, "", "malformed patch: %s", msg)
	}
	return files, nil
}

// tree is the in-memory state of the files a patch touches.
type tree struct {
	root  *os.Root
	opt   Options
	files map[string]*fileState
	order []string
}

type fileState struct {
	path       string
	origExists bool
	origMode   os.FileMode
	orig       []byte
	exists     bool
	mode       os.FileMode
	content    []byte
	offset     int
	fuzz       int
}

func openTree(root string, opt Options) (*tree, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("patch: open workspace: %w", err)
	}
	return &tree{root: r, opt: opt, files: map[string]*fileState{}}, nil
}

// lstat reports p's type in the tree, refusing symlinks anywhere on its way.
func (t *tree) lstat(p string) (fs.FileInfo, *Error) {
	els := strings.Split(p, "/")
	for i := range els {
		sub := strings.Join(els[:i+1], "/")
		info, err := t.root.Lstat(filepath.FromSlash(sub))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, errf(CodeEscape, p, "cannot read %s: %v", sub, errors.Unwrap(err))
		}
		last := i == len(els)-1
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			if last {
				return nil, errf(CodeEscape, p, "is a symlink in the workspace; patches may not change symlinks")
			}
			return nil, errf(CodeEscape, p, "path goes through a symlink (%s)", sub)
		case !last && !info.IsDir():
			return nil, errf(CodeEscape, p, "%s is not a directory", sub)
		case last:
			return info, nil
		}
	}
	return nil, nil
}

// state returns p's state, loading it from the tree the first time.
func (t *tree) state(p string) (*fileState, *Error) {
	if st := t.files[p]; st != nil {
		return st, nil
	}
	st := &fileState{path: p}
	info, perr := t.lstat(p)
	if perr != nil {
		return nil, perr
	}
	if info != nil {
		if info.IsDir() {
			return nil, errf(CodeEscape, p, "is a directory, not a file")
		}
		if !info.Mode().IsRegular() {
			return nil, errf(CodeEscape, p, "is not a regular file")
		}
		if info.Size() > t.opt.MaxFileBytes {
			return nil, errf(CodeFileTooBig, p, "file too large to patch: %d bytes (limit %d)", info.Size(), t.opt.MaxFileBytes)
		}
		f, err := t.root.Open(filepath.FromSlash(p))
		if err != nil {
			return nil, errf(CodeNotFound, p, "cannot read file: %v", errors.Unwrap(err))
		}
		b, err := io.ReadAll(io.LimitReader(f, t.opt.MaxFileBytes+1))
		f.Close()
		if err != nil {
			return nil, errf(CodeNotFound, p, "cannot read file: %v", err)
		}
		if int64(len(b)) > t.opt.MaxFileBytes {
			return nil, errf(CodeFileTooBig, p, "file too large to patch (limit %d bytes)", t.opt.MaxFileBytes)
		}
		mode := os.FileMode(0o644)
		if info.Mode().Perm()&0o111 != 0 {
			mode = 0o755
		}
		st.origExists, st.exists = true, true
		st.orig, st.content = b, b
		st.origMode, st.mode = mode, mode
	}
	t.files[p] = st
	t.order = append(t.order, p)
	return st, nil
}

// exists reports whether p is a file in the tree or the patch so far.
func (t *tree) exists(p string) bool {
	if st := t.files[p]; st != nil {
		return st.exists
	}
	info, err := t.lstat(p)
	return err == nil && info != nil
}

// checkPath cleans a path named by the patch and refuses protected ones.
func (t *tree) checkPath(p string) (string, *Error) {
	c, err := cleanPath(p)
	if err != nil {
		return "", errf(CodeEscape, p, "%v", err)
	}
	if t.opt.Protected != nil && t.opt.Protected(c) {
		return "", errf(CodeProtected, c, "is build configuration and may not be changed by the patch")
	}
	return c, nil
}

// resolve picks the tree path of a name from a plain (non-git) diff.
func (t *tree) resolve(name string, mustExist bool) string {
	if strings.HasPrefix(name, "a/") || strings.HasPrefix(name, "b/") {
		return name[2:]
	}
	if !mustExist {
		return name
	}
	p0, err := cleanPath(name)
	if err == nil && t.exists(p0) {
		return name
	}
	if p1 := stripComponents(name, 1); p1 != "" {
		if c, err := cleanPath(p1); err == nil && t.exists(c) {
			return p1
		}
	}
	return name
}

func checkMode(name string, m os.FileMode) *Error {
	switch m {
	case 0, 0o100644, 0o100755:
		return nil
	case 0o120000:
		return errf(CodeMode, name, "symlinks (mode 120000) may not be created or changed by a patch")
	case 0o160000:
		return errf(CodeMode, name, "submodules (mode 160000) may not be changed by a patch")
	}
	return errf(CodeMode, name, "unsupported file mode %o (only 100644 and 100755)", m)
}

func permOf(m os.FileMode) os.FileMode {
	if m&0o111 != 0 {
		return 0o755
	}
	return 0o644
}

func (t *tree) applyFile(f *gitdiff.File, git bool) error {
	name := f.NewName
	if name == "" {
		name = f.OldName
	}
	if f.IsBinary {
		return errf(CodeBinary, name, "binary patches are not supported")
	}
	if err := checkMode(name, f.OldMode); err != nil {
		return err
	}
	if err := checkMode(name, f.NewMode); err != nil {
		return err
	}
	allInsert := len(f.TextFragments) > 0
	for _, frag := range f.TextFragments {
		if frag.OldLines != 0 || frag.OldPosition != 0 {
			allInsert = false
		}
	}

	var oldName, newName string
	switch {
	case f.IsRename || f.IsCopy:
		oldName, newName = f.OldName, f.NewName
	case f.IsNew:
		newName = f.NewName
		if !git {
			newName = t.resolve(newName, false)
		}
	case f.IsDelete:
		oldName = f.OldName
		if !git {
			oldName = t.resolve(oldName, true)
		}
	default:
		oldName = name
		if !git {
			oldName = t.resolve(oldName, !allInsert)
		}
		newName = oldName
	}
	var oldPath, newPath string
	var perr *Error
	if oldName != "" {
		if oldPath, perr = t.checkPath(oldName); perr != nil {
			return perr
		}
	}
	if newName != "" {
		if newPath, perr = t.checkPath(newName); perr != nil {
			return perr
		}
	}

	switch {
	case f.IsNew:
		dst, perr := t.state(newPath)
		if perr != nil {
			return perr
		}
		if dst.exists {
			return errf(CodeExists, newPath, "file already exists; the patch creates it")
		}
		return t.patchInto(dst, nil, f, newPath, 0o644)

	case f.IsDelete:
		src, perr := t.state(oldPath)
		if perr != nil {
			return perr
		}
		if !src.exists {
			return errf(CodeNotFound, oldPath, "file not found; the patch deletes it")
		}
		out, places, err := t.hunks(oldPath, src.content, f.TextFragments)
		if err != nil {
			return err
		}
		if len(out) != 0 {
			return errf(CodeNoMatch, oldPath, "the patch deletes the file but does not remove all of its content")
		}
		src.note(places)
		src.exists, src.content = false, nil
		return nil

	case f.IsRename || f.IsCopy:
		src, perr := t.state(oldPath)
		if perr != nil {
			return perr
		}
		if !src.exists {
			return errf(CodeNotFound, oldPath, "file not found; the patch renames or copies it")
		}
		if oldPath == newPath {
			return t.patchInto(src, src.content, f, newPath, src.mode)
		}
		dst, perr := t.state(newPath)
		if perr != nil {
			return perr
		}
		if dst.exists {
			return errf(CodeExists, newPath, "file already exists; the patch renames or copies onto it")
		}
		content, mode := src.content, src.mode
		if f.IsRename {
			src.exists, src.content = false, nil
		}
		return t.patchInto(dst, content, f, newPath, mode)

	default:
		st, perr := t.state(oldPath)
		if perr != nil {
			return perr
		}
		if !st.exists {
			if allInsert { // "@@ -0,0 +1,n @@" onto a missing file creates it
				return t.patchInto(st, nil, f, oldPath, 0o644)
			}
			return errf(CodeNotFound, oldPath, "file not found")
		}
		return t.patchInto(st, st.content, f, oldPath, st.mode)
	}
}

// patchInto applies f's hunks to content and stores the result in dst.
func (t *tree) patchInto(dst *fileState, content []byte, f *gitdiff.File, p string, mode os.FileMode) error {
	out := content
	if len(f.TextFragments) > 0 {
		var places []placement
		var err error
		out, places, err = t.hunks(p, content, f.TextFragments)
		if err != nil {
			return err
		}
		dst.note(places)
	}
	if int64(len(out)) > t.opt.MaxFileBytes {
		return errf(CodeFileTooBig, p, "patched file too large: %d bytes (limit %d)", len(out), t.opt.MaxFileBytes)
	}
	if f.NewMode != 0 {
		mode = permOf(f.NewMode)
	}
	if out == nil {
		out = []byte{}
	}
	dst.exists, dst.content, dst.mode = true, out, mode
	return nil
}

func (t *tree) hunks(p string, content []byte, frags []*gitdiff.TextFragment) ([]byte, []placement, error) {
	out, places, err := applyHunks(content, frags, t.opt.Fuzz)
	if err != nil {
		var he *hunkError
		if errors.As(err, &he) {
			return nil, nil, &Error{Code: CodeNoMatch, Path: p, Hunk: he.hunk, Reason: he.reason}
		}
		return nil, nil, errf(CodeNoMatch, p, "%v", err)
	}
	return out, places, nil
}

func (st *fileState) note(places []placement) {
	for _, pl := range places {
		if abs(pl.offset) > abs(st.offset) {
			st.offset = pl.offset
		}
		st.fuzz = max(st.fuzz, pl.fuzz)
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func (t *tree) result() (*Result, error) {
	r := &Result{}
	live := map[string]bool{}
	for _, p := range t.order {
		st := t.files[p]
		c := Change{Path: p, Offset: st.offset, Fuzz: st.fuzz}
		switch {
		case st.origExists && !st.exists:
			c.Deleted, c.Mode = true, st.origMode
		case !st.origExists && st.exists:
			c.Created, c.New, c.Mode = true, st.content, st.mode
		case st.exists && (!bytes.Equal(st.orig, st.content) || st.mode != st.origMode):
			c.New, c.Mode = st.content, st.mode
		default:
			continue
		}
		if st.exists {
			live[p] = true
		}
		r.Files = append(r.Files, c)
	}
	// A file may not sit where another file of the patch needs a directory.
	for p := range live {
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			if live[d] {
				return nil, errf(CodeExists, p, "%s is a file in the patch; it cannot also be a directory", d)
			}
		}
	}
	return r, nil
}

// ReadFile reads the file rel (slash-separated) of the tree at root with the
// confinement Apply uses: rel must be a clean relative path, no component
// of it may be a symlink, it must be a regular file, and it may not be
// larger than maxBytes (DefaultMaxFileBytes when maxBytes <= 0). Failures
// are an *Error.
func ReadFile(root, rel string, maxBytes int64) ([]byte, error) {
	opt := Options{MaxFileBytes: maxBytes}.withDefaults()
	c, err := cleanPath(rel)
	if err != nil {
		return nil, errf(CodeEscape, rel, "%v", err)
	}
	t, terr := openTree(root, opt)
	if terr != nil {
		return nil, terr
	}
	defer t.root.Close()
	st, perr := t.state(c)
	if perr != nil {
		return nil, perr
	}
	if !st.exists {
		return nil, errf(CodeNotFound, c, "file not found")
	}
	return st.content, nil
}
