package main

import "github.com/spf13/cobra"

func newBackfillCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "backfill",
		Short: "Turn CI history into verified compile-fix datasets",
		Long: `Backfill parses CI logs, builds compile-fix tasks from failing/fixing
revision pairs or from compile errors injected into clean repositories,
verifies each by building it in the sandbox, and publishes tasks and root
prompts beside the continuous stream as a bounded, resumable job.`,
	}
	cmd.AddCommand(newBackfillParseCmd(), newBackfillTasksCmd(), newBackfillSubmitCmd())
	return cmd
}
