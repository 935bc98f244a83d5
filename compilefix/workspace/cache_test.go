package workspace

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func newTestCache(t *testing.T, maxBytes int64, opts ...CacheOption) (*Cache, *Store) {
	t.Helper()
	s, err := OpenStore(context.Background(), filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	c, err := NewCache(filepath.Join(t.TempDir(), "cache"), maxBytes, s, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		_ = removeTree(c.dir) // read-only trees defeat t.TempDir's cleanup as non-root
	})
	return c, s
}

// leftovers lists what the cache holds on disk besides known trees.
func leftovers(t *testing.T, c *Cache) []string {
	t.Helper()
	var out []string
	for _, d := range []string{c.tmp, c.trees} {
		ents, err := os.ReadDir(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			out = append(out, filepath.Join(filepath.Base(d), e.Name()))
		}
	}
	return out
}

func TestCacheGet(t *testing.T) {
	ctx := context.Background()
	c, s := newTestCache(t, 1<<20)
	_, dg, _ := packSample(t)
	src, _, _ := packSample(t)
	if _, err := s.PutDir(ctx, src); err != nil {
		t.Fatal(err)
	}
	tr, err := c.Get(ctx, dg)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Release()
	if tr.Digest() != dg {
		t.Fatal(tr.Digest())
	}
	var want int64
	for _, f := range sampleTree {
		p := filepath.Join(tr.Dir(), filepath.FromSlash(f.path))
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(f.path, "/") {
			if info.Mode().Perm() != 0o555 || !info.IsDir() {
				t.Errorf("%s: %v", f.path, info.Mode())
			}
			continue
		}
		want += int64(len(f.data))
		b, _ := os.ReadFile(p)
		if string(b) != f.data {
			t.Errorf("%s: %q", f.path, b)
		}
		m := os.FileMode(0o444)
		if f.mode&0o111 != 0 {
			m = 0o555
		}
		if info.Mode().Perm() != m {
			t.Errorf("%s: mode %v want %v", f.path, info.Mode(), m)
		}
	}
	if info, _ := os.Stat(tr.Dir()); info.Mode().Perm() != 0o555 {
		t.Errorf("root mode %v", info.Mode())
	}
	if tr.Size() != want {
		t.Errorf("Size = %d want %d", tr.Size(), want)
	}
	// The materialised tree packs back to the same digest.
	if d2, _, err := PackDir(tr.Dir()); err != nil || d2 != dg {
		t.Fatalf("repack = %s, %v", d2, err)
	}
	// A second Get reuses it.
	tr2, err := c.Get(ctx, dg)
	if err != nil || tr2.Dir() != tr.Dir() || c.extractions != 1 {
		t.Fatalf("second Get: %v %d", err, c.extractions)
	}
	tr2.Release()
	tr2.Release() // idempotent

	if _, err := c.Get(ctx, Digest([]byte("missing"))); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing: %v", err)
	}
	if _, err := c.Get(ctx, "sha256:zz"); err == nil {
		t.Fatal("bad digest accepted")
	}
}

func TestCacheLocksDir(t *testing.T) {
	c, s := newTestCache(t, 100)
	if _, err := NewCache(c.dir, 100, s); err == nil {
		t.Fatal("second cache on one dir")
	}
}

func TestCacheCorruptObject(t *testing.T) {
	ctx := context.Background()
	c, s := newTestCache(t, 1<<20)
	src, dg, _ := packSample(t)
	if _, err := s.PutDir(ctx, src); err != nil {
		t.Fatal(err)
	}
	h, _ := ParseDigest(dg)
	obj := filepath.Join(s.String(), "sha256", h+".tar.zst")
	b, err := os.ReadFile(obj)
	if err != nil {
		t.Fatal(err)
	}
	for _, off := range []int{len(b) / 2, len(b) - 2, 5} {
		bad := append([]byte(nil), b...)
		bad[off] ^= 0x40
		if err := os.WriteFile(obj, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		tr, err := c.Get(ctx, dg)
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("flip at %d: tree %v err %v", off, tr, err)
		}
		if l := leftovers(t, c); len(l) != 0 {
			t.Fatalf("left behind: %v", l)
		}
	}
	// Truncated object.
	if err := os.WriteFile(obj, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, dg); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("truncated: %v", err)
	}

	// A valid tar stored under another digest.
	other := rawTar(t, reg("a.txt", "hello\n"))
	putRaw(t, s, dg, other)
	_, err = c.Get(ctx, dg)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "digest") {
		t.Fatalf("digest mismatch: %v", err)
	}
	if l := leftovers(t, c); len(l) != 0 {
		t.Fatalf("left behind: %v", l)
	}
	// Garbage that is not zstd.
	key, _ := Key(dg)
	if err := s.bucket.WriteAll(ctx, key, []byte("garbage"), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, dg); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("garbage: %v", err)
	}
}

func TestCacheHostileTars(t *testing.T) {
	ctx := context.Background()
	c, s := newTestCache(t, 1<<20, WithLimits(Limits{MaxEntries: 50, MaxBytes: 1000, MaxFileBytes: 600}))
	many := []tent{dir("d/")}
	for i := 0; i < 60; i++ {
		many = append(many, reg(fmt.Sprintf("d/f%03d", i), "x"))
	}
	cases := map[string][]tent{
		"dotdot":        {reg("../evil", "x")},
		"inner dotdot":  {dir("a/"), reg("a/../../evil", "x")},
		"absolute":      {reg("/etc/passwd", "x")},
		"symlink":       {tent{hdr: tar.Header{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "/etc"}}},
		"hardlink":      {reg("a", "x"), tent{hdr: tar.Header{Name: "b", Typeflag: tar.TypeLink, Linkname: "a"}}},
		"chardev":       {tent{hdr: tar.Header{Name: "null", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3}}},
		"fifo":          {tent{hdr: tar.Header{Name: "p", Typeflag: tar.TypeFifo}}},
		"duplicate":     {reg("a", "x"), reg("a", "y")},
		"dup dir":       {dir("a/"), dir("a/")},
		"file then dir": {reg("a", "x"), dir("a/")},
		"under file":    {reg("a", "x"), reg("a/b", "y")},
		"no parent":     {reg("x/y", "x")},
		"entry count":   many,
		"big file":      {reg("big", strings.Repeat("x", 700))},
		"total bytes":   {reg("b1", strings.Repeat("x", 500)), reg("b2", strings.Repeat("x", 501))},
		"dot":           {reg("./a", "x")},
	}
	for name, ents := range cases {
		t.Run(name, func(t *testing.T) {
			b := rawTar(t, ents...)
			dg := Digest(b)
			putRaw(t, s, dg, b)
			tr, err := c.Get(ctx, dg)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("tree %v, err %v", tr, err)
			}
			t.Log(err)
			if l := leftovers(t, c); len(l) != 0 {
				t.Fatalf("left behind: %v", l)
			}
		})
	}
	if _, err := os.Lstat(filepath.Join(filepath.Dir(c.dir), "evil")); err == nil {
		t.Fatal("escaped")
	}
}

// putTree stores a tree of one file of size bytes and returns its digest.
func putTree(t *testing.T, s *Store, name string, size int) string {
	t.Helper()
	b := rawTar(t, reg(name, strings.Repeat("z", size)))
	dg := Digest(b)
	if err := s.Put(context.Background(), dg, b); err != nil {
		t.Fatal(err)
	}
	return dg
}

func TestCacheEvictsLRU(t *testing.T) {
	ctx := context.Background()
	c, s := newTestCache(t, 250)
	a, b, d, e := putTree(t, s, "a", 100), putTree(t, s, "b", 100), putTree(t, s, "d", 100), putTree(t, s, "e", 100)
	get := func(dg string) *Tree {
		t.Helper()
		tr, err := c.Get(ctx, dg)
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	exists := func(tr *Tree) bool { _, err := os.Stat(tr.Dir()); return err == nil }

	ta := get(a)
	ta.Release()
	tb := get(b) // held
	ta = get(a)  // a is now most recent
	ta.Release()
	td := get(d) // 300 > 250: b held, so nothing unheld but a... a is evicted? no: LRU unheld is a
	if !exists(tb) || !exists(td) {
		t.Fatal("held tree evicted")
	}
	if exists(ta) {
		t.Fatal("unheld LRU tree kept past the bound")
	}
	tb.Release() // 200 <= 250, b stays
	if !exists(tb) {
		t.Fatal("evicted under the bound")
	}
	// b (released, least recent) goes when e arrives; d is held.
	te := get(e)
	if exists(tb) || !exists(td) || !exists(te) {
		t.Fatalf("b %v d %v e %v", exists(tb), exists(td), exists(te))
	}
	// A tree above the bound on its own is kept while held.
	big := putTree(t, s, "big", 1000)
	tbig := get(big)
	if !exists(tbig) || !exists(td) || !exists(te) {
		t.Fatal("held trees evicted")
	}
	c.mu.Lock()
	total := c.total
	c.mu.Unlock()
	if total != 1200 {
		t.Fatalf("total %d", total)
	}
	tbig.Release()
	if exists(tbig) {
		t.Fatal("oversized tree kept after release")
	}
	td.Release()
	te.Release()
	c.mu.Lock()
	total = c.total
	c.mu.Unlock()
	if total != 200 {
		t.Fatalf("total %d", total)
	}
	// Re-getting an evicted tree extracts it again.
	n := c.extractions
	tb = get(b)
	if c.extractions != n+1 || !exists(tb) {
		t.Fatal("re-extract")
	}
	tb.Release()
	if l, _ := os.ReadDir(c.tmp); len(l) != 0 {
		t.Fatalf("tmp not cleaned: %v", l)
	}
}

func TestCacheConcurrentGetExtractsOnce(t *testing.T) {
	ctx := context.Background()
	c, s := newTestCache(t, 1<<20)
	src, dg, _ := packSample(t)
	if _, err := s.PutDir(ctx, src); err != nil {
		t.Fatal(err)
	}
	const n = 16
	trees := make([]*Tree, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr, err := c.Get(ctx, dg)
			if err != nil {
				errs <- err
				return
			}
			trees[i] = tr
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if c.extractions != 1 {
		t.Fatalf("%d extractions", c.extractions)
	}
	for _, tr := range trees {
		if tr.Dir() != trees[0].Dir() {
			t.Fatal("different dirs")
		}
	}
	c.mu.Lock()
	e := c.entries[trees[0].e.hex]
	refs, waiting := e.refs, len(c.waiting)
	c.mu.Unlock()
	if refs != n || waiting != 0 {
		t.Fatalf("refs %d waiting %d", refs, waiting)
	}
	for _, tr := range trees {
		tr.Release()
	}
	if e.refs != 0 {
		t.Fatalf("refs %d after release", e.refs)
	}
}

func TestCacheChurnRace(t *testing.T) {
	// Many goroutines getting and releasing a few trees under a tight bound.
	ctx := context.Background()
	c, s := newTestCache(t, 150)
	var dgs []string
	for i := range 4 {
		dgs = append(dgs, putTree(t, s, fmt.Sprintf("f%d", i), 100))
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 30 {
				tr, err := c.Get(ctx, dgs[(g+i)%len(dgs)])
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := os.Stat(filepath.Join(tr.Dir(), fmt.Sprintf("f%d", (g+i)%len(dgs)))); err != nil {
					t.Error("held tree missing:", err)
				}
				tr.Release()
			}
		}()
	}
	wg.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.entries {
		if e.refs != 0 || len(c.waiting) != 0 {
			t.Fatalf("leaked ref: %+v", e)
		}
	}
	if c.total > 150 {
		t.Fatalf("total %d over bound with nothing held", c.total)
	}
}

func TestNewCacheClearsOldTrees(t *testing.T) {
	ctx := context.Background()
	c, s := newTestCache(t, 1<<20)
	dg := putTree(t, s, "a", 10)
	tr, err := c.Get(ctx, dg)
	if err != nil {
		t.Fatal(err)
	}
	dir := tr.Dir()
	c.Close()
	c2, err := NewCache(c.dir, 1<<20, s)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := os.Stat(dir); err == nil {
		t.Fatal("old tree kept")
	}
	tr2, err := c2.Get(ctx, dg)
	if err != nil {
		t.Fatal(err)
	}
	tr2.Release()
}
