// Command gen writes the doc map of package flagdocs to a Go file; murphy
// runs it through go generate (see cmd/murphy/config.go):
//
//	go run ./internal/flagdocs/gen -type Config -var fieldDocs -o flagdocs_gen.go
//
// It warns about exported fields without a doc comment.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/murphy-rl/murphy/cmd/murphy/internal/flagdocs"
)

func main() {
	var opt flagdocs.Options
	out := flag.String("o", "", "output file (default: standard output)")
	flag.StringVar(&opt.Dir, "dir", ".", "directory of the package declaring -type")
	flag.StringVar(&opt.Type, "type", "Config", "root struct type")
	flag.StringVar(&opt.Var, "var", "fieldDocs", "name of the generated map")
	flag.StringVar(&opt.Package, "pkg", "", "package clause of the output (default: that of -dir)")
	flag.Parse()
	opt.Generator = Generator
	res, err := flagdocs.Generate(opt)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, k := range res.Undocumented {
		fmt.Fprintf(os.Stderr, "flagdocs: warning: %s has no doc comment\n", k)
	}
	if *out == "" {
		os.Stdout.Write(res.Source)
		return
	}
	if err := os.WriteFile(*out, res.Source, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// Generator is the header's name for this command, so that the test that
// regenerates the file in memory writes the same header.
const Generator = flagdocs.DefaultGenerator
