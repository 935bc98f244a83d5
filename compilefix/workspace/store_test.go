package workspace

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
)

func packSample(t *testing.T) (string, string, []byte) {
	t.Helper()
	d := t.TempDir()
	writeTree(t, d, sampleTree, time.Time{})
	dg, tb, err := PackDir(d)
	if err != nil {
		t.Fatal(err)
	}
	return d, dg, tb
}

func TestStoreRoundTrip(t *testing.T) {
	ctx := context.Background()
	src, dg, tb := packSample(t)
	base := t.TempDir()
	for _, url := range []string{
		"mem://",
		"file://" + filepath.Join(base, "fileurl", "nested"),
		filepath.Join(base, "plain"),
	} {
		t.Run(url, func(t *testing.T) {
			s, err := OpenStore(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if ok, err := s.Has(ctx, dg); err != nil || ok {
				t.Fatalf("Has before put = %v, %v", ok, err)
			}
			if _, err := s.Open(ctx, dg); !errors.Is(err, ErrNotFound) {
				t.Fatalf("Open missing: %v", err)
			}
			got, err := s.PutDir(ctx, src)
			if err != nil || got != dg {
				t.Fatalf("PutDir = %s, %v", got, err)
			}
			if err := s.Put(ctx, dg, tb); err != nil { // idempotent
				t.Fatal(err)
			}
			if ok, err := s.Has(ctx, dg); err != nil || !ok {
				t.Fatalf("Has = %v, %v", ok, err)
			}
			rc, err := s.Open(ctx, dg)
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(rc)
			rc.Close()
			if err != nil || !bytes.Equal(b, tb) {
				t.Fatalf("Open read %d bytes, %v", len(b), err)
			}
			// Wrong digest for the bytes.
			other := Digest([]byte("x"))
			if err := s.Put(ctx, other, tb); err == nil {
				t.Fatal("Put accepted mismatched digest")
			}
			if err := s.Put(ctx, "sha256:nothex", tb); err == nil {
				t.Fatal("Put accepted bad digest")
			}
			if ok, _ := s.Has(ctx, other); ok {
				t.Fatal("mismatched put stored")
			}
			if !strings.Contains(url, "mem://") {
				dir := strings.TrimPrefix(url, "file://")
				h, _ := ParseDigest(dg)
				if _, err := os.Stat(filepath.Join(dir, "sha256", h+".tar.zst")); err != nil {
					t.Fatal(err)
				}
				var names []string
				must(t, filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
					if err == nil && !info.IsDir() {
						names = append(names, p)
					}
					return nil
				}))
				if len(names) != 1 {
					t.Fatalf("store files: %v", names)
				}
			}
		})
	}
}

func TestOpenStoreErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := OpenStore(ctx, ""); err == nil {
		t.Fatal("empty url")
	}
	if _, err := OpenStore(ctx, "nosuch://x"); err == nil || !strings.Contains(err.Error(), "no nosuch:// driver") {
		t.Fatalf("unknown scheme: %v", err)
	}
}

// hostile tar builders

type tent struct {
	hdr  tar.Header
	data string
}

func rawTar(t *testing.T, ents ...tent) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range ents {
		h := e.hdr
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.data))
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if e.data != "" {
			if _, err := tw.Write([]byte(e.data)); err != nil {
				t.Fatal(err)
			}
		}
	}
	tw.Close()
	return buf.Bytes()
}

// putRaw stores b under key of digest without any check.
func putRaw(t *testing.T, s *Store, digest string, b []byte) {
	t.Helper()
	key, err := Key(digest)
	if err != nil {
		t.Fatal(err)
	}
	enc, _ := zstd.NewWriter(nil)
	z := enc.EncodeAll(b, nil)
	if err := s.bucket.WriteAll(context.Background(), key, z, nil); err != nil {
		t.Fatal(err)
	}
}

func reg(name, data string) tent {
	return tent{hdr: tar.Header{Name: name, Typeflag: tar.TypeReg}, data: data}
}
func dir(name string) tent {
	return tent{hdr: tar.Header{Name: name, Typeflag: tar.TypeDir, Mode: 0o755}}
}

func TestPutRefusesHostileTar(t *testing.T) {
	ctx := context.Background()
	s, err := OpenStore(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, b := range [][]byte{
		rawTar(t, reg("../evil", "x")),
		rawTar(t, tent{hdr: tar.Header{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "/etc"}}),
		[]byte("not a tar at all, but long enough to be read as a header block........"),
	} {
		if err := s.Put(ctx, Digest(b), b); err == nil {
			t.Errorf("Put accepted hostile tar")
		}
	}
}
