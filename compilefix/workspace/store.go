package workspace

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/klauspost/compress/zstd"
	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"
	_ "gocloud.dev/blob/memblob" // mem:// URLs (s3:// and gs://: cloud.go)
	"gocloud.dev/gcerrors"
)

// maxWindow bounds the zstd window a stored object may ask the decoder for.
const maxWindow = 64 << 20

// Store is a content-addressed store of snapshots on a gocloud.dev blob
// bucket. A snapshot with digest sha256:<hex> is the object
// sha256/<hex>.tar.zst, its canonical tar compressed with zstd. A Store is
// safe for concurrent use.
type Store struct {
	bucket *blob.Bucket
	url    string
}

// OpenStore opens the store at url: a plain directory path or a file:// URL
// (the directory is created if missing), s3://bucket?region=..., gs://bucket
// or mem:// (an in-process bucket, for tests).
func OpenStore(ctx context.Context, urlstr string) (*Store, error) {
	if urlstr == "" {
		return nil, errors.New("workspace: open store: empty URL")
	}
	var (
		b   *blob.Bucket
		err error
	)
	if !strings.Contains(urlstr, "://") {
		b, err = openDir(urlstr)
	} else {
		u, perr := url.Parse(urlstr)
		if perr != nil {
			return nil, fmt.Errorf("workspace: open store %q: %w", urlstr, perr)
		}
		if u.Scheme == fileblob.Scheme {
			q := u.Query()
			for k, v := range map[string]string{"create_dir": "1", "metadata": "skip", "no_tmp_dir": "1"} {
				if _, ok := q[k]; !ok {
					q.Set(k, v)
				}
			}
			u.RawQuery = q.Encode()
		}
		if !blob.DefaultURLMux().ValidBucketScheme(u.Scheme) {
			return nil, fmt.Errorf("workspace: open store %q: no %s:// driver in this build (directories, file://, mem://%s)", urlstr, u.Scheme, cloudSchemes)
		}
		b, err = blob.OpenBucket(ctx, u.String())
	}
	if err != nil {
		return nil, fmt.Errorf("workspace: open store %q: %w", urlstr, err)
	}
	return &Store{bucket: b, url: urlstr}, nil
}

func openDir(dir string) (*blob.Bucket, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, err
	}
	return fileblob.OpenBucket(abs, &fileblob.Options{
		CreateDir: true,
		Metadata:  fileblob.MetadataDontWrite,
		NoTempDir: true,
	})
}

// Key returns the object key of digest in the bucket.
func Key(digest string) (string, error) {
	h, err := ParseDigest(digest)
	if err != nil {
		return "", err
	}
	return "sha256/" + h + ".tar.zst", nil
}

// Put stores tarball under digest. The digest must be that of the bytes and
// the tar must be a safe snapshot, as Pack writes them: directories and
// regular files under clean relative paths, each path once, every parent
// directory before its entries. Storing a digest that is already present is
// a no-op.
func (s *Store) Put(ctx context.Context, digest string, tarball []byte) error {
	key, err := Key(digest)
	if err != nil {
		return err
	}
	if got := Digest(tarball); got != digest {
		return fmt.Errorf("workspace: put %s: bytes have digest %s", digest, got)
	}
	if err := validateTar(tarball); err != nil {
		return fmt.Errorf("workspace: put %s: %w", digest, err)
	}
	if ok, err := s.bucket.Exists(ctx, key); err != nil {
		return fmt.Errorf("workspace: put %s: %w", digest, err)
	} else if ok {
		return nil
	}
	// The object appears only when the writer closes without error.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := s.bucket.NewWriter(wctx, key, &blob.WriterOptions{ContentType: "application/zstd"})
	if err != nil {
		return fmt.Errorf("workspace: put %s: %w", digest, err)
	}
	zw, err := zstd.NewWriter(w, zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(8<<20))
	if err == nil {
		_, err = zw.Write(tarball)
		if cerr := zw.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		cancel() // abort: no partial object
		w.Close()
		return fmt.Errorf("workspace: put %s: %w", digest, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("workspace: put %s: %w", digest, err)
	}
	return nil
}

// validateTar checks that b is a readable tar of safe entries.
func validateTar(b []byte) error {
	tr := tar.NewReader(bytes.NewReader(b))
	chk := newTarChecker(unlimited)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return corrupt("tar: %v", err)
		}
		if _, err := chk.check(hdr); err != nil {
			return err
		}
	}
}

// PutDir packs dir (see PackDir), stores it and returns its digest.
func (s *Store) PutDir(ctx context.Context, dir string) (string, error) {
	d, tb, err := PackDir(dir)
	if err != nil {
		return "", err
	}
	if err := s.Put(ctx, d, tb); err != nil {
		return "", err
	}
	return d, nil
}

// Has reports whether the store holds digest.
func (s *Store) Has(ctx context.Context, digest string) (bool, error) {
	key, err := Key(digest)
	if err != nil {
		return false, err
	}
	ok, err := s.bucket.Exists(ctx, key)
	if err != nil {
		return false, fmt.Errorf("workspace: has %s: %w", digest, err)
	}
	return ok, nil
}

// Open returns the uncompressed tar stream of digest, or an error wrapping
// ErrNotFound. The stream is verified as it is read: a decompression error,
// or reaching the end with bytes whose sha256 is not the digest, is an error
// wrapping ErrCorrupt (returned in place of io.EOF). Errors of the bucket
// itself are returned as they are.
func (s *Store) Open(ctx context.Context, digest string) (io.ReadCloser, error) {
	key, err := Key(digest)
	if err != nil {
		return nil, err
	}
	r, err := s.bucket.NewReader(ctx, key, nil)
	if err != nil {
		if gcerrors.Code(err) == gcerrors.NotFound {
			return nil, fmt.Errorf("%w: %s", ErrNotFound, digest)
		}
		return nil, fmt.Errorf("workspace: open %s: %w", digest, err)
	}
	src := &srcReader{r: r}
	zr, err := zstd.NewReader(src,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxWindow(maxWindow),
		zstd.WithDecoderLowmem(true))
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("workspace: open %s: %w", digest, err)
	}
	want, _ := hex.DecodeString(strings.TrimPrefix(digest, DigestPrefix))
	return &verifyReader{digest: digest, want: want, src: src, zr: zr, h: sha256.New()}, nil
}

// Close closes the bucket.
func (s *Store) Close() error {
	return s.bucket.Close()
}

// String returns the URL the store was opened with.
func (s *Store) String() string { return s.url }

// srcReader remembers the bucket's read error, so that it is not mistaken
// for corruption.
type srcReader struct {
	r   *blob.Reader
	err error
}

func (s *srcReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF {
		s.err = err
	}
	return n, err
}

type verifyReader struct {
	digest string
	want   []byte
	src    *srcReader
	zr     *zstd.Decoder
	h      hash.Hash
	err    error
	once   sync.Once
}

func (v *verifyReader) Read(p []byte) (int, error) {
	if v.err != nil {
		return 0, v.err
	}
	n, err := v.zr.Read(p)
	v.h.Write(p[:n])
	switch {
	case err == nil:
	case err == io.EOF:
		if !bytes.Equal(v.h.Sum(nil), v.want) {
			err = corrupt("%s: content has digest sha256:%x", v.digest, v.h.Sum(nil))
		}
		v.err = err
	case v.src.err != nil:
		err = fmt.Errorf("workspace: read %s: %w", v.digest, v.src.err)
		v.err = err
	default:
		err = corrupt("%s: zstd: %v", v.digest, err)
		v.err = err
	}
	return n, err
}

func (v *verifyReader) Close() error {
	var err error
	v.once.Do(func() {
		v.zr.Close()
		err = v.src.r.Close()
	})
	return err
}
