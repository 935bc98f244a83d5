package cilog

import (
	"regexp"

	"github.com/murphy-rl/murphy/compilefix/diag"
)

// Kinds of diagnostic.
const (
	KindCompile = "compile" // a compiler's (or linker's) located error
	KindTest    = "test"    // a failed test
	KindLint    = "lint"    // a linter's or type checker's finding
	KindOther   = "other"   // a build tool's summary, a runtime error, the CI's own message
)

var pyCompileRE = regexp.MustCompile(`\b(?:SyntaxError|IndentationError|TabError)\b`)

// Kind classifies a diagnostic by what reported it.
func (d *Diagnostic) Kind() string {
	switch d.Tool {
	case toolSurefire, toolGoTest, toolPytest, toolCargoTest, toolJest, "junit":
		return KindTest
	case toolESLint, toolMypy, toolPyLint, toolGoVet:
		return KindLint
	case diag.ToolPython:
		if d.File != "" && pyCompileRE.MatchString(d.Code+" "+d.Message) {
			return KindCompile
		}
		return KindOther
	case toolGradle:
		if d.Code == "test" {
			return KindTest
		}
	}
	if compileTools[d.Tool] && d.File != "" && d.Line > 0 {
		return KindCompile
	}
	return KindOther
}
