package policy

import (
	"regexp"
	"slices"
	"strings"

	"github.com/murphy-rl/murphy/compilefix/lang"
)

// stubFunction replaces the body of the innermost function around line t
// (0-based; its header counts) with a return of a zero value of its result
// type (none for void). The function is found by compilefix/lang, which
// reads broken files too; a language it does not read has no stub.
func stubFunction(lines []string, t int, language string) ([]string, bool) {
	l := lang.Normalize(language)
	if l == "" {
		return nil, false
	}
	src := strings.Join(lines, "")
	f, err := lang.Parse(l, []byte(src))
	if err != nil {
		return nil, false
	}
	at := f.LineStart(t+1) + len(indentOf(lines[t]))
	var fn *lang.Function
	fns := f.Functions()
	for i := range fns {
		if fns[i].Defined() && fns[i].Span.Contains(at) && (fn == nil || fns[i].Span.Start >= fn.Span.Start) {
			fn = &fns[i]
		}
	}
	if fn == nil {
		return nil, false
	}
	var out []string
	var ok bool
	if l == lang.Python {
		out, ok = stubPythonBody(f, lines, fn)
	} else {
		out, ok = stubBracedBody(f, lines, fn)
	}
	if !ok || slices.Equal(out, lines) {
		return nil, false
	}
	return out, true
}

// stubPythonBody replaces the lines of a def's block (which must start on
// a line after the header's) with one return.
func stubPythonBody(f *lang.File, lines []string, fn *lang.Function) ([]string, bool) {
	first, _ := f.CodeIn(fn.Body)
	colon := first - 1
	for colon >= 0 && f.Code[colon].Kind == lang.Newline {
		colon--
	}
	if colon < 0 {
		return nil, false
	}
	header := f.Code[colon].Line - 1
	start, last := f.Line(fn.Body.Start)-1, f.Line(fn.Body.End-1)-1
	if start <= header {
		return nil, false // a one-line def
	}
	ann := ""
	if len(fn.Results) > 0 {
		ann = fn.Results[0].Type
	}
	stub := indentOf(lines[start]) + "return " + pyZero(ann) + "\n"
	out := slices.Clone(lines[:header+1])
	out = append(out, stub)
	return append(out, lines[last+1:]...), true
}

// stubBracedBody replaces what is between a body's braces, which must
// open at the end of a line and close at the start of another, with one
// return statement (none for a function without a result).
func stubBracedBody(f *lang.File, lines []string, fn *lang.Function) ([]string, bool) {
	mask := string(f.Mask())
	open, close := fn.Body.Start, fn.Body.End-1
	openLine, closeLine := f.Line(open)-1, f.Line(close)-1
	if openLine == closeLine || strings.TrimSpace(mask[open+1:f.LineStart(openLine+2)]) != "" ||
		strings.TrimSpace(mask[f.LineStart(closeLine+1):close]) != "" {
		return nil, false
	}
	stmt := zeroReturn(f, fn)
	ind := ""
	for k := openLine + 1; k < closeLine; k++ {
		if !blank(lines[k]) {
			ind = indentOf(lines[k])
			break
		}
	}
	if ind == "" {
		unit := "    "
		if f.Lang == lang.Go || strings.HasPrefix(indentOf(lines[closeLine]), "\t") {
			unit = "\t"
		}
		ind = indentOf(lines[closeLine]) + unit
	}
	out := slices.Clone(lines[:openLine+1])
	if stmt != "" {
		out = append(out, ind+stmt+"\n")
	}
	return append(out, lines[closeLine:]...), true
}

// zeroReturn is the statement returning a zero value of fn's results in a
// C, Go or Java file, "" for none.
func zeroReturn(f *lang.File, fn *lang.Function) string {
	switch {
	case f.Lang == lang.Go && len(fn.Results) > 0 && fn.Results[0].Name != "":
		return "return" // named results
	case f.Lang == lang.Go && len(fn.Results) > 0:
		zeros := make([]string, len(fn.Results))
		for i, r := range fn.Results {
			zeros[i] = goZero(r.Type)
		}
		return "return " + strings.Join(zeros, ", ")
	case len(fn.Results) == 0:
		return ""
	case f.Lang == lang.Java:
		return "return " + javaZero(fn.Results[0].Type) + ";"
	case fn.Name == "main":
		return "return 0;"
	}
	return "return " + cZero(fn.Results[0].Type, string(f.Src)) + ";"
}

func pyZero(ann string) string {
	base := ann
	if i := strings.IndexAny(base, "[ |"); i >= 0 {
		base = base[:i]
	}
	switch strings.TrimPrefix(strings.TrimPrefix(base, "typing."), "t.") {
	case "int":
		return "0"
	case "float":
		return "0.0"
	case "complex":
		return "0j"
	case "str":
		return `""`
	case "bytes":
		return `b""`
	case "bool":
		return "False"
	case "list", "List":
		return "[]"
	case "dict", "Dict":
		return "{}"
	case "set", "Set":
		return "set()"
	case "tuple", "Tuple":
		return "()"
	}
	return "None"
}

var reCInt = regexp.MustCompile(`^u?int(?:_least|_fast)?\d*_t$`)

// cZero is a zero value of the C type typ (qualifiers included) in file.
func cZero(typ, file string) string {
	words := strings.Fields(typ)
	for len(words) > 0 && (words[0] == "const" || words[0] == "volatile") {
		words = words[1:]
	}
	switch {
	case strings.Contains(typ, "*"):
		if strings.Contains(file, "NULL") || strings.Contains(file, "<std") || strings.Contains(file, "<string.h>") {
			return "NULL"
		}
		return "0"
	case len(words) > 0 && words[0] == "enum":
		return "0"
	case len(words) > 0 && !slices.ContainsFunc(words, func(w string) bool { return !cScalarWord(w) }):
		return "0"
	}
	return "(" + typ + "){0}"
}

func cScalarWord(w string) bool {
	switch w {
	case "int", "long", "short", "char", "unsigned", "signed", "float", "double", "size_t", "ssize_t",
		"ptrdiff_t", "intptr_t", "uintptr_t", "off_t", "wchar_t", "intmax_t", "uintmax_t", "bool", "_Bool":
		return true
	}
	return reCInt.MatchString(w)
}

// javaZero is a zero value of the Java type typ.
func javaZero(typ string) string {
	switch typ {
	case "boolean":
		return "false"
	case "int", "long", "short", "byte", "char", "float", "double":
		return "0"
	}
	return "null"
}

// goZero is a zero value of the Go type t.
func goZero(t string) string {
	switch t {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "uintptr",
		"float32", "float64", "complex64", "complex128", "byte", "rune":
		return "0"
	case "string":
		return `""`
	case "bool":
		return "false"
	case "error", "any":
		return "nil"
	}
	for _, p := range []string{"*", "[]", "map[", "chan ", "chan<-", "<-chan", "func(", "func (", "interface"} {
		if strings.HasPrefix(t, p) {
			return "nil"
		}
	}
	return "*new(" + t + ")"
}
