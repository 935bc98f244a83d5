package diag

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/murphy-rl/murphy/topics"
)

// pyProject is a package whose module has a syntax error, reached through
// an import chain from setup.py while another exception is handled (the
// shape of a CI log's "During handling of the above exception" failure).
var pyProject = map[string]string{
	"setup.py":          "try:\n    import not_installed_xyz\nexcept ImportError:\n    import pkg\n",
	"pkg/__init__.py":   "from .core import version\n",
	"pkg/core.py":       "version = 1\n\ntry:\n    pass\nexcept ValueError, e:\n    pass\n",
	"tabs.py":           "def f():\n\tif True:\n        return 1\n",
	"test/test_core.py": "import pkg\n\ndef test_v():\n    assert pkg.version == 1\n",
	"test/test_tabs.py": "import tabs\n",
	"test/conftest.py":  "import sys, os\nsys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))\n",
	"run_json.py":       "import json\n\njson.loads('{')\n",
}

// findDiag returns the diagnostic with code, or fails.
func findDiag(t *testing.T, ds []topics.Diagnostic, code string) topics.Diagnostic {
	t.Helper()
	for _, d := range ds {
		if d.Code == code {
			return d
		}
	}
	t.Fatalf("no %s in%s", code, showAll(ds))
	return topics.Diagnostic{}
}

// TestPythonSyntaxErrorAtItsHeader: a SyntaxError raised through an import
// chain, inside the second of two chained tracebacks, is located at the
// `File "X", line N` header Python prints for it, not at the first frame
// (setup.py); with the workspace root and without it (a CI log, where every
// path is absolute).
func TestPythonSyntaxErrorAtItsHeader(t *testing.T) {
	t.Parallel()
	py := lookTool(t, "python3")
	dir := tempRoot(t)
	writeFiles(t, dir, pyProject)
	out := build(t, dir, []string{"PYTHONDONTWRITEBYTECODE=1"}, py, filepath.Join(dir, "setup.py"))
	if !strings.Contains(string(out), "During handling of the above exception") {
		t.Fatalf("not a chained traceback:\n%s", out)
	}
	for _, root := range []string{dir, ""} {
		ds := Parse("python", out, root)
		syn := findDiag(t, ds, "SyntaxError")
		if !strings.HasSuffix(syn.File, "pkg/core.py") || syn.Line != 5 {
			t.Errorf("root %q: SyntaxError at %s:%d, want pkg/core.py:5%s", root, syn.File, syn.Line, showAll(ds))
		}
		first := findDiag(t, ds, "ModuleNotFoundError")
		if !strings.HasSuffix(first.File, "setup.py") || first.Line != 2 {
			t.Errorf("root %q: the first traceback's error at %s:%d, want setup.py:2", root, first.File, first.Line)
		}
	}
	if ds := Parse("python", out, dir); findDiag(t, ds, "SyntaxError").File != "pkg/core.py" {
		t.Errorf("under the root the path is relative: %s", showAll(ds))
	}
	tab := build(t, dir, nil, py, "-c", "import tabs")
	if d := findDiag(t, Parse("", tab, dir), "TabError"); d.File != "tabs.py" || d.Line != 3 {
		t.Errorf("TabError at %s:%d, want tabs.py:3", d.File, d.Line)
	}
}

// TestPythonPytestQuotedError: pytest reports a module that does not
// compile as a collection error whose lines it quotes behind "E   "; the
// diagnostic is the SyntaxError at its header.
func TestPythonPytestQuotedError(t *testing.T) {
	t.Parallel()
	py := lookTool(t, "python3")
	if err := exec.Command(py, "-c", "import pytest").Run(); err != nil {
		t.Skip("pytest is not installed")
	}
	dir := tempRoot(t)
	writeFiles(t, dir, pyProject)
	out := build(t, dir, []string{"PYTHONDONTWRITEBYTECODE=1"}, py, "-m", "pytest", "-p", "no:cacheprovider", "-q", "test/test_core.py", "test/test_tabs.py")
	if !strings.Contains(string(out), "E   ") {
		t.Fatalf("no quoted error in pytest's output:\n%s", out)
	}
	ds := Parse("", out, dir)
	if d := findDiag(t, ds, "SyntaxError"); d.File != "pkg/core.py" || d.Line != 5 {
		t.Errorf("SyntaxError at %s:%d, want pkg/core.py:5%s", d.File, d.Line, showAll(ds))
	}
	if d := findDiag(t, ds, "TabError"); d.File != "tabs.py" || d.Line != 3 {
		t.Errorf("TabError at %s:%d, want tabs.py:3%s", d.File, d.Line, showAll(ds))
	}
}

// TestPythonTracebackExcerpts: tracebacks as CI logs print them (PyPy and
// CPython 2 and 3 on Travis, a tox run under coverage), located where
// Python says.
func TestPythonTracebackExcerpts(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, out    string
		file         string
		line         int
		code, substr string
	}{
		{"pypy3 import chain", "Traceback (most recent call last):\n" +
			"  File \"setup.py\", line 80, in <module>\n" +
			"    from mypkg import __version__\n" +
			"  File \"/home/travis/build/u/mypkg/mypkg/__init__.py\", line 3, in <module>\n" +
			"    from .io import read\n" +
			"  File \"/home/travis/build/u/mypkg/mypkg/io.py\", line 41\n" +
			"    except IOError, e:\n" +
			"                  ^\n" +
			"SyntaxError: invalid syntax\n",
			"/home/travis/build/u/mypkg/mypkg/io.py", 41, "SyntaxError", "invalid syntax"},
		{"coverage wraps the run", "Traceback (most recent call last):\n" +
			"  File \"/home/travis/virtualenv/python3.6/bin/coverage\", line 11, in <module>\n" +
			"    sys.exit(main())\n" +
			"  File \"/home/travis/virtualenv/python3.6/lib/python3.6/site-packages/coverage/cmdline.py\", line 756, in main\n" +
			"    status = CoverageScript().command_line(argv)\n" +
			"  File \"/home/travis/virtualenv/python3.6/lib/python3.6/site-packages/coverage/execfile.py\", line 121, in run_python_module\n" +
			"    exec(code, main_mod.__dict__)\n" +
			"  File \"/home/travis/build/u/p/run_tests.py\", line 9, in <module>\n" +
			"    check(parse(\"x\"))\n" +
			"  File \"/home/travis/build/u/p/p/parser.py\", line 88, in parse\n" +
			"    return tokens[0]\n" +
			"IndexError: list index out of range\n",
			"/home/travis/build/u/p/p/parser.py", 88, "IndexError", "list index out of range"},
		{"tox, python 3.11 carets", "py311: commands[0]> python -m mypkg\n" +
			"Traceback (most recent call last):\n" +
			"  File \"<frozen runpy>\", line 198, in _run_module_as_main\n" +
			"  File \"<frozen runpy>\", line 88, in _run_code\n" +
			"  File \"/builds/g/p/src/mypkg/__main__.py\", line 1, in <module>\n" +
			"    from .cli import main\n" +
			"  File \"/builds/g/p/src/mypkg/cli.py\", line 7\n" +
			"    def main(:\n" +
			"             ^\n" +
			"SyntaxError: invalid syntax\n" +
			"py311: exit 1 (0.05 seconds) /builds/g/p> python -m mypkg pid=81\n",
			"/builds/g/p/src/mypkg/cli.py", 7, "SyntaxError", "invalid syntax"},
		{"indentation, frozen innermost frame", "Traceback (most recent call last):\n" +
			"  File \"/w/t.py\", line 1, in <module>\n" +
			"    import m\n" +
			"  File \"<frozen importlib._bootstrap>\", line 1176, in _find_and_load\n" +
			"  File \"/w/m.py\", line 4\n" +
			"    return x\n" +
			"IndentationError: unexpected indent\n",
			"/w/m.py", 4, "IndentationError", "unexpected indent"},
	} {
		ds := Parse("", []byte(c.out), "")
		d := findDiag(t, ds, c.code)
		if d.File != c.file || d.Line != c.line || !strings.Contains(d.Message, c.substr) {
			t.Errorf("%s: %s:%d %q, want %s:%d %q", c.name, d.File, d.Line, d.Message, c.file, c.line, c.substr)
		}
	}
}

// TestPythonRuntimeErrorInTheWorkspace: with the root known, an exception
// raised in the standard library is located at the workspace's innermost
// frame (feedback quotes the project's source); without it, at the
// innermost frame.
func TestPythonRuntimeErrorInTheWorkspace(t *testing.T) {
	t.Parallel()
	py := lookTool(t, "python3")
	dir := tempRoot(t)
	writeFiles(t, dir, pyProject)
	out := build(t, dir, nil, py, "run_json.py")
	if d := findDiag(t, Parse("", out, dir), "json.decoder.JSONDecodeError"); d.File != "run_json.py" || d.Line != 3 {
		t.Errorf("with the root: %s:%d", d.File, d.Line)
	}
	if d := findDiag(t, Parse("", out, ""), "json.decoder.JSONDecodeError"); !strings.HasSuffix(d.File, "json/decoder.py") {
		t.Errorf("without the root: %s:%d, want the innermost frame (json/decoder.py)", d.File, d.Line)
	}
	for _, c := range []struct {
		file string
		want bool
	}{
		{"/usr/lib/python3.11/json/decoder.py", true},
		{"/home/travis/virtualenv/python3.2.5/lib/python3.2/site-packages/coverage/annotate.py", true},
		{"C:\\Python39\\Lib\\site-packages\\x\\y.py", true},
		{"/usr/lib/python3/dist-packages/_pytest/python.py", true},
		{"/home/travis/build/u/python3-utils/src/a.py", false},
		{"pkg/core.py", false},
	} {
		if got := InstalledPackage(c.file); got != c.want {
			t.Errorf("InstalledPackage(%q) = %v", c.file, got)
		}
	}
}
