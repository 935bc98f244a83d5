package patch

import (
	"testing"
)

func TestBuildConfig(t *testing.T) {
	t.Parallel()
	for p, want := range map[string]bool{
		"Makefile": true, "src/Makefile": true, "rules.mk": true, "cmake/x.cmake": true, "configure": true,
		"go.mod": true, "vendor/a/b.go": true, "lib/vendor/x.c": true, "pom.xml": true, ".mvn/wrapper/x": true,
		"gradle/wrapper/gradle-wrapper.properties": true, "requirements-dev.txt": true, "package.json": true,
		"Cargo.lock": true, ".github/workflows/ci.yml": true, ".circleci/config.yml": true, ".gitignore": true,
		".git/HEAD": true, "./setup.py": true,
		"src/main.c": false, "src/gradle/x.java": false, ".github/ISSUE_TEMPLATE/bug.md": false, "docs/requirements.md": false,
		"lib/setup_utils.py": false, "src/Makefile.c": false,
	} {
		if got := BuildConfig(p); got != want {
			t.Errorf("BuildConfig(%q) = %v, want %v", p, got, want)
		}
	}
}

// TestProtectedShellWords reads the paths a build command names the way
// a shell reads them.
func TestProtectedShellWords(t *testing.T) {
	t.Parallel()
	p := DefaultProtected([]string{"sh", "-c", `cd 'src dir' && ./"tools/gen.sh" --out=gen.c > log.txt; make -f "$MK" all`})
	for path, want := range map[string]bool{
		"src dir": true, "tools/gen.sh": true, "gen.c": true, "log.txt": true,
		"'src": false, "dir'": false, `./"tools/gen.sh"`: false, "$MK": false, "all": true, "src/main.c": false,
	} {
		if got := p(path); got != want {
			t.Errorf("%q: %v, want %v", path, got, want)
		}
	}
	if q := DefaultProtected([]string{"sh", "-c", "make ((("}); !q("make") {
		t.Error("a command that does not parse protects nothing")
	}
}
