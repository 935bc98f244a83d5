// Package patch is the one place unified diffs are read, applied and
// written.
//
// Apply applies a candidate's diff to a read-only workspace tree, in
// memory, with the tolerance of GNU patch: hunks go at their stated line,
// else at the nearest offset where their context matches, else with up to
// two lines of context fuzz. Paths are confined to the tree: absolute
// paths, "..", symlinks (in the tree or planted by the patch) and protected
// build configuration (BuildConfig, DefaultProtected) are refused, each
// with a short reason fit to show the model. ApplyFile places one file's
// hunks the same way on content in memory; Options.IgnoreSpace and
// Options.AnyOrder add leniency for diffs as models write them, and
// ParseLenient reads their miscounted hunks. Write and Diff write diffs as
// git does (go-udiff's hunks); Similarity compares two.
package patch

import (
	"fmt"
	"os"
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
	// IgnoreSpace matches a hunk's lines with the file's with runs of white
	// space collapsed and the ends trimmed (GNU patch -l); context lines
	// keep the file's text.
	IgnoreSpace bool
	// AnyOrder applies a file's hunks in the order of their stated
	// positions rather than as written (a model's diff may list them out of
	// order; GNU patch would refuse).
	AnyOrder bool
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

// ApplyFile applies one file diff's hunks to content, in memory, placing
// them as Apply does (with opt's Fuzz, IgnoreSpace and AnyOrder; paths and
// sizes are the caller's to check). A hunk that does not apply is an
// *Error (CodeNoMatch), a binary diff one with CodeBinary.
func ApplyFile(content []byte, f *gitdiff.File, opt Options) ([]byte, error) {
	opt = opt.withDefaults()
	if f.IsBinary {
		return nil, errf(CodeBinary, FilePath(f), "binary patches are not supported")
	}
	if len(f.TextFragments) == 0 {
		return content, nil
	}
	out, _, err := applyHunks(content, f.TextFragments, opt)
	if err != nil {
		return nil, noMatch(FilePath(f), err)
	}
	return out, nil
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
