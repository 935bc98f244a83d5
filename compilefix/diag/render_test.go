package diag

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/murphy-rl/murphy/topics"
)

func TestHeader(t *testing.T) {
	for _, c := range []struct {
		d    topics.Diagnostic
		want string
	}{
		{topics.Diagnostic{Severity: "error", File: "src/main.rs", Line: 7, Column: 20, Code: "E0425", Message: "cannot find value `y`"},
			"src/main.rs:7:20: error[E0425]: cannot find value `y`"},
		{topics.Diagnostic{Severity: "warning", File: "a.c", Line: 3, Message: "unused"}, "a.c:3: warning: unused"},
		{topics.Diagnostic{File: "c.c", Message: "undefined reference to `bar'"}, "c.c: error: undefined reference to `bar'"},
		{topics.Diagnostic{Code: "TS18003", Message: "No inputs were found"}, "error[TS18003]: No inputs were found"},
		{topics.Diagnostic{Severity: "error", File: "A.java", Line: 4, Column: 17, Message: "cannot find symbol\nsymbol: class Missing"},
			"A.java:4:17: error: cannot find symbol"},
	} {
		if got := Header(c.d); got != c.want {
			t.Errorf("Header = %q, want %q", got, c.want)
		}
	}
}

// TestRenderParsed renders what Parse made of a real javac build:
// headers, folded continuation lines and excerpts from the workspace.
func TestRenderParsed(t *testing.T) {
	root := tempRoot(t)
	writeFiles(t, root, map[string]string{
		"src/App.java": "class App {\n    void f() {\n        int x = foo(3);\n    }\n}\n",
	})
	out := "src/App.java:3: error: cannot find symbol\n        int x = foo(3);\n                ^\n" +
		"  symbol:   method foo(int)\n  location: class App\n1 error\n"
	ds := Parse("javac", []byte(out), root)
	got := Render(ds, root, 0)
	// two lines of context on each side
	want := "src/App.java:3:17: error: cannot find symbol\n" +
		"    symbol: method foo(int)\n" +
		"    location: class App\n" +
		"    1 | class App {\n" +
		"    2 |     void f() {\n" +
		"  > 3 |         int x = foo(3);\n" +
		"      |                 ^\n" +
		"    4 |     }\n" +
		"    5 | }\n"
	if got != want {
		t.Errorf("Render:\n%s\nwant:\n%s", got, want)
	}
	// A carried excerpt is used as is; no root, no excerpt.
	d := ds[0]
	d.Excerpt = "> 3 | carried\n"
	if got := Render([]topics.Diagnostic{d}, "", 0); !strings.HasSuffix(got, "  > 3 | carried\n") {
		t.Errorf("carried excerpt: %q", got)
	}
	if got := Render(ds, "", 0); strings.Contains(got, "|") {
		t.Errorf("no root: %q", got)
	}
}

var leftOutRE = regexp.MustCompile(`\.\.\. (\d+) more diagnostics? left out \.\.\.`)

// TestRenderCap: the head and the tail of a long list are kept, with the
// number left out between them, and the text never exceeds maxBytes.
func TestRenderCap(t *testing.T) {
	var ds []topics.Diagnostic
	for i := 1; i <= 50; i++ {
		ds = append(ds, topics.Diagnostic{Severity: "error", File: "main.go", Line: i, Column: 2, Message: fmt.Sprintf("undefined: name%02d", i)})
	}
	full := Render(ds, "", 0)
	if strings.Count(full, "\n") != 50 {
		t.Fatalf("full render: %q", full)
	}
	got := Render(ds, "", 600)
	if len(got) > 600 {
		t.Errorf("%d bytes", len(got))
	}
	m := leftOutRE.FindStringSubmatch(got)
	if m == nil {
		t.Fatalf("no left-out line: %q", got)
	}
	shown := strings.Count(got, "undefined: name")
	if n, _ := strconv.Atoi(m[1]); n+shown != 50 {
		t.Errorf("%d shown + %s left out != 50:\n%s", shown, m[1], got)
	}
	if !strings.HasPrefix(got, "main.go:1:2: error: undefined: name01\n") || !strings.HasSuffix(got, "main.go:50:2: error: undefined: name50\n") {
		t.Errorf("head or tail missing:\n%s", got)
	}
	if strings.Index(got, "name02") > strings.Index(got, "left out") {
		t.Errorf("order:\n%s", got)
	}
	for n := 1; n <= len(full)+10; n += 7 {
		got := Render(ds, "", n)
		if len(got) > n || !utf8.ValidString(got) {
			t.Fatalf("maxBytes %d: %d bytes", n, len(got))
		}
	}
	// One entry too long on its own is cut.
	big := []topics.Diagnostic{{Severity: "error", File: "a.c", Line: 1, Message: strings.Repeat("é", 2000)}}
	got = Render(big, "", 300)
	if len(got) > 300 || !strings.HasPrefix(got, "a.c:1: error: é") || !utf8.ValidString(got) {
		t.Errorf("big entry: %d bytes %q", len(got), got)
	}
	big = append(big, ds[:3]...)
	got = Render(big, "", 300)
	if len(got) > 300 || !strings.HasPrefix(got, "a.c:1: error: é") || !strings.Contains(got, "…\n") || !strings.HasSuffix(got, "name03\n") {
		t.Errorf("big first entry: %q", got)
	}
	if got := Render(nil, "", 100); got != "" {
		t.Errorf("empty: %q", got)
	}
}
