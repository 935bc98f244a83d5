package compilefix

import (
	_ "embed"
	"fmt"
	"path"
	"strings"

	"github.com/murphy-rl/murphy/topics"
)

// recipe is how one language's patched tree is built into comparable
// artifacts.
type recipe struct {
	lang string
	// warm: the build starts from the toolchain's warm cache (Go).
	warm bool
	// source reports whether a changed file is covered by the artifacts;
	// other changed files are compared byte for byte.
	source func(p string) bool
	// commands run at the workspace root; they leave the artifacts in
	// /tmp/equiv.
	commands func(cf *topics.CompileFix, sources []string) [][]string
	// normalise reads the artifacts (the export of /tmp/equiv) and returns
	// their digests, or why they cannot be compared.
	normalise func(dir string, output []byte, sources []string) (digests map[string]string, unknown string, err error)
}

// recipeFor picks the recipe by the task's language, else its toolchain.
func recipeFor(task *topics.Task) *recipe {
	lang := strings.ToLower(task.Language)
	if lang == "" && task.CompileFix != nil {
		lang = strings.ToLower(toolOf(task.CompileFix))
	}
	switch lang {
	case "c", "cpp", "c++", "gcc", "clang", "cc", "make":
		return cRecipe
	case "go":
		return goRecipe
	case "java", "javac", "mvn", "maven", "gradle":
		return javaRecipe
	case "python", "python3":
		return pythonRecipe
	}
	return nil
}

func hasExt(p string, exts ...string) bool {
	e := strings.ToLower(path.Ext(p))
	for _, x := range exts {
		if e == x {
			return true
		}
	}
	return false
}

// collect copies the files find selects (in the workspace and in /tmp,
// where some builds write their output) into /tmp/equiv, keeping their
// paths.
func collect(selector string) []string {
	return []string{"sh", "-c", "mkdir -p /tmp/equiv && find . /tmp " +
		`\( -path /tmp/equiv -o -path /tmp/gocache -o -path /tmp/gopath -o -path /tmp/home -o -path /tmp/m2 \) -prune -o ` +
		"-type f " + selector + " -exec cp --parents {} /tmp/equiv/ \\;"}
}

// C and C++: the task's build, then every object file (and executable)
// it left. Objects are compared without debug information (ELF sections
// that are not loaded are dropped).
var cRecipe = &recipe{
	lang: "c",
	source: func(p string) bool {
		return hasExt(p, ".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx", ".inc")
	},
	commands: func(cf *topics.CompileFix, _ []string) [][]string {
		return [][]string{cf.Build, collect(`\( -name '*.o' -o -perm -u+x \)`)}
	},
	normalise: normaliseELF,
}

// Go: the packages of the module compiled to assembly listings (go build
// -gcflags=-S), positions and DWARF dropped.
var goRecipe = &recipe{
	lang: "go", warm: true,
	source: func(p string) bool { return hasExt(p, ".go") && !strings.HasSuffix(p, "_test.go") },
	commands: func(*topics.CompileFix, []string) [][]string {
		return [][]string{{"sh", "-c", "mkdir -p /tmp/equiv && go build -trimpath -gcflags='-S -dwarf=false' ./... 2>/tmp/equiv/asm.txt " +
			"|| { tail -c 2000 /tmp/equiv/asm.txt >&2; exit 1; }"}}
	},
	normalise: normaliseGoListing,
}

// Java: the task's build, then every class file it left, compared without
// LineNumberTable, SourceFile and SourceDebugExtension.
var javaRecipe = &recipe{
	lang:   "java",
	source: func(p string) bool { return hasExt(p, ".java") },
	commands: func(cf *topics.CompileFix, _ []string) [][]string {
		return [][]string{cf.Build, collect(`-name '*.class'`)}
	},
	normalise: normaliseClasses,
}

//go:embed equiv_python.py
var pythonDigestScript string

// Python: each changed module compiled to its code object, compared
// recursively without line tables (equiv_python.py).
var pythonRecipe = &recipe{
	lang:   "python",
	source: func(p string) bool { return hasExt(p, ".py", ".pyi") },
	commands: func(_ *topics.CompileFix, sources []string) [][]string {
		return [][]string{append([]string{"python3", "-I", "-S", "-W", "ignore", "-c", pythonDigestScript, "/tmp/equiv/digests.txt"}, sources...)}
	},
	normalise: normalisePython,
}

// normalisePython reads the script's "digest path" lines.
func normalisePython(dir string, _ []byte, sources []string) (map[string]string, string, error) {
	files, err := readArtifacts(dir, func(rel string, _ []byte) bool { return rel == "digests.txt" })
	if err != nil {
		return nil, "", err
	}
	text, ok := files["digests.txt"]
	if !ok {
		return nil, "the digest script wrote nothing", nil
	}
	out := map[string]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(text)), "\n") {
		digest, p, ok := strings.Cut(line, " ")
		if !ok {
			return nil, fmt.Sprintf("unreadable digest line %q", line), nil
		}
		out[p] = digest
	}
	for _, s := range sources {
		if _, ok := out[s]; !ok {
			return nil, "no digest of " + s, nil
		}
	}
	return out, "", nil
}
