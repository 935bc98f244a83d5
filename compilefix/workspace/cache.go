package workspace

import (
	"archive/tar"
	"container/list"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sync/singleflight"
)

// maxTrailer bounds the bytes accepted after a tar's end-of-archive marker
// (block padding written by other tar tools).
const maxTrailer = 1 << 20

// Cache materialises snapshots from a Store as read-only directory trees
// under one directory, once per digest, and evicts least recently used trees
// that nobody holds when their total size passes its bound. It is meant for
// one worker process: NewCache takes an exclusive lock on the directory. A
// Cache is safe for concurrent use.
type Cache struct {
	dir      string // root of the cache
	trees    string // dir/trees: materialised trees, one per hex digest
	tmp      string // dir/tmp: extractions in progress and evicted trees
	maxBytes int64
	store    *Store
	lim      Limits
	lock     *os.File

	flight singleflight.Group

	mu      sync.Mutex
	entries map[string]*entry // by hex digest
	waiting map[string]int    // callers inside a flight, by hex digest
	lru     *list.List        // of *entry, most recently used first
	total   int64             // bytes of all entries

	extractions int // number of completed extractions (tests)
}

type entry struct {
	hex    string
	digest string
	dir    string
	size   int64
	refs   int
	elem   *list.Element
	gone   bool
}

// CacheOption configures a Cache.
type CacheOption func(*Cache)

// WithLimits sets the limits of one extraction (zero fields keep the
// defaults of DefaultLimits).
func WithLimits(l Limits) CacheOption {
	return func(c *Cache) { c.lim = l.withDefaults() }
}

// NewCache opens a cache in dir (created if missing) that keeps at most
// maxBytes of unheld trees (file content bytes; trees in use are never
// evicted, so the total may exceed it while they are held). Trees left by an
// earlier process are removed, not reused.
func NewCache(dir string, maxBytes int64, store *Store, opts ...CacheOption) (*Cache, error) {
	if store == nil {
		return nil, errors.New("workspace: new cache: nil store")
	}
	if maxBytes <= 0 {
		return nil, fmt.Errorf("workspace: new cache: maxBytes %d must be positive", maxBytes)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace: new cache: %w", err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("workspace: new cache: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(abs, ".lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("workspace: new cache: %w", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		return nil, fmt.Errorf("workspace: new cache: %s is in use by another process: %w", abs, err)
	}
	c := &Cache{
		dir:      abs,
		trees:    filepath.Join(abs, "trees"),
		tmp:      filepath.Join(abs, "tmp"),
		maxBytes: maxBytes,
		store:    store,
		lim:      DefaultLimits,
		lock:     lock,
		entries:  map[string]*entry{},
		waiting:  map[string]int{},
		lru:      list.New(),
	}
	for _, o := range opts {
		o(c)
	}
	for _, d := range []string{c.trees, c.tmp} {
		if err := removeTree(d); err != nil {
			lock.Close()
			return nil, fmt.Errorf("workspace: new cache: clearing %s: %w", d, err)
		}
		if err := os.Mkdir(d, 0o755); err != nil {
			lock.Close()
			return nil, fmt.Errorf("workspace: new cache: %w", err)
		}
	}
	return c, nil
}

// Close releases the cache's lock on its directory. Trees stay on disk until
// the next NewCache on the directory removes them.
func (c *Cache) Close() error {
	return c.lock.Close()
}

// Tree is a materialised snapshot held by its caller until Release. Its
// directory is read-only and must not be modified.
type Tree struct {
	c    *Cache
	e    *entry
	once sync.Once
}

// Dir returns the tree's root directory.
func (t *Tree) Dir() string { return t.e.dir }

// Digest returns the tree's digest.
func (t *Tree) Digest() string { return t.e.digest }

// Size returns the bytes of file content in the tree.
func (t *Tree) Size() int64 { return t.e.size }

// Release drops the caller's hold on the tree; after it the directory may be
// removed at any time. Release is idempotent.
func (t *Tree) Release() {
	t.once.Do(func() {
		c := t.c
		var doomed []string
		c.mu.Lock()
		t.e.refs--
		doomed = c.evictLocked()
		c.mu.Unlock()
		c.removeAll(doomed)
	})
}

// Get returns the materialised tree of digest, extracting it from the store
// unless the cache already has it; concurrent Gets of one digest extract it
// once (the first caller's ctx governs the shared extraction). An object
// that fails verification is an error wrapping ErrCorrupt,
// a missing one ErrNotFound; either way no tree is left behind.
func (c *Cache) Get(ctx context.Context, digest string) (*Tree, error) {
	hexd, err := ParseDigest(digest)
	if err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		c.mu.Lock()
		if e := c.entries[hexd]; e != nil {
			c.holdLocked(e)
			c.mu.Unlock()
			return &Tree{c: c, e: e}, nil
		}
		if attempt == 3 {
			c.mu.Unlock()
			return nil, fmt.Errorf("workspace: get %s: tree evicted before it could be held", digest)
		}
		// While waiting, the entry the flight makes cannot be evicted.
		c.waiting[hexd]++
		c.mu.Unlock()
		v, err, _ := c.flight.Do(hexd, func() (any, error) {
			return c.materialise(ctx, digest, hexd)
		})
		c.mu.Lock()
		if c.waiting[hexd]--; c.waiting[hexd] == 0 {
			delete(c.waiting, hexd)
		}
		if err != nil {
			doomed := c.evictLocked()
			c.mu.Unlock()
			c.removeAll(doomed)
			return nil, err
		}
		e := v.(*entry)
		if !e.gone {
			c.holdLocked(e)
			c.mu.Unlock()
			return &Tree{c: c, e: e}, nil
		}
		c.mu.Unlock()
		// Not expected (waiting protects it), but safe: try again.
	}
}

// holdLocked takes a reference on e.
func (c *Cache) holdLocked(e *entry) {
	e.refs++
	c.lru.MoveToFront(e.elem)
}

// materialise extracts digest and records it as an entry (protected from
// eviction by its waiting callers).
func (c *Cache) materialise(ctx context.Context, digest, hexd string) (*entry, error) {
	c.mu.Lock()
	if e := c.entries[hexd]; e != nil {
		// Made by a flight that ended after our caller looked.
		c.mu.Unlock()
		return e, nil
	}
	c.mu.Unlock()

	tmp, size, err := c.extract(ctx, digest)
	if err != nil {
		return nil, err
	}
	final := filepath.Join(c.trees, hexd)
	_ = removeTree(final) // left by an eviction that could not move it aside
	if err := os.Rename(tmp, final); err != nil {
		c.removeAll([]string{tmp})
		return nil, fmt.Errorf("workspace: get %s: %w", digest, err)
	}
	if err := os.Chmod(final, 0o555); err != nil {
		c.removeAll([]string{final})
		return nil, fmt.Errorf("workspace: get %s: %w", digest, err)
	}
	e := &entry{hex: hexd, digest: digest, dir: final, size: size}
	c.mu.Lock()
	e.elem = c.lru.PushFront(e)
	c.entries[hexd] = e
	c.total += size
	c.extractions++
	doomed := c.evictLocked()
	c.mu.Unlock()
	c.removeAll(doomed)
	return e, nil
}

// evictLocked drops least recently used unheld entries while the total is
// over the bound; it moves their directories aside and returns them for
// removal outside the lock.
func (c *Cache) evictLocked() []string {
	var doomed []string
	for el := c.lru.Back(); el != nil && c.total > c.maxBytes; {
		e := el.Value.(*entry)
		prev := el.Prev()
		if e.refs == 0 && c.waiting[e.hex] == 0 {
			c.lru.Remove(el)
			delete(c.entries, e.hex)
			c.total -= e.size
			e.gone = true
			aside, err := os.MkdirTemp(c.tmp, "evict-")
			if err == nil {
				// A directory moved to another parent must be writable.
				if err = os.Chmod(e.dir, 0o755); err == nil {
					err = os.Rename(e.dir, filepath.Join(aside, "t"))
				}
				doomed = append(doomed, aside)
			}
			if err != nil {
				// Remove in place; nothing else can find it any more.
				doomed = append(doomed, e.dir)
			}
		}
		el = prev
	}
	return doomed
}

func (c *Cache) removeAll(dirs []string) {
	for _, d := range dirs {
		// Best effort: what is left in tmp goes at the next NewCache.
		_ = removeTree(d)
	}
}

// removeTree removes dir and everything below it, making read-only
// directories writable first.
func removeTree(dir string) error {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	// Errors here show again, and are reported, in RemoveAll.
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
	return os.RemoveAll(dir)
}

// extract writes digest's tree into a fresh directory under c.tmp and
// returns it with its content size. On error nothing is left.
func (c *Cache) extract(ctx context.Context, digest string) (_ string, _ int64, err error) {
	rc, err := c.store.Open(ctx, digest)
	if err != nil {
		return "", 0, err
	}
	defer rc.Close()
	dir, err := os.MkdirTemp(c.tmp, "x-")
	if err != nil {
		return "", 0, fmt.Errorf("workspace: get %s: %w", digest, err)
	}
	defer func() {
		if err != nil {
			_ = removeTree(dir)
		}
	}()
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", 0, fmt.Errorf("workspace: get %s: %w", digest, err)
	}
	defer root.Close()

	type made struct {
		name string
		dir  bool
		exec bool
	}
	var order []made
	chk := newTarChecker(c.lim)
	tr := tar.NewReader(rc)
	for {
		if err := ctx.Err(); err != nil {
			return "", 0, err
		}
		hdr, terr := tr.Next()
		if terr == io.EOF {
			break
		}
		if terr != nil {
			return "", 0, streamErr(digest, terr)
		}
		name, cerr := chk.check(hdr)
		if cerr != nil {
			return "", 0, fmt.Errorf("%w (in %s)", cerr, digest)
		}
		if hdr.Typeflag == tar.TypeDir {
			if err := root.Mkdir(name, 0o755); err != nil {
				return "", 0, fmt.Errorf("workspace: get %s: %w", digest, err)
			}
			order = append(order, made{name: name, dir: true})
			continue
		}
		f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return "", 0, fmt.Errorf("workspace: get %s: %w", digest, err)
		}
		n, werr := io.Copy(f, tr)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return "", 0, streamErr(digest, werr)
		}
		if n != hdr.Size {
			return "", 0, corrupt("%s: %q: short file", digest, name)
		}
		order = append(order, made{name: name, exec: hdr.Mode&0o111 != 0})
	}
	// Read to the end, so that the digest of the whole stream is checked.
	n, rerr := io.Copy(io.Discard, io.LimitReader(rc, maxTrailer+1))
	if rerr != nil {
		return "", 0, streamErr(digest, rerr)
	}
	if n > maxTrailer {
		return "", 0, corrupt("%s: more than %d bytes after the end of the tar", digest, maxTrailer)
	}
	// Read-only, children before parents.
	for i := len(order) - 1; i >= 0; i-- {
		m := order[i]
		mode := os.FileMode(0o444)
		if m.dir || m.exec {
			mode = 0o555
		}
		if err := root.Chmod(m.name, mode); err != nil {
			return "", 0, fmt.Errorf("workspace: get %s: %w", digest, err)
		}
	}
	return dir, chk.bytes, nil
}

// streamErr classifies an error met while reading the tar stream: the
// store's own errors (corruption, bucket errors) pass through, a tar format
// error is corruption.
func streamErr(digest string, err error) error {
	if errors.Is(err, ErrCorrupt) {
		return err
	}
	if errors.Is(err, tar.ErrHeader) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, tar.ErrFieldTooLong) || errors.Is(err, tar.ErrInsecurePath) {
		return corrupt("%s: tar: %v", digest, err)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("workspace: get %s: %w", digest, err)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if strings.HasPrefix(err.Error(), "archive/tar:") {
		return corrupt("%s: %v", digest, err)
	}
	return fmt.Errorf("workspace: get %s: %w", digest, err)
}

// OpenCache opens the store at storeURL and a cache over it in dir, or in
// a fresh temporary directory (named after tmpPrefix, removed by close)
// when dir is "". close releases the cache, then the store.
func OpenCache(ctx context.Context, storeURL, dir string, maxBytes int64, tmpPrefix string) (c *Cache, close func(), err error) {
	store, err := OpenStore(ctx, storeURL)
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() {}
	if dir == "" {
		if dir, err = os.MkdirTemp("", tmpPrefix); err != nil {
			_ = store.Close()
			return nil, nil, err
		}
		cleanup = func() { _ = os.RemoveAll(dir) }
	}
	c, err = NewCache(dir, maxBytes, store)
	if err != nil {
		cleanup()
		_ = store.Close()
		return nil, nil, err
	}
	return c, func() { _ = c.Close(); cleanup(); _ = store.Close() }, nil
}
