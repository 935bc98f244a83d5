package lang

import (
	"go/token"
	"go/types"
	"path"
	"strings"
	"sync"
	"unicode"

	sitter "github.com/tree-sitter/go-tree-sitter"
	tsc "github.com/tree-sitter/tree-sitter-c/bindings/go"
	tsjava "github.com/tree-sitter/tree-sitter-java/bindings/go"
	tspython "github.com/tree-sitter/tree-sitter-python/bindings/go"
)

// Language is a source language the layer reads.
type Language string

// The languages.
const (
	C      Language = "c"
	Go     Language = "go"
	Java   Language = "java"
	Python Language = "python"
)

// Languages returns the languages, in a fixed order.
func Languages() []Language { return []Language{C, Go, Java, Python} }

// Normalize reads a language name: "c" (also "h"), "go" ("golang"),
// "java", "python" ("py", "python3"), in any case; "" for any other.
func Normalize(name string) Language {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "c", "h":
		return C
	case "go", "golang":
		return Go
	case "java":
		return Java
	case "python", "py", "python3":
		return Python
	}
	return ""
}

// ForPath is the language of a file by its name's extension (.c and .h,
// .go, .java, .py), "" for any other.
func ForPath(p string) Language {
	switch strings.ToLower(path.Ext(p)) {
	case ".c", ".h":
		return C
	case ".go":
		return Go
	case ".java":
		return Java
	case ".py":
		return Python
	}
	return ""
}

// grammar is a tree-sitter language with what the layer derives from it.
type grammar struct {
	lang     *sitter.Language
	keywords map[string]bool
	// kinds and named cache node kind names and whether they are named, by
	// id (the C strings are converted once).
	kinds []string
	named []bool
	// fields caches field names by id.
	fields []string
}

var (
	grammarsOnce sync.Once
	grammars     map[Language]*grammar
)

// extraKeywords are reserved words a grammar reads as named tokens (C's
// primitive_type, Java's void_type, the literals) or does not use at all
// (Java's goto and const), so that its keyword tokens miss them.
var extraKeywords = map[Language]string{
	C:      "int char float double void bool _Bool _Complex _Imaginary true false",
	Java:   "boolean void this super true false null goto const",
	Python: "True False None",
}

func grammarOf(l Language) *grammar {
	grammarsOnce.Do(func() {
		grammars = map[Language]*grammar{
			C:      newGrammar(C, sitter.NewLanguage(tsc.Language())),
			Java:   newGrammar(Java, sitter.NewLanguage(tsjava.Language())),
			Python: newGrammar(Python, sitter.NewLanguage(tspython.Language())),
		}
	})
	return grammars[l]
}

func newGrammar(l Language, tl *sitter.Language) *grammar {
	g := &grammar{lang: tl, keywords: map[string]bool{}}
	g.kinds = make([]string, tl.NodeKindCount())
	g.named = make([]bool, len(g.kinds))
	for id := range g.kinds {
		k := tl.NodeKindForId(uint16(id))
		g.kinds[id], g.named[id] = k, tl.NodeKindIsNamed(uint16(id))
		// A keyword is a visible anonymous token spelt as a word.
		if tl.NodeKindIsVisible(uint16(id)) && !tl.NodeKindIsNamed(uint16(id)) && isWord(k) {
			g.keywords[k] = true
		}
	}
	for _, w := range strings.Fields(extraKeywords[l]) {
		g.keywords[w] = true
	}
	g.fields = make([]string, tl.FieldCount()+1)
	for id := range g.fields {
		g.fields[id] = tl.FieldNameForId(uint16(id))
	}
	return g
}

// isWord reports whether s is spelt like an identifier.
func isWord(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r != '_' && !unicode.IsLetter(r) && (i == 0 || !unicode.IsDigit(r)) {
			return false
		}
	}
	return true
}

// IsKeyword reports whether w is a keyword of l: a word its grammar reads
// as a keyword (for Go, go/token's keywords). Contextual and soft keywords
// are included (Java's record and yield, Python's match, case and type,
// the Python 2 statements print and exec that the grammar still reads), as
// are the literals true, false and null (True, False, None in Python).
func IsKeyword(l Language, w string) bool {
	if l == Go {
		return token.Lookup(w).IsKeyword()
	}
	if g := grammarOf(l); g != nil {
		return g.keywords[w]
	}
	return false
}

// pythonBuiltins are the names of Python 3's builtins module.
var pythonBuiltins = wordSet(`ArithmeticError AssertionError AttributeError BaseException BaseExceptionGroup
	BlockingIOError BrokenPipeError BufferError BytesWarning ChildProcessError ConnectionAbortedError
	ConnectionError ConnectionRefusedError ConnectionResetError DeprecationWarning EOFError Ellipsis
	EncodingWarning EnvironmentError Exception ExceptionGroup False FileExistsError FileNotFoundError
	FloatingPointError FutureWarning GeneratorExit IOError ImportError ImportWarning IndentationError
	IndexError InterruptedError IsADirectoryError KeyError KeyboardInterrupt LookupError MemoryError
	ModuleNotFoundError NameError None NotADirectoryError NotImplemented NotImplementedError OSError
	OverflowError PendingDeprecationWarning PermissionError ProcessLookupError RecursionError ReferenceError
	ResourceWarning RuntimeError RuntimeWarning StopAsyncIteration StopIteration SyntaxError SyntaxWarning
	SystemError SystemExit TabError TimeoutError True TypeError UnboundLocalError UnicodeDecodeError
	UnicodeEncodeError UnicodeError UnicodeTranslateError UnicodeWarning UserWarning ValueError Warning
	ZeroDivisionError __import__ abs aiter all anext any ascii bin bool breakpoint bytearray bytes callable
	chr classmethod compile complex copyright credits delattr dict dir divmod enumerate eval exec exit filter
	float format frozenset getattr globals hasattr hash help hex id input int isinstance issubclass iter len
	license list locals map max memoryview min next object oct open ord pow print property quit range repr
	reversed round set setattr slice sorted staticmethod str sum super tuple type vars zip`)

func wordSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

// IsPredeclared reports whether w names something every file of l sees
// without declaring it: Go's universe scope (go/types), Python's builtins.
// C and Java have none here (what a header or java.lang declares is a
// library's, not the language's).
func IsPredeclared(l Language, w string) bool {
	switch l {
	case Go:
		return types.Universe.Lookup(w) != nil
	case Python:
		return pythonBuiltins[w]
	}
	return false
}

// IsReserved reports whether w is a keyword or predeclared in l: a name a
// new identifier must not take.
func IsReserved(l Language, w string) bool { return IsKeyword(l, w) || IsPredeclared(l, w) }
