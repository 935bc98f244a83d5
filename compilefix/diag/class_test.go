package diag

import (
	"testing"

	"github.com/murphy-rl/murphy/topics"
)

// TestClass: one error worded by several toolchains (and versions of one)
// has one class.
func TestClass(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ code, msg, class string }{
		{"SyntaxError", "invalid syntax", ClassSyntax},
		{"SyntaxError", "multiple exception types must be parenthesized", ClassSyntax},
		{"IndentationError", "unexpected indent", ClassSyntax},
		{"TabError", "inconsistent use of tabs and spaces in indentation", ClassSyntax},
		{"", "';' expected", ClassSyntax},
		{"", "expected ';' before '}' token", ClassSyntax},
		{"", "syntax error: unexpected newline, expecting comma or )", ClassSyntax},
		{"E0658", "expected one of `;` or `}`, found `let`", ClassSyntax},
		{"TS1005", "';' expected.", ClassSyntax},
		{"", "reached end of file while parsing", ClassSyntax},
		{"", "cannot find symbol\nsymbol: class ResultSetMapper\nlocation: class Util", ClassUnresolved},
		{"", "undefined: fmt.Printx", ClassUnresolved},
		{"", "'x' undeclared (first use in this function)", ClassUnresolved},
		{"", "use of undeclared identifier 'x'", ClassUnresolved},
		{"E0425", "cannot find value `x` in this scope", ClassUnresolved},
		{"TS2304", "Cannot find name 'foo'.", ClassUnresolved},
		{"", "package org.junit does not exist", ClassUnresolved},
		{"NameError", "name 'Github' is not defined", ClassUnresolved},
		{"", "incompatible types: String cannot be converted to int", ClassType},
		{"", "cannot use x (variable of type int) as string value in assignment", ClassType},
		{"E0308", "mismatched types", ClassType},
		{"TS2322", "Type 'string' is not assignable to type 'number'.", ClassType},
		{"", "method f in class A cannot be applied to given types;", ClassArity},
		{"", "not enough arguments in call to f", ClassArity},
		{"", "too many arguments to function 'g'", ClassArity},
		{"", "x redeclared in this block", ClassDeclare},
		{"", "declared and not used: y", ClassDeclare},
		{"", "missing return statement", ClassDeclare},
		{"", "x has private access in A", ClassAccess},
		{"", "Compilation failure", ""},
	} {
		if got := Class(topics.Diagnostic{Code: c.code, Message: c.msg}); got != c.class {
			t.Errorf("Class(%s: %q) = %q, want %q", c.code, c.msg, got, c.class)
		}
	}
}

// TestSameError: location and class, not wording, decide.
func TestSameError(t *testing.T) {
	t.Parallel()
	pypy := topics.Diagnostic{Severity: "error", File: "pkg/io.py", Line: 41, Code: "SyntaxError", Message: "invalid syntax"}
	cpy := topics.Diagnostic{Severity: "error", File: "/work/pkg/io.py", Line: 41, Code: "SyntaxError", Message: "multiple exception types must be parenthesized"}
	if !SameError(pypy, cpy, 2) {
		t.Error("the same SyntaxError worded by PyPy and CPython 3.11")
	}
	for name, b := range map[string]topics.Diagnostic{
		"another file":  {Severity: "error", File: "pkg/other.py", Line: 41, Code: "SyntaxError", Message: "x"},
		"too far":       {Severity: "error", File: "pkg/io.py", Line: 45, Code: "SyntaxError", Message: "x"},
		"another class": {Severity: "error", File: "pkg/io.py", Line: 41, Code: "NameError", Message: "name 'e' is not defined"},
		"a warning":     {Severity: "warning", File: "pkg/io.py", Line: 41, Code: "SyntaxError", Message: "x"},
		"unknown class": {Severity: "error", File: "pkg/io.py", Line: 41, Message: "something odd"},
	} {
		if SameError(pypy, b, 2) {
			t.Errorf("%s: %+v matched", name, b)
		}
	}
	j8 := topics.Diagnostic{Severity: "error", File: "src/main/java/a/Util.java", Line: 237, Column: 16, Message: "cannot find symbol"}
	j17 := topics.Diagnostic{Severity: "error", File: "src/main/java/a/Util.java", Line: 237, Column: 16, Message: "cannot find symbol\nsymbol: class ResultSetMapper"}
	if !SameError(j8, j17, 2) {
		t.Error("javac's error with and without its symbol lines")
	}
}
