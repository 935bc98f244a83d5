package policy

import (
	"regexp"
	"strings"
)

// FeedbackKind says how much executor feedback tells about the bug.
type FeedbackKind int

const (
	// FeedbackNone: no feedback (a root prompt).
	FeedbackNone FeedbackKind = iota
	// FeedbackUninformative: feedback that names no case and no error, such
	// as a timeout or a bare "wrong answer".
	FeedbackUninformative
	// FeedbackError: an error or traceback without a failing case.
	FeedbackError
	// FeedbackFailingCase: a failing case with its input, expected and
	// actual output.
	FeedbackFailingCase
	// FeedbackDiagnostic: compile diagnostics located in the source
	// ("file:line[:col]: error[code]: message"), as a build reports them.
	FeedbackDiagnostic
)

func (k FeedbackKind) String() string {
	switch k {
	case FeedbackNone:
		return "none"
	case FeedbackUninformative:
		return "uninformative"
	case FeedbackError:
		return "error"
	case FeedbackFailingCase:
		return "failing_case"
	case FeedbackDiagnostic:
		return "diagnostic"
	}
	return "unknown"
}

var (
	reInput    = regexp.MustCompile(`(?i)\b(input|inputs|args|arguments|call|stdin)\b\s*[:=]`)
	reExpected = regexp.MustCompile(`(?i)\bexpected\b\s*[:=]?`)
	reActual   = regexp.MustCompile(`(?i)\b(actual|got|returned|output)\b\s*[:=]`)
	reError    = regexp.MustCompile(`(?i)(traceback|\w+error\b|exception|assertion)`)
	// reDiagnostic is a compiler error line: "main.c:4:17: error: ...",
	// "App.java:9: error: ...", "x.go:3:5: error[undefined]: ...".
	reDiagnostic = regexp.MustCompile(`(?im)^[ \t]*[^\s:]+:\d+(?::\d+)?:[ \t]*(?:fatal[ \t]+)?error\b`)
)

// ClassifyFeedback reads executor feedback. It is a failing case when it
// names an input ("input:", "args:", "call:", "stdin:"), an expected value
// ("expected") and an actual one ("actual:", "got:", "returned:",
// "output:"); a diagnostic, before that, when it has a compiler error line
// located in a file ("main.c:4:17: error: ..."); an error when it carries a
// traceback or an error name (SyntaxError, NameError, ...) without a case;
// and uninformative otherwise (timeouts, memory limits, a bare status, a patch
// that did not apply without a diagnostic).
func ClassifyFeedback(feedback string) FeedbackKind {
	f := strings.TrimSpace(feedback)
	if f == "" {
		return FeedbackNone
	}
	// Each pattern needs a word that the lower-cased text must contain;
	// looking for those words first spares the regular expressions most
	// texts.
	l := strings.ToLower(f)
	switch {
	// Diagnostics first: their source excerpts may read like a case
	// ("expected ';'", "int input = ...").
	case strings.Contains(l, "error") && reDiagnostic.MatchString(f):
		return FeedbackDiagnostic
	case strings.Contains(l, "expected") && reInput.MatchString(f) && reExpected.MatchString(f) && reActual.MatchString(f):
		return FeedbackFailingCase
	case mayBeError(l) && reError.MatchString(f) && !isTimeout(l):
		return FeedbackError
	}
	return FeedbackUninformative
}

// mayBeError says whether lower-cased text l has a word reError needs.
func mayBeError(l string) bool {
	return strings.Contains(l, "error") || strings.Contains(l, "traceback") || strings.Contains(l, "exception") ||
		strings.Contains(l, "assertion")
}

// isTimeout reads lower-cased text l.
func isTimeout(l string) bool {
	return strings.Contains(l, "timeout") || strings.Contains(l, "timed out") || strings.Contains(l, "time limit")
}
