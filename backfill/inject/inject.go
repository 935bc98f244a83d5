// Package inject plants compile errors in C, Go, Java and Python source
// files, to make compile-fix tasks from repositories that build: each
// operator finds the sites of one kind of mistake in a file (an include or
// import dropped, a use of a declared name misspelt, a function removed
// that is still called, a semicolon, brace, colon or bracket deleted, a
// call given the wrong number of arguments, a value of the wrong type,
// merge-conflict markers left in), picks one with a seeded generator and
// returns the mutated file with a description and the reference repair
// (Mutation.Patch).
//
// Files are read with compilefix/lang (go/parser for Go, tree-sitter's
// grammars for C, Java and Python): sites are found on its tokens,
// functions, calls and syntax trees, so that comments, string literals and
// preprocessor lines are never edited inside. A site is only taken where
// the mistake should be a compile error (Python: a syntax error for the
// Syntactic operators, a NameError or TypeError for the others, which a
// byte-compile does not catch). Whether the build really fails is for the
// caller to check, since one file cannot tell (a header included twice, an
// overload elsewhere, warnings that are not errors).
package inject

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"path/filepath"
	"strings"

	"github.com/murphy-rl/murphy/compilefix/lang"
	"github.com/murphy-rl/murphy/compilefix/patch"
)

// Operators.
const (
	// OpDropImport removes an import (Go, Java, Python) or an #include (C)
	// whose names the file uses.
	OpDropImport = "drop-import"
	// OpMisspell misspells one use of a name the file declares (a
	// parameter, local, function, method, type or module-level name), never
	// the declaration.
	OpMisspell = "misspell-identifier"
	// OpRemoveFunction removes the definition of a function or method the
	// file calls elsewhere.
	OpRemoveFunction = "remove-function"
	// OpDeleteSemicolon deletes a statement's semicolon (C, Java) or the
	// terminator between two Go statements (an explicit ';' or the newline
	// that stands for one, joining the lines).
	OpDeleteSemicolon = "delete-semicolon"
	// OpDeleteBrace deletes a closing brace inside a function body (C, Go,
	// Java).
	OpDeleteBrace = "delete-brace"
	// OpDeleteColon deletes the colon of a Python compound statement.
	OpDeleteColon = "delete-colon"
	// OpDeleteBracket deletes a closing bracket of a Python statement.
	OpDeleteBracket = "delete-bracket"
	// OpChangeArity drops or adds an argument of a call to a function the
	// file defines.
	OpChangeArity = "change-arity"
	// OpTypeMismatch gives a typed variable or return value a literal of
	// another type (a string literal for a number, a number for a string
	// or pointer).
	OpTypeMismatch = "type-mismatch"
	// OpMergeConflict leaves merge-conflict markers around a statement.
	OpMergeConflict = "merge-conflict"
)

// ErrNoSite is returned (wrapped) when an operator finds no site in a file.
var ErrNoSite = errors.New("inject: no site for the operator")

// Mutation is one planted error.
type Mutation struct {
	// Operator is the operator that made it.
	Operator string
	// File is the file's workspace path (slash-separated, relative).
	File string
	// Line is the 1-based line of the change in New.
	Line int
	// Description says what was changed, in a sentence; the line numbers
	// in it are Old's.
	Description string
	// Old is the original content, New the mutated one.
	Old, New []byte
	// Expect are the lines of New (sorted) where a compiler should report
	// the error: the change itself, the uses of what was removed, where a
	// parser notices a missing brace. Best effort; empty when unknown (a
	// project header dropped: what it declares is not in the file).
	Expect []int
}

// Patch returns the reference repair: the unified git diff (patch.Diff:
// a/ and b/ prefixes, three lines of context) that turns New back into Old.
func (m *Mutation) Patch() string { return patch.Diff(m.File, string(m.New), string(m.Old)) }

// opFunc finds the sites of one operator in f and plans one.
type opFunc func(f *srcFile, r *rand.Rand) (*plan, error)

type language struct {
	ops   []string
	funcs map[string]opFunc
}

var languages = map[string]*language{}

func register(name string, ops []string, funcs map[string]opFunc) {
	languages[name] = &language{ops: ops, funcs: funcs}
}

func init() {
	register("c", []string{OpDropImport, OpMisspell, OpRemoveFunction, OpDeleteSemicolon, OpDeleteBrace,
		OpChangeArity, OpTypeMismatch, OpMergeConflict}, cOps(false))
	register("java", []string{OpDropImport, OpMisspell, OpRemoveFunction, OpDeleteSemicolon, OpDeleteBrace,
		OpChangeArity, OpTypeMismatch, OpMergeConflict}, cOps(true))
	register("go", []string{OpDropImport, OpMisspell, OpRemoveFunction, OpDeleteSemicolon, OpDeleteBrace,
		OpChangeArity, OpTypeMismatch, OpMergeConflict}, goOps())
	register("python", []string{OpDropImport, OpMisspell, OpRemoveFunction, OpDeleteColon, OpDeleteBracket,
		OpChangeArity, OpMergeConflict}, pyOps())
}

// Lang normalises a language name: "c" (also "h"), "go" ("golang"),
// "java", "python" ("py", "python3"); "" for others.
func Lang(name string) string { return string(lang.Normalize(name)) }

// Languages returns the supported languages.
func Languages() []string { return []string{"c", "go", "java", "python"} }

// Operators returns the operators of a language (nil for an unknown one).
func Operators(language string) []string {
	l := languages[Lang(language)]
	if l == nil {
		return nil
	}
	return append([]string(nil), l.ops...)
}

// Syntactic reports whether the error op plants in a file of lang is a
// syntax error, which a parse alone (python -m compileall, gofmt -e)
// reports.
func Syntactic(language, op string) bool {
	switch op {
	case OpDeleteSemicolon, OpDeleteBrace, OpDeleteColon, OpDeleteBracket, OpMergeConflict:
		return true
	}
	return false
}

// Inject plants one error of operator op in the file at path (its
// workspace path) with content src. The same arguments give the same
// mutation. The error wraps ErrNoSite when the file has no site for op.
func Inject(language, op string, p string, src []byte, seed int64) (*Mutation, error) {
	l := languages[Lang(language)]
	if l == nil {
		return nil, fmt.Errorf("inject: unknown language %q", language)
	}
	fn := l.funcs[op]
	if fn == nil {
		return nil, fmt.Errorf("inject: operator %q is not defined for %s (have %s)", op, Lang(language), strings.Join(l.ops, ", "))
	}
	clean := path.Clean(filepath.ToSlash(p))
	if p == "" || !filepath.IsLocal(filepath.FromSlash(clean)) {
		return nil, fmt.Errorf("inject: path %q is not a relative workspace path", p)
	}
	f := newSrcFile(clean, src)
	// Nearby seeds must not give nearby first draws: PCG's first outputs
	// from seeds 1 and 2 are close, so the seed is mixed first.
	a := splitmix(uint64(seed))
	r := rand.New(rand.NewPCG(a, splitmix(a^0x6d75727068792d69)))
	pl, err := fn(f, r)
	if err != nil {
		return nil, err
	}
	return pl.mutation(op, f), nil
}

// splitmix is SplitMix64's output function.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// noSite is the error of an operator without sites.
func noSite(op string, f *srcFile, why string) error {
	return fmt.Errorf("%w: %s in %s: %s", ErrNoSite, op, f.path, why)
}
