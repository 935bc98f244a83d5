package patch

import (
	"errors"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// cleanPath checks a patch path and returns it in clean form: relative,
// slash-separated, no "." or ".." elements, no .git directory.
func cleanPath(p string) (string, error) {
	switch {
	case p == "":
		return "", errors.New("empty path")
	case strings.ContainsRune(p, 0):
		return "", errors.New("NUL in path")
	case strings.HasPrefix(p, "/"):
		return "", errors.New("absolute path")
	case strings.HasPrefix(p, "~"):
		return "", errors.New("home-relative path")
	}
	for _, el := range strings.Split(p, "/") {
		if el == ".." {
			return "", errors.New("path escapes the workspace (..)")
		}
	}
	c := path.Clean(p)
	c = strings.TrimPrefix(c, "./")
	if c == "." || c == "" {
		return "", errors.New("path names the workspace root")
	}
	for _, el := range strings.Split(c, "/") {
		if el == ".git" {
			return "", errors.New("path inside .git")
		}
	}
	return c, nil
}

// stripComponents removes the first n slash-separated components of p.
func stripComponents(p string, n int) string {
	for ; n > 0; n-- {
		i := strings.IndexByte(p, '/')
		if i < 0 {
			return ""
		}
		p = p[i+1:]
		for strings.HasPrefix(p, "/") {
			p = p[1:]
		}
	}
	return p
}

// buildNames are build configuration files by base name.
var buildNames = map[string]bool{}

func init() {
	for _, n := range strings.Fields(`
		Makefile makefile GNUmakefile Makefile.am Makefile.in configure configure.ac CMakeLists.txt
		meson.build meson_options.txt BUILD BUILD.bazel WORKSPACE MODULE.bazel build.sh
		go.mod go.sum go.work go.work.sum
		pom.xml mvnw mvnw.cmd build.gradle build.gradle.kts settings.gradle settings.gradle.kts gradle.properties gradlew gradlew.bat
		setup.py setup.cfg pyproject.toml tox.ini noxfile.py requirements.txt Pipfile Pipfile.lock poetry.lock MANIFEST.in
		package.json package-lock.json yarn.lock pnpm-lock.yaml tsconfig.json
		Cargo.toml Cargo.lock build.rs
		Dockerfile .travis.yml .gitlab-ci.yml Jenkinsfile appveyor.yml .appveyor.yml azure-pipelines.yml
		.gitattributes .gitignore`) {
		buildNames[n] = true
	}
}

// BuildConfig reports whether p (slash-separated, relative to the
// workspace root) is build configuration, which a repair must not change:
// build files and scripts (make and *.mk, CMake and *.cmake, autotools,
// Meson, Bazel, build.sh), module and dependency manifests and their lock
// files (Go, Maven and its wrapper, Gradle and gradle/, pip and
// requirements*.txt, setuptools, npm, Cargo), vendored dependencies
// (vendor/, .mvn/), CI configuration (.github/workflows, .github/actions,
// .circleci, .buildkite, .gitlab-ci.yml, Jenkinsfile...) and the
// repository's own (.gitattributes, .gitignore, anything under .git/).
func BuildConfig(p string) bool {
	p = strings.TrimPrefix(path.Clean(p), "./")
	els := strings.Split(p, "/")
	for i, el := range els[:len(els)-1] {
		switch {
		case el == "vendor" || el == ".mvn" || el == ".git":
			return true
		case i == 0 && (el == "gradle" || el == ".circleci" || el == ".buildkite"):
			return true
		case i == 0 && el == ".github" && len(els) > 2 && (els[1] == "workflows" || els[1] == "actions"):
			return true
		}
	}
	base := els[len(els)-1]
	return buildNames[base] || strings.HasSuffix(base, ".mk") || strings.HasSuffix(base, ".cmake") ||
		strings.HasPrefix(base, "requirements") && strings.HasSuffix(base, ".txt")
}

// DefaultProtected returns a Protected function that refuses what
// BuildConfig reports and every relative path that buildArgv names
// (["sh", "build.sh"] protects build.sh; an argument holding shell syntax,
// as "sh -c" takes, is parsed as a shell program and its words taken;
// "--file=x" protects x).
func DefaultProtected(buildArgv []string) func(string) bool {
	named := map[string]bool{}
	add := func(w string) {
		if i := strings.IndexByte(w, '='); i >= 0 && strings.HasPrefix(w, "-") {
			w = w[i+1:]
		}
		if w == "" || strings.HasPrefix(w, "-") {
			return
		}
		if c, err := cleanPath(w); err == nil {
			named[c] = true
		}
	}
	for _, arg := range buildArgv {
		if strings.ContainsAny(arg, " \t\n;&|<>()`'\"$") {
			for _, w := range shellWords(arg) {
				add(w)
			}
			continue
		}
		add(arg)
	}
	return func(p string) bool {
		c, err := cleanPath(p)
		if err != nil {
			return true // not a workspace path at all
		}
		return named[c] || BuildConfig(c)
	}
}

// shellWords are the words of a shell program (mvdan.cc/sh), quotes
// removed; a word that needs the environment or a command to expand is
// left out. A program that does not parse is split at white space.
func shellWords(prog string) []string {
	f, err := syntax.NewParser().Parse(strings.NewReader(prog), "")
	if err != nil {
		return strings.Fields(prog)
	}
	var out []string
	syntax.Walk(f, func(n syntax.Node) bool {
		w, ok := n.(*syntax.Word)
		if !ok {
			return true
		}
		if lit, ok := literalWord(w); ok {
			out = append(out, lit)
		}
		return false
	})
	return out
}

// literalWord is the text of a word made of literals and quoted literals
// only.
func literalWord(w *syntax.Word) (string, bool) {
	var b strings.Builder
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			b.WriteString(p.Value)
		case *syntax.SglQuoted:
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok {
					return "", false
				}
				b.WriteString(l.Value)
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}
