package main

import (
	"fmt"
	"runtime/debug"

	"github.com/murphy-rl/murphy/topics"
	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, the record schema version and the Go build info",
		RunE: func(cmd *cobra.Command, _ []string) error {
			rev := ""
			if bi, ok := debug.ReadBuildInfo(); ok {
				for _, s := range bi.Settings {
					if s.Key == "vcs.revision" {
						rev = s.Value
					}
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "murphy %s (revision %s), record schema v%d\n", version, rev, topics.SchemaVersion)
			return nil
		},
	}
}
