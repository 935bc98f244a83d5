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
	"strings"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
)

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

// applyFile applies one file diff to the tree's state.
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
	oldPath, newPath, perr := t.paths(f, name, git, allInsert)
	if perr != nil {
		return perr
	}
	switch {
	case f.IsNew:
		return t.create(f, newPath)
	case f.IsDelete:
		return t.delete(f, oldPath)
	case f.IsRename || f.IsCopy:
		return t.rename(f, oldPath, newPath)
	}
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

// paths are the checked tree paths a file diff reads and writes ("" for
// none): a plain diff's names are resolved against the tree.
func (t *tree) paths(f *gitdiff.File, name string, git, allInsert bool) (oldPath, newPath string, perr *Error) {
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
	if oldName != "" {
		if oldPath, perr = t.checkPath(oldName); perr != nil {
			return "", "", perr
		}
	}
	if newName != "" {
		if newPath, perr = t.checkPath(newName); perr != nil {
			return "", "", perr
		}
	}
	return oldPath, newPath, nil
}

func (t *tree) create(f *gitdiff.File, newPath string) error {
	dst, perr := t.state(newPath)
	if perr != nil {
		return perr
	}
	if dst.exists {
		return errf(CodeExists, newPath, "file already exists; the patch creates it")
	}
	return t.patchInto(dst, nil, f, newPath, 0o644)
}

func (t *tree) delete(f *gitdiff.File, oldPath string) error {
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
}

func (t *tree) rename(f *gitdiff.File, oldPath, newPath string) error {
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
	out, places, err := applyHunks(content, frags, t.opt)
	if err != nil {
		return nil, nil, noMatch(p, err)
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
