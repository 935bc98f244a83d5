// Package lang reads source files of the compile-fix languages: C, Java
// and Python with tree-sitter grammars, Go with go/scanner and go/parser.
// It is the one place where code is tokenised or parsed; see README.md for
// what it offers and why.
package lang
