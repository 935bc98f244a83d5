package compilefix

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/murphy-rl/murphy/sandbox"
)

// A Go task's first build in the sandbox compiles the standard-library
// packages the task imports (fmt and os alone pull in about forty, the
// runtime among them), tens of CPU-seconds. The host's Go build cache
// already holds them when murphy was built with the same toolchain, and
// the go command keys them by what went into them (toolchain, sources,
// flags), not by where the cache lives. So the warm-up starts from a
// seed cache holding the host's entries for those packages and nothing
// else:
//
//   - the packages are the standard-library closure of the imports in the
//     task's own tree (task data; candidates never choose it), listed with
//     `go list -export` by the trusted process in the build's environment
//     (PATH, GOFLAGS, GOTOOLCHAIN), which compiles into the host cache
//     only standard-library sources that are missing;
//   - the seed holds each package's compiled archive and the action entry
//     that names it, linked or copied out of the host cache; no other
//     entry of the host cache (other projects' builds) reaches the
//     sandbox, which reads the seed read-only and works on its own copy;
//   - an entry the sandbox's build keys differently (another toolchain or
//     environment) is a cache miss, and that package is compiled as
//     before: the seed changes how long the warm-up takes, never what it
//     builds.

// goStdSeedTimeout bounds the host's go list (it may compile missing
// standard-library packages).
const goStdSeedTimeout = 2 * time.Minute

// goStdSeed writes to dir a seed (dir/gocache, as a BuildJob's Seed lays
// out) of the host's cached standard-library packages that the Go files
// under the roots import, tests included. It returns "" when there is
// nothing to seed (no Go imports, no go command, an empty host cache).
func goStdSeed(ctx context.Context, dir string, roots ...string) (string, error) {
	imports, tests, err := goImports(roots...)
	if err != nil || len(imports) == 0 {
		return "", err
	}
	if tests {
		imports = append(imports, "testing", "testing/internal/testdeps")
	}
	goBin, err := lookPathIn("go", sandbox.BuildPATH)
	if err != nil {
		return "", nil
	}
	ctx, cancel := context.WithTimeout(ctx, goStdSeedTimeout)
	defer cancel()
	work, err := os.MkdirTemp(dir, "golist-")
	if err != nil {
		return "", fmt.Errorf("compilefix: go seed: %w", err)
	}
	defer os.RemoveAll(work)
	env := goSeedEnv()
	cacheOut, err := goCmd(ctx, goBin, work, env, "env", "GOCACHE")
	if err != nil {
		return "", err
	}
	hostCache := strings.TrimSpace(string(cacheOut))
	if hostCache == "" || hostCache == "off" {
		return "", nil
	}
	out, err := goCmd(ctx, goBin, work, env, append([]string{"list", "-e", "-export", "-deps",
		"-f", "{{if and .Standard .Export}}{{.Export}}{{end}}", "--"}, imports...)...)
	if err != nil {
		return "", err
	}
	want := map[string]string{} // output id -> archive in the host cache
	for _, line := range strings.Split(string(out), "\n") {
		if line = strings.TrimSpace(line); strings.HasSuffix(line, "-d") && strings.HasPrefix(line, hostCache+string(filepath.Separator)) {
			want[strings.TrimSuffix(filepath.Base(line), "-d")] = line
		}
	}
	if len(want) == 0 {
		return "", nil
	}
	seed := filepath.Join(dir, "goseed")
	if err := copyCacheEntries(hostCache, filepath.Join(seed, "gocache"), want); err != nil {
		os.RemoveAll(seed)
		return "", err
	}
	return seed, nil
}

// goSeedEnv is the host's environment with the build's settings that key
// the go command's cache entries.
func goSeedEnv() []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return k == "PATH" || k == "GOFLAGS" || k == "GOTOOLCHAIN" || k == "GOPROXY" || k == "GOWORK"
	})
	return append(env, "PATH="+sandbox.BuildPATH, "GOFLAGS=-buildvcs=false", "GOTOOLCHAIN=local", "GOPROXY=off", "GOWORK=off")
}

func goCmd(ctx context.Context, goBin, dir string, env []string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, goBin, args...)
	cmd.Dir, cmd.Env = dir, env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("compilefix: go seed: go %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// lookPathIn finds file in the directories of path.
func lookPathIn(file, path string) (string, error) {
	for _, d := range filepath.SplitList(path) {
		p := filepath.Join(d, file)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not in %s", file, path)
}

// goImports returns the standard-library-looking import paths (no dot in
// the first element) of the Go files under roots, and whether any is a
// test file.
func goImports(roots ...string) ([]string, bool, error) {
	set := map[string]bool{}
	tests := false
	fset := token.NewFileSet()
	for _, root := range roots {
		if root == "" {
			continue
		}
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || !d.Type().IsRegular() {
				return err
			}
			f, perr := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
			if perr != nil {
				return nil // the build reports it
			}
			tests = tests || strings.HasSuffix(p, "_test.go")
			for _, is := range f.Imports {
				path, uerr := strconv.Unquote(is.Path.Value)
				if uerr == nil && stdImport(path) {
					set[path] = true
				}
			}
			return nil
		})
		if err != nil {
			return nil, false, fmt.Errorf("compilefix: go seed: %w", err)
		}
	}
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	slices.Sort(out)
	return out, tests, nil
}

// stdImport says whether an import path may name a standard-library
// package: no dot in its first element, and not something go list reads
// as a pattern or a flag (std, cmd, all, "...", "-x"), nor cgo's "C". The
// tree is task data; a malformed one must not make the host compile more
// than the packages it imports.
func stdImport(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	switch {
	case first == "" || strings.Contains(first, ".") || strings.HasPrefix(path, "-"), strings.Contains(path, "..."):
		return false
	case path == "C" || path == "std" || path == "all" || first == "cmd":
		return false
	}
	return true
}

// copyCacheEntries copies into dst, a Go build cache laid out as the go
// command lays one out, the archives in want (by output id) and the
// action entries of the host cache src that name them.
func copyCacheEntries(src, dst string, want map[string]string) error {
	subdirs, err := os.ReadDir(src)
	if err != nil {
		return fmt.Errorf("compilefix: go seed: %w", err)
	}
	for _, sd := range subdirs {
		if !sd.IsDir() || len(sd.Name()) != 2 {
			continue
		}
		ents, err := os.ReadDir(filepath.Join(src, sd.Name()))
		if err != nil {
			continue
		}
		for _, e := range ents {
			if !strings.HasSuffix(e.Name(), "-a") {
				continue
			}
			a := filepath.Join(src, sd.Name(), e.Name())
			out, ok := actionOutput(a)
			if !ok || want[out] == "" {
				continue
			}
			archive := want[out]
			for _, f := range []string{a, archive} {
				to := filepath.Join(dst, filepath.Base(filepath.Dir(f)), filepath.Base(f))
				if err := linkOrCopy(f, to); err != nil {
					return fmt.Errorf("compilefix: go seed: %w", err)
				}
			}
		}
	}
	return nil
}

// actionOutput reads a Go cache action entry ("v1 <action id> <output
// id> <size> <time>") and returns its output id.
func actionOutput(path string) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	line, err := bufio.NewReader(io.LimitReader(f, 256)).ReadString('\n')
	if err != nil {
		return "", false
	}
	fields := strings.Fields(line)
	if len(fields) != 5 || fields[0] != "v1" {
		return "", false
	}
	return fields[2], true
}

// linkOrCopy hard-links src to dst, or copies it where a link cannot be
// made (another file system).
func linkOrCopy(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if _, err := os.Lstat(dst); err == nil {
		return nil
	}
	if os.Link(src, dst) == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
