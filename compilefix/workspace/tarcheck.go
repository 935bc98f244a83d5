package workspace

import (
	"archive/tar"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// ErrCorrupt reports a snapshot object that is not a safe canonical tar with
// the digest it is stored under: a digest mismatch, a compression or tar
// error, or an unsafe entry. It is wrapped with the reason.
var ErrCorrupt = errors.New("workspace: corrupt snapshot")

// ErrNotFound reports a digest that the store does not hold.
var ErrNotFound = errors.New("workspace: snapshot not found")

// Limits bound what extracting one snapshot may create.
type Limits struct {
	// MaxEntries is the most entries (files and directories).
	MaxEntries int
	// MaxBytes is the most file content bytes in all.
	MaxBytes int64
	// MaxFileBytes is the largest single file.
	MaxFileBytes int64
}

// DefaultLimits are the cache's limits unless WithLimits says otherwise.
var DefaultLimits = Limits{
	MaxEntries:   500_000,
	MaxBytes:     8 << 30,
	MaxFileBytes: 2 << 30,
}

func (l Limits) withDefaults() Limits {
	if l.MaxEntries <= 0 {
		l.MaxEntries = DefaultLimits.MaxEntries
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultLimits.MaxBytes
	}
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = DefaultLimits.MaxFileBytes
	}
	return l
}

// unlimited is used where only the safety of entries is checked.
var unlimited = Limits{MaxEntries: 1<<62 - 1, MaxBytes: 1<<62 - 1, MaxFileBytes: 1<<62 - 1}

// corrupt wraps ErrCorrupt with a reason.
func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// tarChecker validates the entries of a snapshot tar one header at a time.
// Only directories and regular files with clean relative paths are allowed;
// every entry's parent must be a directory declared earlier in the stream;
// no path may appear twice.
type tarChecker struct {
	lim     Limits
	dirs    map[string]bool // declared directories ("" is the root)
	files   map[string]bool
	entries int
	bytes   int64
}

func newTarChecker(lim Limits) *tarChecker {
	return &tarChecker{lim: lim, dirs: map[string]bool{"": true}, files: map[string]bool{}}
}

// check validates hdr and returns its clean name (no trailing slash).
func (c *tarChecker) check(hdr *tar.Header) (string, error) {
	c.entries++
	if c.entries > c.lim.MaxEntries {
		return "", corrupt("more than %d entries", c.lim.MaxEntries)
	}
	name := hdr.Name
	var isDir bool
	switch hdr.Typeflag {
	case tar.TypeDir:
		isDir = true
		name = strings.TrimSuffix(name, "/")
	case tar.TypeReg, tar.TypeRegA: //nolint:staticcheck // TypeRegA is read from old tars
		if strings.HasSuffix(name, "/") {
			return "", corrupt("%q: regular file with a directory name", hdr.Name)
		}
	case tar.TypeSymlink:
		return "", corrupt("%q: symlink entry", hdr.Name)
	case tar.TypeLink:
		return "", corrupt("%q: hardlink entry", hdr.Name)
	case tar.TypeChar, tar.TypeBlock:
		return "", corrupt("%q: device entry", hdr.Name)
	case tar.TypeFifo:
		return "", corrupt("%q: fifo entry", hdr.Name)
	default:
		return "", corrupt("%q: unsupported entry type %q", hdr.Name, hdr.Typeflag)
	}
	if err := checkName(name); err != nil {
		return "", corrupt("%q: %v", hdr.Name, err)
	}
	if c.dirs[name] || c.files[name] {
		return "", corrupt("%q: duplicate path", name)
	}
	if parent := path.Dir(name); parent != "." && !c.dirs[parent] {
		if c.files[parent] {
			return "", corrupt("%q: parent is a file", name)
		}
		return "", corrupt("%q: parent directory not declared before it", name)
	}
	if isDir {
		c.dirs[name] = true
		return name, nil
	}
	if hdr.Size < 0 || hdr.Size > c.lim.MaxFileBytes {
		return "", corrupt("%q: file of %d bytes exceeds the limit of %d", name, hdr.Size, c.lim.MaxFileBytes)
	}
	c.bytes += hdr.Size
	if c.bytes > c.lim.MaxBytes {
		return "", corrupt("more than %d bytes of files", c.lim.MaxBytes)
	}
	c.files[name] = true
	return name, nil
}

// checkName accepts clean, relative, slash-separated paths with no "." or
// ".." elements.
func checkName(name string) error {
	switch {
	case name == "" || name == ".":
		return errors.New("empty path")
	case strings.HasPrefix(name, "/"):
		return errors.New("absolute path")
	case strings.ContainsRune(name, 0):
		return errors.New("NUL in path")
	}
	for _, el := range strings.Split(name, "/") {
		if el == ".." {
			return errors.New("path escapes the tree (..)")
		}
	}
	if !fs.ValidPath(name) {
		return errors.New("path is not clean")
	}
	return nil
}
