package workspace

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"
)

type file struct {
	path string
	data string
	mode os.FileMode // 0 for a directory when data == "" and path ends in /
}

func writeTree(t *testing.T, dir string, files []file, mtime time.Time) {
	t.Helper()
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.path))
		if strings.HasSuffix(f.path, "/") {
			if err := os.MkdirAll(p, 0o700); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f.data), f.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, f.mode); err != nil {
			t.Fatal(err)
		}
	}
	if !mtime.IsZero() {
		if err := filepath.Walk(dir, func(p string, _ os.FileInfo, _ error) error {
			return os.Chtimes(p, mtime, mtime)
		}); err != nil {
			t.Fatal(err)
		}
	}
}

var sampleTree = []file{
	{"Makefile", "all:\n\tcc -o x main.c\n", 0o644},
	{"src/main.c", "int main(void) { return 0; }\n", 0o600},
	{"src/a-b.c", "int f;\n", 0o664},
	{"src/a/b.h", "#define B 1\n", 0o640},
	{"build.sh", "#!/bin/sh\nmake\n", 0o700},
	{"empty/", "", 0},
	{"src/zero", "", 0o644},
	{strings.Repeat("long/", 30) + "name.txt", "deep\n", 0o644},
}

func TestPackDeterministic(t *testing.T) {
	d1 := t.TempDir()
	writeTree(t, d1, sampleTree, time.Date(2020, 1, 2, 3, 4, 5, 6, time.UTC))
	// Same tree, created in reverse order, other mtimes, other umask-ish modes.
	d2 := t.TempDir()
	rev := make([]file, len(sampleTree))
	for i, f := range sampleTree {
		g := f
		if g.mode&0o100 != 0 {
			g.mode = 0o751 // still executable
		} else if !strings.HasSuffix(g.path, "/") {
			g.mode = 0o666
		}
		rev[len(sampleTree)-1-i] = g
	}
	old := syscall.Umask(0o077)
	writeTree(t, d2, rev, time.Now())
	syscall.Umask(old)

	dg1, tb1, err := PackDir(d1)
	if err != nil {
		t.Fatal(err)
	}
	dg2, tb2, err := PackDir(d2)
	if err != nil {
		t.Fatal(err)
	}
	if dg1 != dg2 || !bytes.Equal(tb1, tb2) {
		t.Fatalf("digests differ: %s vs %s", dg1, dg2)
	}
	if dg1 != Digest(tb1) || !strings.HasPrefix(dg1, "sha256:") || len(dg1) != 71 {
		t.Fatalf("bad digest %q", dg1)
	}
	if _, err := ParseDigest(dg1); err != nil {
		t.Fatal(err)
	}

	// The same tree as an in-memory fs.FS gives the same bytes.
	mfs := fstest.MapFS{}
	for _, f := range sampleTree {
		if strings.HasSuffix(f.path, "/") {
			mfs[strings.TrimSuffix(f.path, "/")] = &fstest.MapFile{Mode: os.ModeDir | 0o700}
			continue
		}
		mfs[f.path] = &fstest.MapFile{Data: []byte(f.data), Mode: f.mode, ModTime: time.Now()}
	}
	dg3, _, err := Pack(mfs)
	if err != nil {
		t.Fatal(err)
	}
	if dg3 != dg1 {
		t.Fatalf("MapFS digest %s != %s", dg3, dg1)
	}

	// Canonical headers, sorted by path.
	tr := tar.NewReader(bytes.NewReader(tb1))
	var prev string
	n := 0
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
		name := strings.TrimSuffix(h.Name, "/")
		if name <= prev {
			t.Errorf("entries not sorted: %q after %q", name, prev)
		}
		prev = name
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" || !h.ModTime.Equal(time.Unix(0, 0)) {
			t.Errorf("%s: non-canonical header %+v", h.Name, h)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if h.Mode != 0o755 {
				t.Errorf("%s: dir mode %o", h.Name, h.Mode)
			}
		case tar.TypeReg:
			want := int64(0o644)
			if name == "build.sh" {
				want = 0o755
			}
			if h.Mode != want {
				t.Errorf("%s: mode %o want %o", h.Name, h.Mode, want)
			}
		default:
			t.Errorf("%s: type %c", h.Name, h.Typeflag)
		}
	}
	if n < len(sampleTree) {
		t.Fatalf("only %d entries", n)
	}

	// A content change changes the digest.
	must(t, os.WriteFile(filepath.Join(d2, "src", "zero"), []byte("x"), 0o644))
	if dg4, _, _ := PackDir(d2); dg4 == dg1 {
		t.Fatal("content change kept digest")
	}
	// So does an exec bit.
	must(t, os.WriteFile(filepath.Join(d2, "src", "zero"), nil, 0o644))
	must(t, os.Chmod(filepath.Join(d2, "src", "main.c"), 0o744))
	if dg4, _, _ := PackDir(d2); dg4 == dg1 {
		t.Fatal("exec bit change kept digest")
	}
}

func TestPackRefusesSpecialFiles(t *testing.T) {
	d := t.TempDir()
	writeTree(t, d, sampleTree[:3], time.Time{})
	if err := os.Symlink("main.c", filepath.Join(d, "src", "link.c")); err != nil {
		t.Fatal(err)
	}
	_, _, err := PackDir(d)
	if err == nil || !strings.Contains(err.Error(), "src/link.c") || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("symlink: err = %v", err)
	}

	d = t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(d, "fifo"), 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	_, _, err = PackDir(d)
	if err == nil || !strings.Contains(err.Error(), "fifo") {
		t.Fatalf("fifo: err = %v", err)
	}

	if _, _, err := PackDir(filepath.Join(d, "missing")); err == nil {
		t.Fatal("missing dir packed")
	}
}

func TestPackEmpty(t *testing.T) {
	dg, tb, err := PackDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dg2, _, _ := Pack(fstest.MapFS{})
	if dg != dg2 || len(tb) != 1024 {
		t.Fatalf("empty: %s %s %d", dg, dg2, len(tb))
	}
}

func TestParseDigest(t *testing.T) {
	for _, bad := range []string{"", "sha256:", "sha256:" + strings.Repeat("A", 64), "md5:" + strings.Repeat("a", 64), "sha256:" + strings.Repeat("a", 63), "sha256:../" + strings.Repeat("a", 61)} {
		if _, err := ParseDigest(bad); err == nil {
			t.Errorf("ParseDigest(%q) accepted", bad)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
