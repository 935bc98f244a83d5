package deps

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/compilefix/workspace"
	"github.com/murphy-rl/murphy/sandbox"
)

// reposDir holds the reference repositories (../../../shared/data/SOURCES.md).
const reposDir = "../../../shared/data/repos"

// TestMirrorRefuses: the mirror serves GET and HEAD of clean paths under
// its routes from the configured repositories, and nothing else: no other
// method, no dot segments or escaped separators, no unknown route, no
// redirect off the configured hosts.
func TestMirrorRefuses(t *testing.T) {
	t.Parallel()
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/m2/g/a/1/a-1.pom":
			_, _ = w.Write([]byte("<project/>"))
		case "/m2/away":
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data", http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	defer upstream.Close()
	m := newMirror(Repositories{Maven: []string{upstream.URL + "/none", upstream.URL + "/m2"}}, "")
	for _, c := range []struct {
		method, target string
		status         int
	}{
		{"GET", "/maven/g/a/1/a-1.pom", 200},
		{"HEAD", "/maven/g/a/1/a-1.pom", 200},
		{"POST", "/maven/g/a/1/a-1.pom", 403},
		{"GET", "/maven/g/../../etc/passwd", 403},
		{"GET", "/maven/g/%2e%2e/x", 403},
		{"GET", "/maven/g%2fa", 403},
		{"GET", "/maven//g", 403},
		{"GET", "/go/golang.org/x/mod/@v/list", 403}, // no Go proxy configured
		{"GET", "/elsewhere/x", 403},
		{"GET", "/maven/away", 502},
		{"GET", "/maven/g/b/1/b-1.pom", 404},
	} {
		req := httptest.NewRequest(c.method, "http://"+sandbox.NetworkAddr+c.target, nil)
		rec := httptest.NewRecorder()
		m.ServeHTTP(rec, req)
		if rec.Code != c.status {
			t.Errorf("%s %s: %d, want %d (%s)", c.method, c.target, rec.Code, c.status, strings.TrimSpace(rec.Body.String()))
		}
	}
	if s := m.Stats(); s.Fetched != 2 || s.NotFound != 1 || s.Refused != 7 {
		t.Errorf("stats %+v", s)
	}
}

// TestMirrorRewritesIndexLinks: an index page's links to its files host
// point at the mirror.
func TestMirrorRewritesIndexLinks(t *testing.T) {
	t.Parallel()
	var files *httptest.Server
	index := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte(`<a href="` + files.URL + `/packages/ab/six-1.16.0-py2.py3-none-any.whl#sha256=00">six</a>`))
	}))
	defer index.Close()
	files = httptest.NewServer(http.NotFoundHandler())
	defer files.Close()
	m := newMirror(Repositories{PyPI: index.URL + "/simple", PyPIFiles: files.URL}, "")
	rec := httptest.NewRecorder()
	m.ServeHTTP(rec, httptest.NewRequest("GET", "http://"+sandbox.NetworkAddr+"/pypi/simple/six/", nil))
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `href="/pypi/files/packages/ab/six-1.16.0`) {
		t.Fatalf("%d %s", rec.Code, rec.Body.String())
	}
}

// TestDetectAndKey: ecosystems come from manifests and the commands that
// use them; the key follows the manifests, not the sources.
func TestDetectAndKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("pom.xml", "<project/>")
	write("sub/pom.xml", "<project/>")
	write("src/main/java/A.java", "class A {}")
	write("test/requirements_test.txt", "coverage\n")
	write("target/pom.xml", "<built/>")
	mvn := []string{"mvn", "-B", "-o", "compile"}
	ecos, ms, err := Detect(dir, mvn, nil)
	if err != nil || len(ecos) != 1 || ecos[0] != Maven || len(ms[Maven]) != 2 || len(ms[Python]) != 1 {
		t.Fatalf("%v %v %v", ecos, ms, err)
	}
	if ecos, _, _ := Detect(dir, []string{"python3", "-m", "compileall", "-q", "."}, nil); len(ecos) != 0 {
		t.Errorf("a byte-compiling build needs nothing: %v", ecos)
	}
	if ecos, _, _ := Detect(dir, []string{"sh", "-c", "cd sub && mvn compile"}, []string{"python", "-m", "pytest"}); len(ecos) != 2 {
		t.Errorf("shell line and tests: %v", ecos)
	}
	k1, _ := Key(dir, ecos, ms, DefaultRepositories(), mvn, nil)
	write("src/main/java/A.java", "class A { int x; }")
	k2, _ := Key(dir, ecos, ms, DefaultRepositories(), mvn, nil)
	write("sub/pom.xml", "<project><x/></project>")
	k3, _ := Key(dir, ecos, ms, DefaultRepositories(), mvn, nil)
	if k1 != k2 || k2 == k3 {
		t.Errorf("keys %s %s %s", k1, k2, k3)
	}
	if got := online(mvn); strings.Join(got, " ") != "mvn -B compile" {
		t.Errorf("online %v", got)
	}
}

// TestPlanPointsToolsAtTheMirror: each ecosystem's resolution job sends
// its tool to the mirror and keeps what it fetched under /tmp/deps.
func TestPlanPointsToolsAtTheMirror(t *testing.T) {
	t.Parallel()
	ms := map[string][]string{Python: {"requirements.txt", "test/requirements_test.txt", "setup.py"}}
	j := plan([]string{Maven, Gradle, Go, Python}, ms, []string{"gradle", "--offline", "compileJava"}, []string{"mvn", "-o", "test"})
	env := strings.Join(j.env, "\n")
	for _, want := range []string{"GOPROXY=http://127.0.0.1:3142/go", "GOMODCACHE=/tmp/deps/go", "GOSUMDB=sum.golang.org",
		"PIP_INDEX_URL=http://127.0.0.1:3142/pypi/simple/", "PYTHONPATH=/tmp/deps/python", "GRADLE_USER_HOME=/tmp/gradle-home",
		"MAVEN_OPTS=-Duser.home=/tmp/home -Dmaven.repo.local=/tmp/deps/maven"} {
		if !strings.Contains(env, want) {
			t.Errorf("no %s in\n%s", want, env)
		}
	}
	if !strings.Contains(j.files["home/.m2/settings.xml"], "<mirrorOf>*</mirrorOf><url>http://127.0.0.1:3142/maven/</url>") ||
		!strings.Contains(j.files["gradle-home/init.d/murphy-mirror.gradle"], "http://127.0.0.1:3142/maven/") {
		t.Errorf("settings: %v", j.files)
	}
	var cmds []string
	for _, c := range j.commands {
		cmds = append(cmds, strings.Join(c, " "))
	}
	want := []string{"python3 /tmp/murphy-resolve/resolve_python.py /tmp/deps/python requirements.txt test/requirements_test.txt",
		"gradle compileJava", "mvn test"}
	if strings.Join(cmds, "|") != strings.Join(want, "|") || !j.resolvers[0] || j.resolvers[1] {
		t.Errorf("commands %q (resolvers %v)", cmds, j.resolvers)
	}
}

// reachable reports whether host:443 answers; in CI (CI set) the
// registries must be reachable.
func reachable(t *testing.T, host string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", host+":443", 5*time.Second)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not reachable: %v", host, err)
		}
		t.Skipf("%s is not reachable: %v", host, err)
	}
	c.Close()
}

// testResolver is a Resolver over a real build sandbox and a store in a
// temporary directory, with a mirror cache shared by the tests.
func testResolver(t *testing.T) (*Resolver, *workspace.Store, *sandbox.Builder) {
	t.Helper()
	if testing.Short() {
		t.Skip("resolves from real repositories")
	}
	if os.Geteuid() != 0 {
		t.Skip("the build sandbox needs root")
	}
	if _, err := os.Stat("/usr/bin/bwrap"); err != nil {
		t.Skip("bubblewrap is not installed")
	}
	bc := sandbox.DefaultBuilderConfig()
	bc.Workers, bc.UIDBase, bc.UIDCount = 2, 68000, 100
	b, err := sandbox.NewBuilder(bc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	store, err := workspace.OpenStore(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	cfg := DefaultConfig()
	cfg.Dir = sharedCacheDir(t)
	r, err := New(cfg, b, store, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return r, store, b
}

// sharedCacheDir is the resolvers' host cache for this test run
// (MURPHY_DEPS_CACHE, as CI sets it, keeps the mirror's files across
// packages and runs).
func sharedCacheDir(t *testing.T) string {
	if d := os.Getenv("MURPHY_DEPS_CACHE"); d != "" {
		return d
	}
	return t.TempDir()
}

// materialise extracts a stored cache, as execute's snapshot cache does.
func materialise(t *testing.T, store *workspace.Store, digest string) string {
	t.Helper()
	c, err := workspace.NewCache(t.TempDir(), 4<<30, store)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	tree, err := c.Get(context.Background(), digest)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tree.Release)
	return tree.Dir()
}

// gitArchive writes rev of a bundle into a directory.
func gitArchive(t *testing.T, bundle, rev string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	src, err := filepath.Abs(filepath.Join(reposDir, bundle))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(src); err != nil {
		t.Skipf("no %s: %v", bundle, err)
	}
	clone := filepath.Join(t.TempDir(), "clone")
	if out, err := exec.Command("git", "clone", "-q", "--mirror", src, clone).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	dst := t.TempDir()
	cmd := exec.Command("sh", "-c", "git -C "+clone+" archive "+rev+" | tar -x -C "+dst)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	return dst
}

// TestResolveMavenRealProject resolves rxjava-jdbc's parent POM, plugins
// and dependencies from Maven Central in the sandbox (the repaired tree:
// its failing commit forgot ResultSetMapper.java), then builds it offline
// from the stored cache alone; a second resolution is a hit.
func TestResolveMavenRealProject(t *testing.T) {
	reachable(t, "repo.maven.apache.org")
	if _, err := exec.LookPath("mvn"); err != nil {
		t.Skip("maven is not installed")
	}
	r, store, b := testResolver(t)
	tree := gitArchive(t, "rxjava-jdbc.bundle", "fail")
	overlay := gitArchive(t, "rxjava-jdbc.bundle", "fix")
	fixOnly := t.TempDir()
	rel := "src/main/java/com/github/davidmoten/rx/jdbc/ResultSetMapper.java"
	if err := os.MkdirAll(filepath.Join(fixOnly, filepath.Dir(rel)), 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(overlay, rel))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fixOnly, rel), src, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(fixOnly, 0o755); err != nil {
		t.Fatal(err)
	}
	build := []string{"mvn", "-B", "-o", "-q", "compile"}
	ctx := context.Background()
	start := time.Now()
	res, err := r.Resolve(ctx, Request{Tree: tree, Overlay: fixOnly, Build: build})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("resolved %v in %s: %d files, %d bytes, mirror %+v", res.Ecosystems, time.Since(start).Round(time.Millisecond), res.Files, res.Bytes, res.Mirror)
	if res.Digest == "" || res.Hit || len(res.Ecosystems) != 1 || res.Ecosystems[0] != Maven {
		t.Fatalf("%+v", res)
	}
	again, err := r.Resolve(ctx, Request{Tree: tree, Build: build})
	if err != nil || !again.Hit || again.Digest != res.Digest {
		t.Fatalf("second resolution: %+v %v", again, err)
	}
	deps := materialise(t, store, res.Digest)
	if _, err := os.Stat(filepath.Join(deps, "maven", "com", "github", "davidmoten", "sonatype-parent", "0.1")); err != nil {
		t.Errorf("the parent POM is not in the cache: %v", err)
	}
	// (the failing tree's offline build, reproducing the log's errors, is
	// cmd/murphy's TestBackfillRealPairs)
	fixed, err := b.Build(ctx, &sandbox.BuildJob{Tree: tree, Overlay: fixOnly, Deps: deps, Commands: [][]string{build},
		Limits: sandbox.BuildLimits{CPU: 2 * time.Minute, Wall: 5 * time.Minute}})
	if err != nil || !fixed.OK() {
		t.Fatalf("offline build of the repaired tree: %v %+v\n%s", err, fixed, fixed.Commands[0].Output)
	}
}

// writeTree writes files into a fresh directory readable by the build's
// uid.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for p, c := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestResolveGoModules resolves a module's requirement through the Go
// module proxy (go.sum checked) and loads its packages offline from the
// cache (go list -deps: the module cache is what is tested; compiling the
// standard library would only add minutes).
func TestResolveGoModules(t *testing.T) {
	reachable(t, "proxy.golang.org")
	r, store, b := testResolver(t)
	tree := writeTree(t, map[string]string{
		"go.mod": "module example.com/m\n\ngo 1.21\n\nrequire github.com/google/uuid v1.6.0\n",
		"go.sum": "github.com/google/uuid v1.6.0 h1:NIvaJDMOsjHA8n1jAhLSgzrAzy1Hgr+hNrb57e+94F0=\n" +
			"github.com/google/uuid v1.6.0/go.mod h1:TIyPZe4MgqvfeYDBFedMoGGpEw/LqOeaOT+nhxU+yHo=\n",
		"main.go": "package main\n\nimport \"github.com/google/uuid\"\n\nfunc main() { println(uuid.NewString() != \"\") }\n",
	})
	build := []string{"go", "list", "-deps", "./..."}
	res, err := r.Resolve(context.Background(), Request{Tree: tree, Build: build})
	if err != nil || res.Digest == "" || len(res.Ecosystems) != 1 || res.Ecosystems[0] != Go {
		t.Fatalf("%+v %v", res, err)
	}
	t.Logf("resolved %v: %d files, mirror %+v", res.Ecosystems, res.Files, res.Mirror)
	deps := materialise(t, store, res.Digest)
	out, err := b.Build(context.Background(), &sandbox.BuildJob{Tree: tree, Deps: deps, Commands: [][]string{build},
		Limits: sandbox.BuildLimits{CPU: 2 * time.Minute, Wall: 4 * time.Minute}})
	if err != nil || !out.OK() || !strings.Contains(string(out.Commands[0].Output), "github.com/google/uuid") {
		t.Fatalf("offline build: %v %+v\n%s", err, out, out.Commands[0].Output)
	}
	// A go.sum that lies is refused by the checksum check, in go's words.
	bad := writeTree(t, map[string]string{
		"go.mod":  "module example.com/m\n\ngo 1.21\n\nrequire github.com/google/uuid v1.5.0\n",
		"go.sum":  "github.com/google/uuid v1.5.0 h1:NIvaJDMOsjHA8n1jAhLSgzrAzy1Hgr+hNrb57e+94F0=\ngithub.com/google/uuid v1.5.0/go.mod h1:TIyPZe4MgqvfeYDBFedMoGGpEw/LqOeaOT+nhxU+yHo=\n",
		"main.go": "package main\n\nimport _ \"github.com/google/uuid\"\n\nfunc main() {}\n",
	})
	if res, err := r.Resolve(context.Background(), Request{Tree: bad, Build: build}); err == nil || !strings.Contains(err.Error(), "checksum mismatch") || res.Failed == "" {
		t.Fatalf("a wrong go.sum: %+v %v", res, err)
	}
}

// TestResolvePythonRequirements installs a requirements file's and a
// project's declared distributions from PyPI (the project itself left
// out), and imports them offline from the cache; a requirement PyPI does
// not have is a failure in pip's words.
func TestResolvePythonRequirements(t *testing.T) {
	reachable(t, "pypi.org")
	r, store, b := testResolver(t)
	if err := exec.Command("/usr/bin/python3", "-m", "pip", "--version").Run(); err != nil {
		t.Skip("the sandbox's python3 has no pip (apt-get install python3-pip)")
	}
	tree := writeTree(t, map[string]string{
		"requirements.txt": "six==1.16.0\n",
		"pyproject.toml":   "[build-system]\nrequires = [\"setuptools\"]\nbuild-backend = \"setuptools.build_meta\"\n\n[project]\nname = \"demo\"\nversion = \"0.1\"\ndependencies = [\"packaging==24.0\"]\n",
		"demo/__init__.py": "import six, packaging.version\nV = packaging.version.Version('1.0')\n",
	})
	run := []string{"python3", "-c", "import demo, six, importlib.util; assert demo.V.major == 1; assert importlib.util.find_spec('demo').origin.startswith('/work/')"}
	res, err := r.Resolve(context.Background(), Request{Tree: tree, Build: run})
	if err != nil || res.Digest == "" || len(res.Ecosystems) != 1 || res.Ecosystems[0] != Python {
		t.Fatalf("%+v %v", res, err)
	}
	t.Logf("resolved %v: %d files, mirror %+v", res.Ecosystems, res.Files, res.Mirror)
	deps := materialise(t, store, res.Digest)
	if _, err := os.Stat(filepath.Join(deps, "python", "demo")); err == nil {
		t.Error("the project itself was installed into the cache")
	}
	out, err := b.Build(context.Background(), &sandbox.BuildJob{Tree: tree, Deps: deps, Commands: [][]string{run}})
	if err != nil || !out.OK() {
		t.Fatalf("offline run: %v %+v\n%s", err, out, out.Commands[0].Output)
	}
	missing := writeTree(t, map[string]string{"requirements.txt": "murphy-no-such-distribution-zz==9.9\n", "run.py": "print(1)\n"})
	if res, err := r.Resolve(context.Background(), Request{Tree: missing, Build: []string{"python3", "run.py"}}); err == nil ||
		!strings.Contains(err.Error(), "murphy-no-such-distribution-zz") || res.Failed == "" {
		t.Fatalf("a distribution PyPI lacks: %+v %v", res, err)
	}
}
