package diag

import (
	"regexp"
	"strings"

	"github.com/murphy-rl/murphy/topics"
)

// Diagnostic classes: what kind of error a diagnostic reports, in terms
// every toolchain agrees on, so that two versions of a compiler that word
// one error differently ("invalid syntax" and "multiple exception types
// must be parenthesized"; "cannot find symbol" and "cannot resolve
// symbol") still describe the same error.
const (
	ClassSyntax     = "syntax"      // the source does not parse
	ClassUnresolved = "unresolved"  // an unknown name, symbol, type, member, module or package
	ClassType       = "type"        // a type mismatch, a conversion or operand the types forbid
	ClassArity      = "arity"       // the wrong number or kind of arguments
	ClassDeclare    = "declaration" // a redeclaration, a missing return, an unused declaration
	ClassAccess     = "access"      // a member the context may not use (private, protected)
)

// classRules are tried in order; the first whose pattern matches the
// lower-cased "code: message" names the class.
var classRules = []struct {
	class string
	re    *regexp.Regexp
}{
	{ClassSyntax, regexp.MustCompile(`^(?:\w+\.)*(?:syntaxerror|indentationerror|taberror)\b|syntax error|invalid syntax|^(?:error\[)?e0(?:586|658)|` +
		`expected (?:'[^']*'|";"|an? \w+|expression|identifier|declaration|statement|one of)|'[^']*' expected|illegal start of|unexpected (?:token|eof|end of|newline|indent|unindent|character)|` +
		`reached end of file while parsing|was never closed|unclosed|unterminated|unmatched|not a statement|class, interface,? (?:enum,? )?(?:or record )?expected|` +
		`non-declaration statement outside function body|stray '|missing (?:terminating|'[)}\]]')|unindent does not match|inconsistent use of tabs|^ts1\d{3}:`)},
	{ClassUnresolved, regexp.MustCompile(`cannot (?:find|resolve) (?:symbol|name|module|package|type|value|function|macro|crate|trait|struct|enum)|undefined(?::| reference| symbol| variable| name| method| function| type| identifier)|` +
		`undeclared|was not declared in this scope|unknown (?:type name|identifier|symbol)|implicit declaration of function|package \S+ does not exist|does not exist in (?:the )?(?:current context|package)|` +
		`no module named|is not defined|not found in (?:this scope|module|crate)|unresolved (?:import|reference|name|external)|has no (?:member|attribute|field|method)|` +
		`no (?:member|field or method|method|field) named|does not (?:have|contain) (?:a )?(?:member|definition)|property '[^']*' does not exist|could not import|cannot import name|` +
		`^(?:\w+\.)*(?:nameerror|importerror|modulenotfounderror)\b|^(?:error\[)?e0(?:425|412|433|432|599|609|611|422|531|405)\b|^ts(?:2304|2305|2307|2339|2551|2552|2503|2724):`)},
	{ClassArity, regexp.MustCompile(`wrong number of (?:arguments|type arguments)|not enough arguments|too (?:many|few) arguments|cannot be applied to given types|` +
		`expected \d+ (?:arguments?|parameters?)|takes \d+ positional|missing (?:\d+ )?(?:required )?(?:positional )?arguments?|no suitable (?:method|constructor) found|` +
		`actual and formal argument lists differ|^(?:error\[)?e0(?:061|060|107)\b|^ts(?:2554|2555|2556):`)},
	{ClassType, regexp.MustCompile(`incompatible (?:types|type|pointer)|cannot (?:convert|use .* as)|mismatched types|is not assignable to|invalid operation|bad operand types?|` +
		`type mismatch|cannot be converted|invalid conversion|possible lossy conversion|cannot assign|incompatible operand|no operator .* matches|` +
		`^(?:\w+\.)*typeerror\b|^(?:error\[)?e0(?:308|277|369|614)\b|^ts(?:2322|2345|2362|2363|2365|2367|2769):`)},
	{ClassDeclare, regexp.MustCompile(`redeclared|redefinition|already (?:defined|declared)|duplicate (?:class|declaration|definition|variable|symbol|case)|conflicting types|` +
		`declared and not used|declared but not used|imported and not used|missing return|must return a value|^(?:error\[)?e0(?:428|201|124)\b|^ts(?:2300|2451|2393):`)},
	{ClassAccess, regexp.MustCompile(`has (?:private|protected) access|is (?:private|protected)(?: within| in|$)|not visible|is inaccessible|^(?:error\[)?e0(?:603|616|624)\b|^ts2341:`)},
}

// Class returns the class of a diagnostic's error ("" when no rule
// knows its wording).
func Class(d topics.Diagnostic) string {
	s := strings.ToLower(strings.TrimSpace(d.Message))
	if c := strings.ToLower(strings.TrimSpace(d.Code)); c != "" {
		s = c + ": " + s
	}
	s = quoteReplacer.Replace(s)
	for _, r := range classRules {
		if r.re.MatchString(s) {
			return r.class
		}
	}
	return ""
}

// SameError reports whether a target a log named and a diagnostic of a
// build are the same error by location and kind, whatever the wording:
// the same file (one path a suffix of the other), lines at most tol apart,
// no conflicting severities, and the same known class. Match is the test
// by message.
func SameError(a, b topics.Diagnostic, tol int) bool {
	if a.File == "" || b.File == "" || a.Line <= 0 || b.Line <= 0 || abs(a.Line-b.Line) > tol {
		return false
	}
	if !sameFile(pathParts(a.File), pathParts(b.File)) {
		return false
	}
	sa, sb := strings.ToLower(a.Severity), strings.ToLower(b.Severity)
	if sa != "" && sb != "" && sa != sb {
		return false
	}
	ca := Class(a)
	return ca != "" && ca == Class(b)
}
