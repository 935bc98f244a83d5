package workspace

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestOpenCache: a cache over a store, in a temporary directory that close
// removes, serving what the store holds.
func TestOpenCache(t *testing.T) {
	ctx := context.Background()
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "a.c"), []byte("int a;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	storeDir := t.TempDir()
	s, err := OpenStore(ctx, storeDir)
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.PutDir(ctx, src)
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	c, closeCache, err := OpenCache(ctx, storeDir, "", 1<<20, "murphy-opencache-test-")
	if err != nil {
		t.Fatal(err)
	}
	tree, err := c.Get(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(tree.Dir(), "a.c")); err != nil || string(b) != "int a;\n" {
		t.Fatalf("tree: %q %v", b, err)
	}
	root := filepath.Dir(filepath.Dir(tree.Dir()))
	tree.Release()
	closeCache()
	if _, err := os.Stat(tree.Dir()); !os.IsNotExist(err) {
		t.Fatalf("cache directory %s left after close: %v", root, err)
	}
	if _, _, err := OpenCache(ctx, "", "", 1, "x"); err == nil {
		t.Fatal("opened a cache without a store")
	}
}
