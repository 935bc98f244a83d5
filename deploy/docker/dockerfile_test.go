// Package docker holds murphy's container image (Dockerfile, built from the
// repository root with the .dockerignore there) and its test, which needs
// no Docker engine: it parses the Dockerfile with BuildKit's own parser and
// checks the image's shape for each value of the TOOLCHAINS build argument,
// and checks that the build context keeps every file the build reads.
package docker

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/linter"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
	"github.com/murphy-rl/murphy/deploy/internal/metricnames"
	"github.com/murphy-rl/murphy/sandbox"
)

// binary is where the image has murphy, its entrypoint.
const binary = "/usr/local/bin/murphy"

// toolchains are the values of the TOOLCHAINS build argument.
var toolchains = []string{"none", "compilefix"}

type dockerfile struct {
	stages []instructions.Stage
	args   map[string]string // global ARGs and their defaults
}

func parse(t *testing.T) dockerfile {
	t.Helper()
	b, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	res, err := parser.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	for _, w := range res.Warnings {
		t.Errorf("Dockerfile: parser warning: %s", w.Short)
	}
	lint := linter.New(&linter.Config{Warn: func(rule, desc, _, msg string, loc []parser.Range) {
		t.Errorf("Dockerfile:%v: %s: %s (%s)", loc, rule, msg, desc)
	}})
	stages, meta, err := instructions.Parse(res.AST, lint)
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	d := dockerfile{stages: stages, args: map[string]string{}}
	for _, a := range meta {
		for _, kv := range a.Args {
			d.args[kv.Key] = kv.ValueString()
		}
	}
	return d
}

// expand replaces the global ARGs in s (build args override defaults).
func (d dockerfile) expand(s string, buildArgs map[string]string) string {
	return os.Expand(s, func(k string) string {
		if v, ok := buildArgs[k]; ok {
			return v
		}
		return d.args[k]
	})
}

// stage returns the index of the stage named name (or numbered), or -1.
func (d dockerfile) stage(name string, before int) int {
	for i, s := range d.stages[:before] {
		if strings.EqualFold(s.Name, name) || name == strings.TrimSpace(itoa(i)) {
			return i
		}
	}
	return -1
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// chain returns the stages the final image is built from, the final one
// first, following FROM <stage> with the build arguments.
func (d dockerfile) chain(t *testing.T, buildArgs map[string]string) []int {
	t.Helper()
	var out []int
	i := len(d.stages) - 1
	for i >= 0 {
		out = append(out, i)
		base := d.expand(d.stages[i].BaseName, buildArgs)
		j := d.stage(base, i)
		if j < 0 {
			break // an image
		}
		i = j
	}
	return out
}

func commands[T any](d dockerfile, stages []int) []T {
	var out []T
	for _, i := range stages {
		for _, c := range d.stages[i].Commands {
			if v, ok := c.(T); ok {
				out = append(out, v)
			}
		}
	}
	return out
}

// aptPackages returns the packages apt-get install installs in stages.
func aptPackages(d dockerfile, stages []int) []string {
	var pkgs []string
	for _, r := range commands[*instructions.RunCommand](d, stages) {
		line := strings.Join(r.CmdLine, " ")
		for _, part := range strings.Split(line, "&&") {
			f := strings.Fields(strings.ReplaceAll(part, "\\\n", " "))
			k := slices.Index(f, "install")
			if k < 0 || !slices.Contains(f[:k], "apt-get") {
				continue
			}
			for _, w := range f[k+1:] {
				if !strings.HasPrefix(w, "-") {
					pkgs = append(pkgs, w)
				}
			}
		}
	}
	return pkgs
}

var pinned = regexp.MustCompile(`^[a-z0-9./_-]+(:[A-Za-z0-9._-]+)?(@sha256:[a-f0-9]{64})?$`)

func TestDockerfileStages(t *testing.T) {
	d := parse(t)
	if len(d.stages) < 2 {
		t.Fatalf("%d stages: want a builder stage and a runtime stage", len(d.stages))
	}
	for i, s := range d.stages {
		seen := map[string]bool{}
		for _, tc := range toolchains {
			base := d.expand(s.BaseName, map[string]string{"TOOLCHAINS": tc})
			if d.stage(base, i) >= 0 || seen[base] {
				continue
			}
			seen[base] = true
			// An image: pinned by a tag other than latest, or a digest.
			tag := ""
			if _, after, ok := strings.Cut(base, ":"); ok {
				tag, _, _ = strings.Cut(after, "@")
			}
			if !pinned.MatchString(base) || (tag == "" && !strings.Contains(base, "@sha256:")) || tag == "latest" {
				t.Errorf("stage %d (%s): FROM %s is not pinned by a tag or digest", i, s.Name, base)
			}
			if strings.Contains(base, "$") {
				t.Errorf("stage %d: FROM %s: unknown build argument", i, s.BaseName)
			}
		}
		for _, c := range s.Commands {
			switch c := c.(type) {
			case *instructions.AddCommand:
				for _, src := range c.SourcePaths {
					if strings.Contains(src, "://") || strings.HasPrefix(src, "git@") {
						t.Errorf("stage %s: ADD %s: fetches from the network (pin it, or COPY from the context)", s.Name, src)
					}
				}
			case *instructions.CopyCommand:
				if c.From == "" {
					continue
				}
				if d.stage(c.From, i) < 0 {
					t.Errorf("stage %s: COPY --from=%s: no earlier stage of that name", s.Name, c.From)
				}
			}
		}
	}
	for _, tc := range toolchains {
		chain := d.chain(t, map[string]string{"TOOLCHAINS": tc})
		if len(chain) < 2 {
			t.Errorf("TOOLCHAINS=%s: the final stage does not build on a runtime stage", tc)
		}
	}
}

// TestDockerfileBuilder checks the build of the binary: static, trimmed,
// with the version linked in as the Makefile's build target does, and that
// it is what the runtime copies.
func TestDockerfileBuilder(t *testing.T) {
	d := parse(t)
	var build *instructions.RunCommand
	builder := -1
	for i := range d.stages {
		for _, r := range commands[*instructions.RunCommand](d, []int{i}) {
			if strings.Contains(strings.Join(r.CmdLine, " "), "go build") {
				build, builder = r, i
			}
		}
	}
	if build == nil {
		t.Fatal("no RUN go build")
	}
	line := strings.Join(build.CmdLine, " ")
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "-X main.version=", "./cmd/murphy"} {
		if !strings.Contains(line, want) {
			t.Errorf("go build does not set %s: %s", want, line)
		}
	}
	mk, err := os.ReadFile(filepath.Join(metricnames.Root(t), "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mk), "-X main.version=") {
		t.Error("the Makefile's build no longer links main.version: keep the Dockerfile's -ldflags the same")
	}
	out := regexp.MustCompile(`-o\s+(\S+)`).FindStringSubmatch(line)
	if out == nil {
		t.Fatalf("go build has no -o: %s", line)
	}
	copied := false
	for _, tc := range toolchains {
		for _, c := range commands[*instructions.CopyCommand](d, d.chain(t, map[string]string{"TOOLCHAINS": tc})) {
			if d.stage(c.From, len(d.stages)) == builder && slices.Contains(c.SourcePaths, out[1]) && c.DestPath == binary {
				copied = true
			}
		}
	}
	if !copied {
		t.Errorf("no runtime stage copies %s from the builder to %s", out[1], binary)
	}
}

// TestDockerfileRuntime checks the final image for each TOOLCHAINS value:
// the sandbox's packages, a non-root default user, murphy as entrypoint.
func TestDockerfileRuntime(t *testing.T) {
	d := parse(t)
	for _, tc := range toolchains {
		t.Run(tc, func(t *testing.T) {
			args := map[string]string{"TOOLCHAINS": tc}
			chain := d.chain(t, args)
			final := d.stages[chain[0]]
			var user string
			var entry *instructions.EntrypointCommand
			for _, c := range final.Commands {
				switch c := c.(type) {
				case *instructions.UserCommand:
					user = c.User
				case *instructions.EntrypointCommand:
					entry = c
				}
			}
			switch u, _, _ := strings.Cut(user, ":"); u {
			case "":
				t.Error("the final stage has no USER")
			case "0", "root":
				t.Errorf("USER %s: the default user must not be root (execute's Deployment sets runAsUser: 0)", user)
			}
			if entry == nil || entry.PrependShell || len(entry.CmdLine) != 1 || entry.CmdLine[0] != binary {
				t.Errorf("ENTRYPOINT must be [%q] in exec form, is %+v", binary, entry)
			}
			pkgs := aptPackages(d, chain)
			want := []string{"bubblewrap", "python3", "ca-certificates"}
			if tc == "compilefix" {
				want = append(want, "gcc", "make", "openjdk-17-jdk-headless", "git", "patch")
			}
			for _, p := range want {
				if !slices.Contains(pkgs, p) {
					t.Errorf("the image does not install %s (installs %v)", p, pkgs)
				}
			}
			goroot := false
			for _, c := range commands[*instructions.CopyCommand](d, chain) {
				if c.DestPath == "/usr/local/go" && c.From != "" {
					goroot = true
				}
			}
			if goroot != (tc == "compilefix") {
				t.Errorf("Go toolchain at /usr/local/go: %v, want it only with TOOLCHAINS=compilefix", goroot)
			}
		})
	}
}

// TestDockerfileForkServer runs the builder's fork server command (with
// /out in a temporary directory): it must compile the source into the file
// name a pool looks for, and every runtime must copy it to the directory a
// pool looks in.
func TestDockerfileForkServer(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("no gcc")
	}
	d := parse(t)
	var build *instructions.RunCommand
	builder := -1
	for i := range d.stages {
		for _, r := range commands[*instructions.RunCommand](d, []int{i}) {
			if strings.Contains(strings.Join(r.CmdLine, " "), "forkserver") {
				build, builder = r, i
			}
		}
	}
	if build == nil {
		t.Fatal("no RUN builds the fork server")
	}
	out := t.TempDir()
	cmd := exec.Command("bash", "-euc", strings.ReplaceAll(strings.Join(build.CmdLine, " "), "/out/", out+"/"))
	cmd.Dir = metricnames.Root(t)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, b)
	}
	if _, err := os.Stat(filepath.Join(out, "lib", sandbox.ForkServerName())); err != nil {
		entries, _ := os.ReadDir(filepath.Join(out, "lib"))
		t.Fatalf("the builder does not make %s (made %v)", sandbox.ForkServerName(), entries)
	}
	want := filepath.Clean(sandbox.DefaultConfig().ForkServerDir)
	for _, tc := range toolchains {
		copied := false
		for _, c := range commands[*instructions.CopyCommand](d, d.chain(t, map[string]string{"TOOLCHAINS": tc})) {
			if d.stage(c.From, len(d.stages)) == builder && slices.Contains(c.SourcePaths, "/out/lib/") && filepath.Clean(c.DestPath) == want {
				copied = true
			}
		}
		if !copied {
			t.Errorf("TOOLCHAINS=%s: no runtime stage copies /out/lib/ from the builder to %s", tc, want)
		}
	}
}

// TestSandboxPackages checks that the image installs what the sandbox's
// test dependencies install at runtime (bubblewrap, python3): the two lists
// must not drift apart.
func TestSandboxPackages(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(metricnames.Root(t), "sandbox", "install-test-deps.sh"))
	if err != nil {
		t.Fatal(err)
	}
	d := parse(t)
	pkgs := aptPackages(d, d.chain(t, map[string]string{"TOOLCHAINS": "compilefix"}))
	for _, m := range regexp.MustCompile(`need\+=\(([a-z0-9.+-]+)\)`).FindAllStringSubmatch(string(b), -1) {
		if !slices.Contains(pkgs, m[1]) {
			t.Errorf("sandbox/install-test-deps.sh installs %s, the TOOLCHAINS=compilefix image does not", m[1])
		}
	}
}

// context is the build context: the repository's files less .dockerignore.
type context struct {
	root string
	pm   *patternmatcher.PatternMatcher
}

func loadContext(t *testing.T) context {
	t.Helper()
	root := metricnames.Root(t)
	f, err := os.Open(filepath.Join(root, ".dockerignore"))
	if err != nil {
		t.Fatalf("the build context needs a .dockerignore: %v", err)
	}
	defer f.Close()
	patterns, err := ignorefile.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		t.Fatal(err)
	}
	return context{root: root, pm: pm}
}

func (c context) excluded(t *testing.T, rel string) bool {
	t.Helper()
	ex, err := c.pm.MatchesOrParentMatches(filepath.ToSlash(rel))
	if err != nil {
		t.Fatal(err)
	}
	return ex
}

// TestDockerfileCopies checks that every path the Dockerfile copies from
// the context exists and is not excluded.
func TestDockerfileCopies(t *testing.T) {
	d := parse(t)
	c := loadContext(t)
	for _, s := range d.stages {
		for _, cp := range commands[*instructions.CopyCommand](d, []int{slices.IndexFunc(d.stages, func(x instructions.Stage) bool { return x.Name == s.Name })}) {
			if cp.From != "" {
				continue
			}
			for _, src := range cp.SourcePaths {
				rel := filepath.Clean(src)
				if _, err := os.Stat(filepath.Join(c.root, rel)); err != nil {
					t.Errorf("stage %s: COPY %s: %v", s.Name, src, err)
				}
				if rel != "." && c.excluded(t, rel) {
					t.Errorf("stage %s: COPY %s: excluded by .dockerignore", s.Name, src)
				}
			}
		}
	}
}

// TestDockerignore checks that the context keeps every file go build
// ./cmd/murphy reads (sources, embedded files, go.mod, go.sum) and leaves
// out what is large and not the build's (.git, caches, binaries, outputs).
func TestDockerignore(t *testing.T) {
	c := loadContext(t)
	cmd := exec.Command("go", "list", "-deps", "-json=Dir,ImportPath,Module,GoFiles,CgoFiles,EmbedFiles,SFiles,HFiles,CFiles", "./cmd/murphy")
	cmd.Dir = c.root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	need := []string{"go.mod", "go.sum"}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			Dir    string
			Module *struct{ Path string }
			Files  []string
			GoFiles, CgoFiles, EmbedFiles,
			SFiles, HFiles, CFiles []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if p.Module == nil || p.Module.Path != "github.com/murphy-rl/murphy" {
			continue
		}
		rel, err := filepath.Rel(c.root, p.Dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, list := range [][]string{p.GoFiles, p.CgoFiles, p.EmbedFiles, p.SFiles, p.HFiles, p.CFiles} {
			for _, f := range list {
				need = append(need, filepath.Join(rel, f))
			}
		}
	}
	if len(need) < 100 {
		t.Fatalf("go list found only %d files", len(need))
	}
	for _, f := range need {
		if c.excluded(t, f) {
			t.Errorf("%s: go build ./cmd/murphy reads it, .dockerignore leaves it out", f)
		}
	}
	for _, f := range []string{".git", ".cache", "murphy", "out", "bin", "diag.test", "python", "deploy/docker/Dockerfile"} {
		if !c.excluded(t, f) {
			t.Errorf("%s: in the build context, .dockerignore should leave it out", f)
		}
	}
	files, size := c.size(t)
	t.Logf("build context: %d files, %.1f MiB", files, float64(size)/(1<<20))
	if size > maxContext {
		t.Errorf("build context is %.1f MiB, more than %d MiB: what does .dockerignore miss?", float64(size)/(1<<20), maxContext>>20)
	}
}

// maxContext bounds the build context (the module's sources are a few MiB).
const maxContext = 32 << 20

// size walks the context as docker build would send it: every file not
// excluded, in directories that are not excluded or that an exception
// pattern (!path) reaches into.
func (c context) size(t *testing.T) (files int, bytes int64) {
	t.Helper()
	var exceptions []string
	for _, p := range c.pm.Patterns() {
		if p.Exclusion() {
			exceptions = append(exceptions, p.String())
		}
	}
	err := filepath.WalkDir(c.root, func(path string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(c.root, path)
		if rel == "." {
			return nil
		}
		rel = filepath.ToSlash(rel)
		if !c.excluded(t, rel) {
			if !e.IsDir() {
				fi, err := e.Info()
				if err != nil {
					return err
				}
				files++
				bytes += fi.Size()
			}
			return nil
		}
		if e.IsDir() && !slices.ContainsFunc(exceptions, func(x string) bool { return strings.HasPrefix(x, rel+"/") || x == rel }) {
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files, bytes
}
