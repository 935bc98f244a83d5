package main

import (
	"fmt"
	"runtime/debug"

	"github.com/murphy-rl/murphy/topics"
	"github.com/spf13/cobra"
)

// version is set at build time: `make build` passes
// -ldflags "-X main.version=$(git describe --tags --always --dirty)".
// Unset, the version comes from the Go build info (see buildVersion).
var version string

// buildVersion returns the version to print and the VCS revision the binary
// was built from ("" when unknown). The version is main.version when it was
// set at link time; else the main module's version from the build info (a
// tag for `go install ...@vX`, a pseudo-version for a build in a git
// checkout); else "dev".
func buildVersion() (v, rev string) {
	v = version
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				rev = s.Value
			}
		}
	}
	if v == "" {
		v = "dev"
	}
	return v, rev
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, the record schema version and the Go build info",
		RunE: func(cmd *cobra.Command, _ []string) error {
			v, rev := buildVersion()
			if rev == "" {
				rev = "unknown"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "murphy %s (revision %s), record schema v%d\n", v, rev, topics.SchemaVersion)
			return nil
		},
	}
}
