package patch

import (
	"errors"
	"path"
	"strings"
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

// DefaultProtected returns a Protected function that refuses the build
// configuration of a workspace: make (Makefile, makefile, GNUmakefile,
// *.mk), CMake (CMakeLists.txt, *.cmake), Go (go.mod, go.sum, go.work,
// go.work.sum, vendor/), Maven (pom.xml, .mvn/), Gradle (build.gradle[.kts],
// settings.gradle[.kts], gradle/, gradlew), Python (setup.py, setup.cfg,
// pyproject.toml, tox.ini), build.sh, anything under .git/, and every
// relative path that buildArgv names (["sh", "build.sh"] protects build.sh;
// an argument of "sh -c" is split into words; "--file=x" protects x).
func DefaultProtected(buildArgv []string) func(string) bool {
	named := map[string]bool{}
	add := func(w string) {
		w = strings.Trim(w, "'\"")
		if i := strings.IndexByte(w, '='); i >= 0 && strings.HasPrefix(w, "-") {
			w = w[i+1:]
		}
		if w == "" || strings.HasPrefix(w, "-") || strings.HasPrefix(w, "$") {
			return
		}
		if c, err := cleanPath(w); err == nil {
			named[c] = true
		}
	}
	for _, arg := range buildArgv {
		if strings.ContainsAny(arg, " \t\n;&|<>()") {
			for _, w := range strings.FieldsFunc(arg, func(r rune) bool {
				return strings.ContainsRune(" \t\n;&|<>()`", r)
			}) {
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
		if named[c] {
			return true
		}
		els := strings.Split(c, "/")
		for i, el := range els[:len(els)-1] {
			switch el {
			case "vendor", ".mvn", ".git":
				return true
			case "gradle":
				if i == 0 {
					return true
				}
			}
		}
		base := els[len(els)-1]
		switch base {
		case "Makefile", "makefile", "GNUmakefile",
			"CMakeLists.txt",
			"go.mod", "go.sum", "go.work", "go.work.sum",
			"pom.xml",
			"build.gradle", "build.gradle.kts", "settings.gradle", "settings.gradle.kts",
			"gradlew", "gradlew.bat", "gradle.properties",
			"setup.py", "setup.cfg", "pyproject.toml", "tox.ini",
			"build.sh":
			return true
		}
		return strings.HasSuffix(base, ".mk") || strings.HasSuffix(base, ".cmake")
	}
}
