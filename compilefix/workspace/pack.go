// Package workspace holds repository snapshots: a canonical tar format whose
// sha256 is the snapshot's digest (Pack, PackDir), a content-addressed store
// of compressed snapshots on a gocloud.dev blob bucket (Store), and a
// per-worker cache of materialised, read-only trees (Cache).
package workspace

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
	"time"
)

// DigestPrefix starts every digest: "sha256:" followed by 64 lowercase hex
// digits.
const DigestPrefix = "sha256:"

// epoch is the modification time of every canonical entry.
var epoch = time.Unix(0, 0)

// Digest returns the digest of a tarball: "sha256:" + hex(sha256(b)).
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return DigestPrefix + hex.EncodeToString(sum[:])
}

// ParseDigest checks that d is "sha256:" followed by 64 lowercase hex digits
// and returns the hex part.
func ParseDigest(d string) (string, error) {
	h, ok := strings.CutPrefix(d, DigestPrefix)
	if !ok || len(h) != sha256.Size*2 {
		return "", fmt.Errorf("workspace: invalid digest %q: want sha256:<64 hex digits>", d)
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return "", fmt.Errorf("workspace: invalid digest %q: want lowercase hex", d)
		}
	}
	return h, nil
}

type packEntry struct {
	name string // slash path relative to the root, no trailing slash
	dir  bool
	exec bool
}

// Pack writes the tree fsys as a canonical tar and returns its digest and
// bytes. Entries are sorted by path (byte order); only directories and
// regular files are allowed (a symlink, device, socket or pipe is an error
// naming its path); directories get mode 0755, files 0755 when any execute
// bit is set and 0644 otherwise; owners are 0 with empty names and every
// mtime is the Unix epoch. The header format is the first of USTAR and PAX
// that can encode the entry, so the same tree always gives the same bytes.
func Pack(fsys fs.FS) (digest string, tarball []byte, err error) {
	var entries []packEntry
	err = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("workspace: pack %s: %w", p, err)
		}
		if p == "." {
			if !d.IsDir() {
				return fmt.Errorf("workspace: pack: root is not a directory")
			}
			return nil
		}
		t := d.Type()
		switch {
		case t.IsDir():
			entries = append(entries, packEntry{name: p, dir: true})
		case t.IsRegular():
			info, err := d.Info()
			if err != nil {
				return fmt.Errorf("workspace: pack %s: %w", p, err)
			}
			if !info.Mode().IsRegular() {
				return fmt.Errorf("workspace: pack %s: not a regular file (%s)", p, describeMode(info.Mode()))
			}
			entries = append(entries, packEntry{name: p, exec: info.Mode().Perm()&0o111 != 0})
		default:
			return fmt.Errorf("workspace: pack %s: unsupported file type %s (only directories and regular files)", p, describeMode(t))
		}
		return nil
	})
	if err != nil {
		return "", nil, err
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{
			Name:    e.name,
			ModTime: epoch,
			Format:  tar.FormatUnknown,
		}
		var data []byte
		if e.dir {
			hdr.Typeflag = tar.TypeDir
			hdr.Name += "/"
			hdr.Mode = 0o755
		} else {
			data, err = fs.ReadFile(fsys, e.name)
			if err != nil {
				return "", nil, fmt.Errorf("workspace: pack %s: %w", e.name, err)
			}
			hdr.Typeflag = tar.TypeReg
			hdr.Mode = 0o644
			if e.exec {
				hdr.Mode = 0o755
			}
			hdr.Size = int64(len(data))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return "", nil, fmt.Errorf("workspace: pack %s: %w", e.name, err)
		}
		if len(data) > 0 {
			if _, err := tw.Write(data); err != nil {
				return "", nil, fmt.Errorf("workspace: pack %s: %w", e.name, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return "", nil, fmt.Errorf("workspace: pack: %w", err)
	}
	tarball = buf.Bytes()
	return Digest(tarball), tarball, nil
}

// PackDir packs the directory dir (see Pack). The walk cannot leave dir:
// a symlink anywhere below it is refused, never followed.
func PackDir(dir string) (string, []byte, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", nil, fmt.Errorf("workspace: pack %s: %w", dir, err)
	}
	defer root.Close()
	d, b, err := Pack(root.FS())
	if err != nil {
		return "", nil, fmt.Errorf("%w (in %s)", err, dir)
	}
	return d, b, nil
}

func describeMode(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m&fs.ModeDevice != 0 && m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "device"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeIrregular != 0:
		return "irregular file"
	}
	return m.Type().String()
}
