package backfill

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// gitTimeout bounds one git command.
const gitTimeout = 5 * time.Minute

// errBadInput marks errors of the item's input (a missing revision, an
// unreadable archive): a rejection, not a failure of the job.
var errBadInput = errors.New("bad input")

func badInput(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errBadInput, fmt.Sprintf(format, args...))
}

// git runs the git CLI in dir without network, prompts, hooks or the
// system and global configuration.
func git(ctx context.Context, dir string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	full := append([]string{"-c", "safe.directory=*", "-c", "protocol.allow=never", "-c", "protocol.file.allow=always",
		"-c", "core.hooksPath=/dev/null", "-c", "advice.detachedHead=false"}, args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_ASKPASS=/bin/false", "GIT_SSH_COMMAND=/bin/false")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return nil, fmt.Errorf("git %s: no answer in %s", strings.Join(args, " "), gitTimeout)
		}
		return stdout.Bytes(), fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// gitRepo is a git repository opened for reading.
type gitRepo struct {
	dir     string // where git commands run
	cleanup func()
}

// openGit opens repo: a git directory (work tree or bare) used in place,
// or a bundle file cloned (all its refs) into a temporary directory.
func (b *Builder) openGit(ctx context.Context, repo string) (*gitRepo, error) {
	fi, err := os.Stat(repo)
	if err != nil {
		return nil, badInput("repository %s: %v", repo, err)
	}
	if fi.IsDir() {
		if _, err := git(ctx, repo, "rev-parse", "--git-dir"); err != nil {
			return nil, badInput("%s is not a git repository", repo)
		}
		return &gitRepo{dir: repo, cleanup: func() {}}, nil
	}
	tmp, err := b.tempDir("murphy-backfill-git-")
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(repo)
	if err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	dst := filepath.Join(tmp, "repo.git")
	if _, err := git(ctx, tmp, "clone", "--quiet", "--mirror", abs, dst); err != nil {
		os.RemoveAll(tmp)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, badInput("%s is neither a git repository nor a bundle: %v", repo, err)
	}
	return &gitRepo{dir: dst, cleanup: func() { os.RemoveAll(tmp) }}, nil
}

// resolve returns the commit id that rev names.
func (g *gitRepo) resolve(ctx context.Context, rev string) (string, error) {
	if rev == "" || strings.HasPrefix(rev, "-") {
		return "", badInput("revision %q is not a revision", rev)
	}
	out, err := git(ctx, g.dir, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", badInput("revision %q does not exist in the repository", rev)
	}
	return strings.TrimSpace(string(out)), nil
}

// archive writes the tree of commit into dst (git archive: files as
// committed, without .git).
func (g *gitRepo) archive(ctx context.Context, commit, dst string) (skipped []string, err error) {
	out, err := git(ctx, g.dir, "archive", "--format=tar", commit)
	if err != nil {
		return nil, err
	}
	return extractTar(bytes.NewReader(out), dst, false)
}

// diff is the unified diff from one commit to another, without renames
// (a rename is a deletion and an addition) and binary contents.
func (g *gitRepo) diff(ctx context.Context, from, to string) (string, error) {
	out, err := git(ctx, g.dir, "diff", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames", "--full-index", from, to, "--")
	if err != nil {
		return "", err
	}
	return string(out), nil
}

// extractTar writes the directories and regular files of a tar stream
// into dst; symlinks and other entries are skipped and listed. strip
// removes a single top-level directory that holds everything.
func extractTar(r io.Reader, dst string, strip bool) (skipped []string, err error) {
	type entry struct {
		hdr  *tar.Header
		data []byte
	}
	var entries []entry
	tr := tar.NewReader(r)
	tops := map[string]bool{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, badInput("tar: %v", err)
		}
		switch hdr.Typeflag {
		case tar.TypeXGlobalHeader, tar.TypeXHeader:
			continue
		}
		name := strings.TrimPrefix(filepath.ToSlash(strings.TrimSuffix(hdr.Name, "/")), "./")
		if name == "" || name == "." {
			continue
		}
		if !filepath.IsLocal(filepath.FromSlash(name)) {
			return nil, badInput("tar entry %q leaves the tree", hdr.Name)
		}
		hdr.Name = name
		top, _, _ := strings.Cut(name, "/")
		tops[top] = true
		var data []byte
		if hdr.Typeflag == tar.TypeReg {
			data, err = io.ReadAll(tr)
			if err != nil {
				return nil, badInput("tar %s: %v", name, err)
			}
		}
		entries = append(entries, entry{hdr, data})
	}
	prefix := ""
	if strip && len(tops) == 1 {
		for top := range tops {
			for _, e := range entries {
				if e.hdr.Name == top && e.hdr.Typeflag == tar.TypeDir {
					prefix = top + "/"
				}
			}
		}
	}
	for _, e := range entries {
		name := e.hdr.Name
		if prefix != "" {
			if name+"/" == prefix {
				continue
			}
			name = strings.TrimPrefix(name, prefix)
		}
		p := filepath.Join(dst, filepath.FromSlash(name))
		switch e.hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return nil, err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return nil, err
			}
			mode := os.FileMode(0o644)
			if e.hdr.Mode&0o111 != 0 {
				mode = 0o755
			}
			if err := os.WriteFile(p, e.data, mode); err != nil {
				return nil, err
			}
		default:
			skipped = append(skipped, name)
		}
	}
	return skipped, nil
}

// materialise writes the clean tree of src into dst: a .tar.gz/.tgz/.tar
// archive (its single top-level directory stripped), a git repository or
// bundle at rev (HEAD when rev is ""), or a plain directory copied
// without .git and symlinks. It returns the commit for git sources.
func (b *Builder) materialise(ctx context.Context, src, rev, dst string) (commit string, err error) {
	fi, err := os.Stat(src)
	if err != nil {
		return "", badInput("repository %s: %v", src, err)
	}
	lower := strings.ToLower(src)
	switch {
	case !fi.IsDir() && (strings.HasSuffix(lower, ".tar.gz") || strings.HasSuffix(lower, ".tgz") || strings.HasSuffix(lower, ".tar")):
		if rev != "" {
			return "", badInput("%s is an archive: it has no revision %q", src, rev)
		}
		f, err := os.Open(src)
		if err != nil {
			return "", badInput("%v", err)
		}
		defer f.Close()
		var r io.Reader = bufio.NewReader(f)
		if !strings.HasSuffix(lower, ".tar") {
			zr, err := gzip.NewReader(r)
			if err != nil {
				return "", badInput("%s: %v", src, err)
			}
			defer zr.Close()
			r = zr
		}
		_, err = extractTar(r, dst, true)
		return "", err
	case !fi.IsDir() || rev != "" || isGitDir(src) && !hasWorkFiles(src):
		g, err := b.openGit(ctx, src)
		if err != nil {
			return "", err
		}
		defer g.cleanup()
		if rev == "" {
			rev = "HEAD"
		}
		commit, err := g.resolve(ctx, rev)
		if err != nil {
			return "", err
		}
		_, err = g.archive(ctx, commit, dst)
		return commit, err
	}
	return "", copyTree(src, dst)
}

func isGitDir(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "HEAD"))
	_, err2 := os.Stat(filepath.Join(dir, "objects"))
	return err == nil && err2 == nil
}

func hasWorkFiles(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		switch e.Name() {
		case "HEAD", "objects", "refs", "config", "packed-refs", "hooks", "info", "description", "branches", "logs", "FETCH_HEAD", "ORIG_HEAD":
		default:
			return true
		}
	}
	return false
}

// copyTree copies the directories and regular files of src into dst,
// leaving out .git and symlinks.
func copyTree(src, dst string) error {
	root, err := os.OpenRoot(src)
	if err != nil {
		return badInput("%v", err)
	}
	defer root.Close()
	fsys := root.FS()
	return fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		out := filepath.Join(dst, filepath.FromSlash(p))
		switch {
		case d.IsDir():
			if d.Name() == ".git" && p != "." {
				return fs.SkipDir
			}
			return os.MkdirAll(out, 0o755)
		case d.Type().IsRegular():
			if d.Name() == ".git" {
				return nil // a worktree's .git file
			}
			data, err := fs.ReadFile(fsys, p)
			if err != nil {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			mode := os.FileMode(0o644)
			if info.Mode().Perm()&0o111 != 0 {
				mode = 0o755
			}
			return os.WriteFile(out, data, mode)
		}
		return nil
	})
}
