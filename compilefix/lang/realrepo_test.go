package lang

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const reposDir = "../../../shared/data/repos"

// repoFiles reads the regular files of a reference repository: a git
// archive (.tar.gz) or the given ref of a git bundle.
func repoFiles(t *testing.T, name, ref string) map[string][]byte {
	t.Helper()
	p := filepath.Join(reposDir, name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("reference repository missing: %v", err)
	}
	var r io.Reader
	if strings.HasSuffix(name, ".bundle") {
		if _, err := exec.LookPath("git"); err != nil {
			t.Skip("git is not installed")
		}
		dir := filepath.Join(t.TempDir(), "clone")
		if out, err := exec.Command("git", "clone", "-q", "--bare", p, dir).CombinedOutput(); err != nil {
			t.Fatalf("git clone: %v\n%s", err, out)
		}
		out, err := exec.Command("git", "--git-dir", dir, "archive", "--format=tar", ref).Output()
		if err != nil {
			t.Fatalf("git archive: %v", err)
		}
		r = bytes.NewReader(out)
	} else {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	}
	files := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[hdr.Name] = b
	}
	return files
}

// TestRealRepos reads every source file of the reference repositories:
// the tokens cover every byte that is not white space, in order and
// without overlap; Go, Java and Python files (which build) parse without
// an error; the functions named are found. C files use macros the grammar
// cannot expand (cJSON's CJSON_PUBLIC(type) name(...)), so their parses
// may hold errors, but the definitions are still found.
func TestRealRepos(t *testing.T) {
	t.Parallel()
	cases := []struct {
		archive, ref string
		lang         Language
		want         map[string][]string // file → functions it defines
	}{
		{"cJSON.tar.gz", "", C, map[string][]string{"cJSON/cJSON.c": {"cJSON_Parse", "cJSON_Delete", "print_value", "parse_string"}}},
		{"google-uuid.bundle", "HEAD", Go, map[string][]string{"uuid.go": {"Parse", "ParseBytes", "String"}}},
		{"more-itertools.tar.gz", "", Python, map[string][]string{"more-itertools/more_itertools/more.py": {"chunked", "windowed", "__init__"}}},
		{"rxjava-jdbc.bundle", "fix", Java, map[string][]string{"src/main/java/com/github/davidmoten/rx/jdbc/Util.java": {"autoMap", "mapObject"}}},
	}
	for _, tc := range cases {
		t.Run(string(tc.lang), func(t *testing.T) {
			t.Parallel()
			n := 0
			for name, src := range repoFiles(t, tc.archive, tc.ref) {
				if ForPath(name) != tc.lang {
					continue
				}
				n++
				f, err := Parse(tc.lang, src)
				if err != nil {
					t.Fatal(err)
				}
				if f.Err != nil && tc.lang != C {
					t.Errorf("%s: %v", name, f.Err)
				}
				checkCoverage(t, name, f)
				if want, ok := tc.want[name]; ok {
					defined := map[string]bool{}
					for _, fn := range f.Functions() {
						defined[fn.Name] = defined[fn.Name] || fn.Defined()
					}
					for _, w := range want {
						if !defined[w] {
							t.Errorf("%s: %s not found among %d functions", name, w, len(defined))
						}
					}
				}
			}
			if n < 5 {
				t.Fatalf("only %d %s files", n, tc.lang)
			}
		})
	}
}

// checkCoverage checks that f's tokens are in order, do not overlap and
// leave only white space (and backslash line continuations) uncovered.
func checkCoverage(t *testing.T, name string, f *File) {
	t.Helper()
	pos := 0
	for _, tk := range f.Tokens {
		if tk.Kind == Newline {
			continue
		}
		if tk.Start < pos {
			t.Fatalf("%s:%d: token %q overlaps the one before", name, tk.Line, tk.Text)
		}
		if gap := strings.Trim(string(f.Src[pos:tk.Start]), " \t\r\n\f\v\\"); gap != "" {
			t.Fatalf("%s:%d: %q is in no token", name, f.Line(pos), gap)
		}
		pos = tk.End
	}
	if gap := strings.TrimSpace(string(f.Src[pos:])); gap != "" {
		t.Fatalf("%s: %q at the end is in no token", name, gap)
	}
}
