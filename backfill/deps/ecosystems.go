package deps

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"golang.org/x/mod/modfile"

	"github.com/murphy-rl/murphy/compilefix/diag"
	"github.com/murphy-rl/murphy/sandbox"
)

// Ecosystems a resolution knows.
const (
	Maven  = "maven"
	Gradle = "gradle"
	Go     = "go"
	Python = "python"
)

//go:embed resolve_python.py
var resolvePython string

// resolverVersion changes when what a resolution does changes (part of
// its key: a cache made by another resolver is not reused).
const resolverVersion = "murphy-deps-1"

// Where a resolution job keeps what it resolved (under /tmp, exported).
const (
	jobDeps       = "deps"        // /tmp/deps/<ecosystem>
	jobGradleHome = "gradle-home" // GRADLE_USER_HOME; caches/modules-2 is kept
	jobHome       = "home"        // the tools' user home
)

// skipDirs hold no manifests of the project's own.
var skipDirs = map[string]bool{".git": true, "node_modules": true, "target": true, "build": true, ".gradle": true,
	"vendor": true, "__pycache__": true, ".tox": true, ".venv": true, "venv": true, ".mvn-repo": true}

// manifestOf reports the ecosystem a file of the snapshot declares
// dependencies for ("" = none).
func manifestOf(rel string) string {
	base := path.Base(rel)
	switch {
	case base == "pom.xml", strings.HasPrefix(rel, ".mvn/"):
		return Maven
	case strings.HasSuffix(base, ".gradle") || strings.HasSuffix(base, ".gradle.kts") || base == "gradle.properties" ||
		strings.HasPrefix(rel, "gradle/") && !strings.HasSuffix(base, ".jar") || strings.HasPrefix(rel, "buildSrc/"):
		return Gradle
	case base == "go.mod" || base == "go.sum" || base == "go.work" || base == "go.work.sum":
		return Go
	case requirementsFile(rel), base == "setup.py" && path.Dir(rel) == ".", base == "setup.cfg" && path.Dir(rel) == ".",
		base == "pyproject.toml" && path.Dir(rel) == ".":
		return Python
	}
	return ""
}

// requirementsFile reports pip requirement files: requirements*.txt and
// *requirements.txt anywhere, and the .txt files of a requirements/
// directory.
func requirementsFile(rel string) bool {
	base := strings.ToLower(path.Base(rel))
	if path.Ext(base) != ".txt" {
		return false
	}
	stem := strings.TrimSuffix(base, ".txt")
	return strings.HasPrefix(stem, "requirements") || strings.HasSuffix(stem, "requirements") ||
		strings.HasSuffix(stem, "-requirements") || strings.Contains(path.Dir(rel), "requirements")
}

// manifests lists the snapshot's dependency manifests by ecosystem
// (slash paths, sorted).
func manifests(tree string) (map[string][]string, error) {
	out := map[string][]string{}
	err := filepath.WalkDir(tree, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(tree, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && skipDirs[d.Name()] {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if eco := manifestOf(rel); eco != "" {
			out[eco] = append(out[eco], rel)
		}
		return nil
	})
	for _, fs := range out {
		sort.Strings(fs)
	}
	return out, err
}

// tool is the normalised name of a command's program.
func tool(argv []string) string {
	if len(argv) == 0 {
		return ""
	}
	return strings.ToLower(path.Base(argv[0]))
}

// uses reports whether a command runs the ecosystem's tool, itself or in
// a shell line.
func uses(eco string, argv []string) bool {
	if runs(eco, argv) {
		return true
	}
	t := tool(argv)
	if (t == "sh" || t == "bash") && len(argv) > 2 && argv[1] == "-c" {
		for _, line := range strings.FieldsFunc(argv[2], func(r rune) bool { return r == ';' || r == '&' || r == '|' || r == '\n' }) {
			if w := strings.Fields(line); len(w) > 0 && runs(eco, w) {
				return true
			}
		}
	}
	return false
}

// runs reports whether argv is the ecosystem's tool.
func runs(eco string, argv []string) bool {
	t := tool(argv)
	switch eco {
	case Maven:
		return t == "mvn" || t == "mvnw" || t == "mvn.cmd"
	case Gradle:
		return t == "gradle" || t == "gradlew"
	case Go:
		return t == "go"
	case Python:
		if diag.NormalizeTool(argv[0]) == diag.ToolPython {
			for _, a := range argv[1:] {
				if a == "compileall" || a == "py_compile" {
					return false // byte-compiles the sources, imports nothing
				}
			}
			return true
		}
		switch t {
		case "pytest", "py.test", "tox", "nox", "coverage", "nosetests", "pip", "pip3":
			return true
		}
	}
	return false
}

// Detect returns the ecosystems a snapshot's build needs resolved: those
// the snapshot has manifests for and whose tool the build or tests command
// runs (a shell script or make counts for all).
func Detect(tree string, build, tests []string) ([]string, map[string][]string, error) {
	ms, err := manifests(tree)
	if err != nil {
		return nil, nil, err
	}
	var ecos []string
	for _, eco := range []string{Maven, Gradle, Go, Python} {
		if len(ms[eco]) > 0 && (uses(eco, build) || len(tests) > 0 && uses(eco, tests)) {
			if eco == Go && !requiresModules(tree, ms[Go]) {
				continue // nothing to download
			}
			ecos = append(ecos, eco)
		}
	}
	return ecos, ms, nil
}

// requiresModules reports whether a go.mod of the snapshot requires a
// module (one that cannot be read counts: go will say why).
func requiresModules(tree string, files []string) bool {
	for _, rel := range files {
		if path.Base(rel) != "go.mod" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(tree, filepath.FromSlash(rel)))
		if err != nil {
			return true
		}
		f, err := modfile.ParseLax(rel, b, nil)
		if err != nil || len(f.Require) > 0 {
			return true
		}
	}
	return false
}

// Key names a resolution: the resolver, the repositories, the commands
// and the content of every manifest of the ecosystems resolved. Two
// snapshots that differ only in their sources (an injected error, the
// two sides of a fix) share it.
func Key(tree string, ecos []string, ms map[string][]string, repos Repositories, build, tests []string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%q\x00%q\x00%q\x00", resolverVersion, repos, ecos, build, tests)
	for _, eco := range ecos {
		for _, rel := range ms[eco] {
			b, err := os.ReadFile(filepath.Join(tree, filepath.FromSlash(rel)))
			if err != nil {
				return "", err
			}
			sum := sha256.Sum256(b)
			fmt.Fprintf(h, "%s\x00%s\x00%x\x00", eco, rel, sum)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// offlineFlags are the flags that keep Maven and Gradle from resolving.
var offlineFlags = map[string]bool{"-o": true, "--offline": true}

// online is argv without the offline flags of Maven and Gradle: a
// resolution runs the build to let its tool fetch what it needs.
func online(argv []string) []string {
	if !uses(Maven, argv) && !uses(Gradle, argv) {
		return append([]string(nil), argv...)
	}
	out := []string{argv[0]}
	for _, a := range argv[1:] {
		if !offlineFlags[a] {
			out = append(out, a)
		}
	}
	return out
}

// mirrorURL is the mirror as a resolution job reaches it.
const mirrorURL = "http://" + sandbox.NetworkAddr

// mavenSettings points every repository of a Maven build at the mirror;
// the mirror's id is "central" so that the metadata Maven keeps is named
// as an offline build looks it up.
var mavenSettings = `<settings xmlns="http://maven.apache.org/SETTINGS/1.0.0">
  <localRepository>/tmp/` + jobDeps + `/` + sandbox.DepsMaven + `</localRepository>
  <interactiveMode>false</interactiveMode>
  <mirrors>
    <mirror><id>central</id><mirrorOf>*</mirrorOf><url>` + mirrorURL + routeMaven + `</url></mirror>
  </mirrors>
</settings>
`

// gradleInit points every Maven repository of a Gradle build (its
// plugins' and its projects') at the mirror.
var gradleInit = `def murphyMirror = '` + mirrorURL + routeMaven + `'
def murphyPoint = { repos ->
  repos.all { r ->
    if (r instanceof MavenArtifactRepository) {
      r.url = murphyMirror
      if (r.metaClass.respondsTo(r, 'setAllowInsecureProtocol', Boolean)) { r.allowInsecureProtocol = true }
    }
  }
}
settingsEvaluated { s ->
  murphyPoint(s.pluginManagement.repositories)
  if (s.metaClass.hasProperty(s, 'dependencyResolutionManagement')) { murphyPoint(s.dependencyResolutionManagement.repositories) }
}
allprojects {
  murphyPoint(buildscript.repositories)
  murphyPoint(repositories)
}
`

// job is what a resolution job runs: the commands, their environment and
// files.
type job struct {
	commands [][]string
	// resolvers[i]: command i is a resolver whose failure is a failed
	// resolution (the build's own commands may fail to compile).
	resolvers []bool
	env       []string
	files     map[string]string
}

// plan builds the resolution job of a snapshot.
func plan(ecos []string, ms map[string][]string, build, tests []string) job {
	j := job{files: map[string]string{}}
	env := map[string]string{"HOME": "/tmp/" + jobHome}
	for _, eco := range ecos {
		switch eco {
		case Maven:
			j.files[jobHome+"/.m2/settings.xml"] = mavenSettings
			env["MAVEN_OPTS"] = "-Duser.home=/tmp/" + jobHome + " -Dmaven.repo.local=/tmp/" + jobDeps + "/" + sandbox.DepsMaven +
				" -Dmaven.wagon.http.retryHandler.count=2"
		case Gradle:
			j.files[jobGradleHome+"/init.d/murphy-mirror.gradle"] = gradleInit
			env["GRADLE_USER_HOME"] = "/tmp/" + jobGradleHome
			env["GRADLE_OPTS"] = "-Duser.home=/tmp/" + jobHome + " -Dorg.gradle.daemon=false"
		case Go:
			env["GOPROXY"] = mirrorURL + strings.TrimSuffix(routeGo, "/")
			env["GOSUMDB"] = "sum.golang.org"
			env["GONOSUMDB"] = ""
			env["GOMODCACHE"] = "/tmp/" + jobDeps + "/" + sandbox.DepsGo
		case Python:
			env["PIP_INDEX_URL"] = mirrorURL + routePyPI
			// the build after the resolver sees what it installed, as
			// builds from the cache will
			env["PYTHONPATH"] = "/tmp/" + jobDeps + "/" + sandbox.DepsPython
			env["PIP_CACHE_DIR"] = "/tmp/pip-cache"
			env["PYTHONDONTWRITEBYTECODE"] = "1"
			j.files["murphy-resolve/resolve_python.py"] = resolvePython
			var reqs []string
			for _, m := range ms[Python] {
				if requirementsFile(m) {
					reqs = append(reqs, m)
				}
			}
			j.commands = append(j.commands, append([]string{"python3", "/tmp/murphy-resolve/resolve_python.py", "/tmp/" + jobDeps + "/" + sandbox.DepsPython}, reqs...))
			j.resolvers = append(j.resolvers, true)
		}
	}
	for _, c := range [][]string{build, tests} {
		if len(c) > 0 {
			j.commands = append(j.commands, online(c))
			j.resolvers = append(j.resolvers, false)
		}
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		j.env = append(j.env, k+"="+env[k])
	}
	return j
}

// unresolvedRE matches what resolvers and build tools print when a
// dependency cannot be found or fetched; missingRE also what an offline
// build prints when it would fetch one.
var (
	unresolvedRE = regexp.MustCompile(`(?m)^.*(?:` + strings.Join(unresolvedPhrases, "|") + `).*$`)
	missingRE    = regexp.MustCompile(`(?m)^.*(?:` + strings.Join(append([]string{`go: downloading `}, unresolvedPhrases...), "|") + `).*$`)
)

var unresolvedPhrases = []string{
	`cannot find module providing package`,
	`no required module provides package`,
	`missing go\.sum entry`,
	`module lookup disabled by GOPROXY`,
	`verifying \S+: checksum mismatch`,
	`dial tcp: lookup`,
	`ModuleNotFoundError: No module named`,
	`ImportError: No module named`,
	`No matching distribution found`,
	`Could not find a version that satisfies`,
	`ResolutionImpossible`,
	`Could not resolve dependencies`,
	`Could not find artifact`,
	`Could not transfer artifact`,
	`Non-resolvable parent POM`,
	`Plugin \S+ or one of its dependencies could not be resolved`,
	`Could not resolve all (?:files|dependencies|artifacts)`,
	`Could not resolve plugin`,
	`Cannot access \S+ in offline mode`,
	`has not been downloaded from it before`,
	`was not found in the pkg-config search path`,
	`Could NOT find \w+`,
	`no matching package named`,
	`failed to (?:download|get|load source for) .*dependenc`,
	`: command not found`,
	`: not found$`,
	`Unable to locate a Java Runtime`,
	`fatal error: [^:\n]+: No such file or directory`,
}

// MissingMessage returns the line of an offline build's output that says
// a dependency is missing (or would be downloaded).
func MissingMessage(output string) (string, bool) { return firstLine(missingRE, output) }

// unresolved returns the line of a resolution's output that says a
// dependency could not be found or fetched.
func unresolved(output string) (string, bool) { return firstLine(unresolvedRE, output) }

func firstLine(re *regexp.Regexp, output string) (string, bool) {
	m := re.FindString(output)
	if m == "" {
		return "", false
	}
	return strings.TrimSpace(diag.StripANSI(m)), true
}

// toolMessage is a failed resolver's own account: its error lines, else
// the tail of its output.
func toolMessage(output string) string {
	var errs []string
	for _, l := range strings.Split(diag.StripANSI(output), "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "ERROR:") || strings.HasPrefix(t, "[ERROR]") || strings.HasPrefix(t, "error:") ||
			strings.HasPrefix(t, "go: ") || strings.HasPrefix(t, "FAILURE:") {
			errs = append(errs, t)
		}
	}
	s := strings.Join(errs, "\n")
	if s == "" {
		s = strings.TrimSpace(output)
		if len(s) > 1500 {
			s = "…" + s[len(s)-1500:]
		}
	}
	if len(s) > 1500 {
		s = s[:1500] + "…"
	}
	return s
}
