package lang

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func mustParse(t *testing.T, l Language, src string) *File {
	t.Helper()
	f, err := Parse(l, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// code renders f's code tokens as "kind:text" words.
func code(f *File) string {
	var b []string
	for _, t := range f.Code {
		b = append(b, t.Kind.String()+":"+t.Text)
	}
	return strings.Join(b, " ")
}

func TestTokens(t *testing.T) {
	t.Parallel()
	cases := []struct {
		lang      Language
		src, want string
	}{
		{C, "#include <stdio.h>\n/* f(x); } */ static int f(void) { return g(1, \"}\", 'c') >> 2; } // x\n",
			`directive:#include string:<stdio.h> keyword:static keyword:int ident:f punct:( keyword:void punct:) punct:{ ` +
				`keyword:return ident:g punct:( number:1 punct:, string:"}" punct:, string:'c' punct:) punct:>> number:2 punct:; punct:}`},
		{C, "#define MAX(a, b) ((a) > (b) ? (a) : (b))\nsize_t n = NULL;\n",
			"directive:#define ident:MAX punct:( ident:a punct:, ident:b punct:) directive:((a) > (b) ? (a) : (b)) " +
				"ident:size_t ident:n punct:= keyword:NULL punct:;"},
		{Java, "class A { String s = \"\"\"\n  x } \"\"\"; /** f() */ List<List<String>> l; }",
			`keyword:class ident:A punct:{ ident:String ident:s punct:= string:"""` + "\n" + `  x } """ punct:; ` +
				`ident:List punct:< ident:List punct:< ident:String punct:> punct:> ident:l punct:; punct:}`},
		{Python, "x = f'{a}' + r\"\\\"\" # c(\nif x is None:\n    pass\n",
			`ident:x punct:= string:f'{a}' punct:+ string:r"\"" newline:` + "\n" +
				` keyword:if ident:x keyword:is keyword:None punct:: newline:` + "\n" + ` keyword:pass newline:` + "\n"},
		{Go, "package p\n\nvar s = `a\n}` // c\nfunc f() { return }\n",
			"keyword:package ident:p newline:\n keyword:var ident:s punct:= string:`a\n}` newline:\n " +
				"keyword:func ident:f punct:( punct:) punct:{ keyword:return punct:} newline:\n"},
	}
	for _, tc := range cases {
		f := mustParse(t, tc.lang, tc.src)
		if f.Err != nil {
			t.Errorf("%s %q: %v", tc.lang, tc.src, f.Err)
		}
		if got := code(f); got != tc.want {
			t.Errorf("%s %q:\n got %s\nwant %s", tc.lang, tc.src, got, tc.want)
		}
		for _, tk := range f.Tokens {
			if tk.Kind != Newline && string(f.Src[tk.Start:tk.End]) != tk.Text {
				t.Errorf("%s: token %q at [%d, %d) reads %q", tc.lang, tk.Text, tk.Start, tk.End, f.Src[tk.Start:tk.End])
			}
			if l, c := f.position(tk.Start); l != tk.Line || c != tk.Col {
				t.Errorf("%s: token %q at %d:%d, want %d:%d", tc.lang, tk.Text, tk.Line, tk.Col, l, c)
			}
		}
	}
}

func TestCommentsAndMask(t *testing.T) {
	t.Parallel()
	src := "int f(void) { /* { */\n  return \"(\"[0]; // )\n}\n"
	f := mustParse(t, C, src)
	var comments []string
	for _, tk := range f.Tokens {
		if tk.Kind == Comment {
			comments = append(comments, tk.Text)
		}
	}
	if !slices.Equal(comments, []string{"/* { */", "// )"}) {
		t.Errorf("comments %q", comments)
	}
	m := string(f.Mask())
	want := "int f(void) {        \n  return    [0];     \n}\n"
	if m != want {
		t.Errorf("mask\n%q\nwant\n%q", m, want)
	}
	if strings.Count(m, "{") != strings.Count(m, "}") || strings.Count(m, "(") != strings.Count(m, ")") {
		t.Errorf("the mask leaves unbalanced brackets: %q", m)
	}
}

func TestBrackets(t *testing.T) {
	t.Parallel()
	f := mustParse(t, Python, "f(a[1], {2: (3)})\n")
	for i, tk := range f.Code {
		m := f.Match(i)
		switch tk.Text {
		case "(", "[", "{", ")", "]", "}":
			if m < 0 || f.Match(m) != i || f.Depth(m) != f.Depth(i) {
				t.Errorf("%q at %d: match %d", tk.Text, i, m)
			}
		default:
			if m != -1 {
				t.Errorf("%q matched", tk.Text)
			}
		}
	}
	if d := f.Depth(slices.IndexFunc(f.Code, func(t Token) bool { return t.Text == "3" })); d != 3 {
		t.Errorf("depth of 3: %d", d)
	}
}

func TestLogicalLines(t *testing.T) {
	t.Parallel()
	src := "x = (1,\n     2)  # a comment\ny = 1 + \\\n    2\nif y:\n\tz = '''a\nb'''; w = 3\n"
	f := mustParse(t, Python, src)
	var got []string
	for _, l := range f.LogicalLines() {
		got = append(got, fmt.Sprintf("%d:%s..%s", l.Indent, f.Code[l.First].Text, f.Code[l.End-1].Text))
	}
	want := []string{"0:x..)", "0:y..2", "0:if..:", "8:z..3"}
	if !slices.Equal(got, want) {
		t.Errorf("logical lines %v, want %v", got, want)
	}
	if last := f.Code[len(f.Code)-1]; last.Kind != Newline || last.Start != len(src)-1 {
		t.Errorf("last token %+v", last)
	}
	noEOL := mustParse(t, Python, "x = 1")
	if last := noEOL.Code[len(noEOL.Code)-1]; last.Kind != Newline || last.Text != "" || last.Start != 5 {
		t.Errorf("a file without a final newline ends with %+v", last)
	}
}

func TestFunctions(t *testing.T) {
	t.Parallel()
	type fn struct {
		name, params, results, body string
		flags                       string
	}
	cases := []struct {
		lang Language
		src  string
		want []fn
	}{
		{C, "#ifndef H\n#define H\nstatic const char *name(int n, int (*cmp)(int), ...);\nint open();\n#ifdef X\nvoid x(void) {}\n#endif\n" +
			"struct point origin(void)\n{\n    return p;\n}\n#endif\n",
			[]fn{{"name", "n:int cmp:int (*)(int) :...", "const char *", "", "static variadic"},
				{"open", "", "int", "", "open"}, {"x", "", "", "{}", "conditional"},
				{"origin", "", "struct point", "{\n    return p;\n}", ""}}},
		{Java, "class A {\n  A(int x) { }\n  @Override public static <T> List<T> f(T t, String... rest) { return null; }\n  abstract void g();\n}",
			[]fn{{"A", "x:int", "", "{ }", "method constructor"},
				{"f", "t:T rest:String...", "List<T>", "{ return null; }", "static method override variadic"},
				{"g", "", "", "", "method"}}},
		{Python, "@decorate\nasync def f(a, b: int = 1, *args, c, **kw) -> list[int]:\n    return []\n\nclass C:\n    @staticmethod\n    def m(x, /, y, *, z): pass\n",
			[]fn{{"f", "a b:int= args* c kw*", "list[int]", "return []", "variadic"},
				{"m", "x / y * z", "", "pass", "static method"}}},
		{Go, "package p\n\n// doc\nfunc (c *T) add(s string, xs ...int) (n int, err error) {\n\treturn\n}\n\nfunc f() string { return \"\" }\n",
			[]fn{{"add", "s:string xs:...int", "n:int err:error", "{\n\treturn\n}", "method variadic"},
				{"f", "", "string", `{ return "" }`, ""}}},
	}
	for _, tc := range cases {
		f := mustParse(t, tc.lang, tc.src)
		if f.Err != nil {
			t.Errorf("%s: %v", tc.lang, f.Err)
		}
		var got []fn
		for _, x := range f.Functions() {
			var ps, rs []string
			for _, p := range x.Parameters {
				ps = append(ps, paramString(p))
			}
			for _, r := range x.Results {
				rs = append(rs, strings.TrimPrefix(paramString(r), ":"))
			}
			flags := map[string]bool{"static": x.Static, "method": x.Method, "constructor": x.Constructor,
				"override": x.Override, "variadic": x.Variadic, "open": x.OpenParams, "conditional": x.Conditional}
			var fs []string
			for _, k := range []string{"static", "method", "constructor", "override", "variadic", "open", "conditional"} {
				if flags[k] {
					fs = append(fs, k)
				}
			}
			got = append(got, fn{x.Name, strings.Join(ps, " "), strings.Join(rs, " "), f.Text(x.Body), strings.Join(fs, " ")})
			if f.Text(x.NameAt) != x.Name || !strings.HasPrefix(f.Text(x.Params), "(") || x.Body.Len() > 0 && !strings.Contains(f.Text(x.Span), f.Text(x.Body)) {
				t.Errorf("%s %s: spans name %q params %q", tc.lang, x.Name, f.Text(x.NameAt), f.Text(x.Params))
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s functions\n got %+v\nwant %+v", tc.lang, got, tc.want)
		}
	}
}

func paramString(p Param) string {
	s := p.Name
	switch {
	case p.Marker:
		return p.Type
	case p.Type != "":
		s += ":" + p.Type
	}
	if p.Default {
		s += "="
	}
	if p.Rest && p.Type == "" {
		s += "*"
	}
	return s
}

// TestBrokenPython: a syntax error (an unclosed bracket) does not swallow
// the definitions after it, and keywords the parser recovered as names
// are still keywords.
func TestBrokenPython(t *testing.T) {
	t.Parallel()
	src := "def mean(xs: list) -> float:\n    total = sum(xs)\n    return total / len(xs\n\n\n" +
		"def label(x) -> str:\n    return f\"mean={x}\"\n\n\nclass C:\n    def m(self):\n        return 1\n"
	f := mustParse(t, Python, src)
	var se *SyntaxError
	if !errors.As(f.Err, &se) || se.Line != 3 {
		t.Fatalf("Err %v", f.Err)
	}
	var got []string
	for _, fn := range f.Functions() {
		got = append(got, fmt.Sprintf("%s:%d-%d", fn.Name, f.Line(fn.Span.Start), f.Line(fn.Span.End-1)))
	}
	if want := []string{"mean:1-3", "label:6-7", "m:11-12"}; !slices.Equal(got, want) {
		t.Errorf("functions %v, want %v", got, want)
	}
	for _, tk := range f.Code {
		if tk.Text == "def" && tk.Kind != Keyword {
			t.Errorf("def at line %d is a %s", tk.Line, tk.Kind)
		}
	}
	checkCoverage(t, "broken.py", f)
}

// TestBrokenGo: go/parser gives up on a file at an error in a body; the
// functions are still found, each parsed alone, with the body's end from
// the braces.
func TestBrokenGo(t *testing.T) {
	t.Parallel()
	src := "package p\n\nfunc top(xs []int) int {\n\tsort.Slice(xs, func(i, j int) bool {\n<<<<<<< HEAD\n\t\treturn xs[i] < xs[j]\n" +
		"=======\n\t\treturn xs[i] > xs[j]\n>>>>>>> other\n\t})\n\treturn xs[0]\n}\n\nfunc total(xs []int) (n int) {\n\treturn len(xs)\n}\n"
	f := mustParse(t, Go, src)
	if f.Err == nil {
		t.Fatal("conflict markers parse")
	}
	var got []string
	for _, fn := range f.Functions() {
		got = append(got, fmt.Sprintf("%s:%d-%d:%v", fn.Name, f.Line(fn.Body.Start), f.Line(fn.Body.End-1), fn.Results))
	}
	n := strings.Index(src, "(n int)") + 1
	want := []string{"top:3-12:[{ {0 0} int false false false}]", fmt.Sprintf("total:14-16:[{n {%d %d} int false false false}]", n, n+1)}
	if !slices.Equal(got, want) {
		t.Errorf("functions %v, want %v", got, want)
	}
}

func TestFunctionAt(t *testing.T) {
	t.Parallel()
	src := "class A:\n    def f(self):\n        def g():\n            return 1\n        return g\n"
	f := mustParse(t, Python, src)
	if fn := f.FunctionAt(strings.Index(src, "return 1")); fn == nil || fn.Name != "g" {
		t.Errorf("innermost at return 1: %+v", fn)
	}
	if fn := f.FunctionAt(strings.Index(src, "return g")); fn == nil || fn.Name != "f" {
		t.Errorf("at return g: %+v", fn)
	}
	if fn := f.FunctionAt(0); fn != nil {
		t.Errorf("at the class: %+v", fn)
	}
}

func TestCalls(t *testing.T) {
	t.Parallel()
	cases := []struct {
		lang Language
		src  string
		want []string // name(receiver)/arguments
	}{
		{C, "int f(void) { return g(1, h(2)) + s->m(x) + (*fp)(3); }", []string{"g()/2", "h()/1", "m(s)/1"}},
		{Java, "class A { void f() { g(1); this.h(); new B(2); super.k(3, 4); } }", []string{"g()/1", "h(this)/0", "k(super)/2"}},
		{Python, "f(1, *a, k=2)\nself.m(x for x in y)\n(lambda: 1)()\n", []string{"f()/3", "m(self)/1"}},
		{Go, "package p\nfunc f() { g(1); fmt.Println(a, b); func() {}() }", []string{"g()/1", "Println(fmt)/2"}},
	}
	for _, tc := range cases {
		f := mustParse(t, tc.lang, tc.src)
		var got []string
		for _, c := range f.Calls() {
			got = append(got, fmt.Sprintf("%s(%s)/%d", c.Name, f.Text(c.Receiver), len(c.Arguments)))
			if f.Text(c.NameAt) != c.Name || !strings.HasPrefix(f.Text(c.Args), "(") {
				t.Errorf("%s %s: spans %q %q", tc.lang, c.Name, f.Text(c.NameAt), f.Text(c.Args))
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s calls %v, want %v", tc.lang, got, tc.want)
		}
	}
}

func TestInConditional(t *testing.T) {
	t.Parallel()
	src := "#ifndef GUARD\n#define GUARD\nint a;\n#ifdef W\nint b;\n#else\nint c;\n#endif\nint d;\n#endif\n"
	f := mustParse(t, C, src)
	for name, want := range map[string]bool{"a": false, "b": true, "c": true, "d": false} {
		if got := f.InConditional(strings.Index(src, "int "+name)); got != want {
			t.Errorf("int %s: conditional %v, want %v", name, got, want)
		}
	}
	if mustParse(t, Python, "if x:\n    y = 1\n").InConditional(10) {
		t.Error("Python has no preprocessor")
	}
}

func TestSyntaxErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		lang      Language
		src       string
		line, col int
	}{
		{Python, "x = (1,\n", 1, 0},
		{Python, "def f(:\n    pass\n", 1, 0},
		{Python, "x = 'abc\n", 1, 4},
		{C, "int f(void) {\n    return 1\n}\n", 2, 12},
		{Java, "class A { void f() { int x = ; } }", 1, 27},
		{Go, "package p\nfunc f() {\n", 2, 11},
	}
	for _, tc := range cases {
		f := mustParse(t, tc.lang, tc.src)
		var se *SyntaxError
		if !errors.As(f.Err, &se) {
			t.Errorf("%s %q: Err %v", tc.lang, tc.src, f.Err)
			continue
		}
		if se.Line != tc.line || tc.col > 0 && se.Col != tc.col {
			t.Errorf("%s %q: error at %d:%d (%s), want %d:%d", tc.lang, tc.src, se.Line, se.Col, se.Msg, tc.line, tc.col)
		}
		if len(f.Tokens) == 0 {
			t.Errorf("%s %q: no tokens from a broken file", tc.lang, tc.src)
		}
	}
	if _, err := Parse("cobol", []byte("x")); err == nil {
		t.Error("an unsupported language parsed")
	}
}

func TestVocabulary(t *testing.T) {
	t.Parallel()
	cases := []struct {
		lang                  Language
		keywords, notKeywords string
		predeclared, neither  string
	}{
		{C, "int void static return sizeof struct unsigned true", "printf size_t main", "", "printf"},
		{Java, "class public void boolean this null record instanceof", "String main System", "", "String"},
		{Python, "def lambda None True async match", "print_ len self", "len print ValueError", "self"},
		{Go, "func chan select defer", "nil int append", "nil int append error any", "fmt"},
	}
	for _, tc := range cases {
		for _, w := range strings.Fields(tc.keywords) {
			if !IsKeyword(tc.lang, w) || !IsReserved(tc.lang, w) {
				t.Errorf("%s: %q is not a keyword", tc.lang, w)
			}
		}
		for _, w := range strings.Fields(tc.notKeywords) {
			if IsKeyword(tc.lang, w) {
				t.Errorf("%s: %q is a keyword", tc.lang, w)
			}
		}
		for _, w := range strings.Fields(tc.predeclared) {
			if !IsPredeclared(tc.lang, w) {
				t.Errorf("%s: %q is not predeclared", tc.lang, w)
			}
		}
		for _, w := range strings.Fields(tc.neither) {
			if IsReserved(tc.lang, w) {
				t.Errorf("%s: %q is reserved", tc.lang, w)
			}
		}
	}
	for in, want := range map[string]Language{"C": C, "h": C, "golang": Go, "Python3": Python, "py": Python, "java": Java, "rust": ""} {
		if got := Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", in, got, want)
		}
	}
	for p, want := range map[string]Language{"a/b.c": C, "x.H": C, "m.go": Go, "A.java": Java, "s.py": Python, "x.rs": "", "Makefile": ""} {
		if got := ForPath(p); got != want {
			t.Errorf("ForPath(%q) = %q, want %q", p, got, want)
		}
	}
}

func TestChanges(t *testing.T) {
	t.Parallel()
	cases := []struct {
		a, b string
		want []Change
	}{
		{"x = f ( a , b ) ;", "x = f ( a , c ) ;", []Change{{6, 7, 6, 7}}},
		{"return a ;", "return a + 1 ;", []Change{{2, 2, 2, 4}}},
		{"a b c d", "a d", []Change{{1, 3, 1, 1}}},
		{"a b", "a b", nil},
		{"", "a", []Change{{0, 0, 0, 1}}},
	}
	for _, tc := range cases {
		a, b := strings.Fields(tc.a), strings.Fields(tc.b)
		got := Changes(a, b)
		if !slices.Equal(got, tc.want) {
			t.Errorf("Changes(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
		// Applying the changes to a gives b.
		var out []string
		pos := 0
		for _, c := range got {
			out = append(out, a[pos:c.A1]...)
			out = append(out, b[c.B1:c.B2]...)
			pos = c.A2
		}
		out = append(out, a[pos:]...)
		if !slices.Equal(out, b) {
			t.Errorf("%q → %q: the changes give %q", tc.a, tc.b, out)
		}
	}
	// Repeated tokens are aligned too: no junk heuristic drops them.
	long := strings.Fields(strings.Repeat("( x ) ; ", 300))
	changed := slices.Clone(long)
	changed[601] = "y"
	if got := Changes(long, changed); !slices.Equal(got, []Change{{601, 602, 601, 602}}) {
		t.Errorf("a change among repeated tokens: %v", got)
	}
}
