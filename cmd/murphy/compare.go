package main

import (
	"fmt"

	"github.com/murphy-rl/murphy/internal/dataset"
	"github.com/spf13/cobra"
)

func newCompareCmd() *cobra.Command {
	var limit int
	cmd := &cobra.Command{
		Use:   "compare DIR_A DIR_B",
		Short: "Compare two output datasets row by row (all values except timestamps and batch placement)",
		Long: `Compare the Arrow files of two runs. Rows are matched by node_id; every
column is compared except timestamps (*_at) and where a row landed
(batch_id, source_partition, source_offset). Missing, extra and duplicated
rows are differences. Exit code 0 when the datasets are identical.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := dataset.ReadDir(args[0])
			if err != nil {
				return err
			}
			b, err := dataset.ReadDir(args[1])
			if err != nil {
				return err
			}
			diffs, err := dataset.Compare(a, b)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			for i, d := range diffs {
				if i == limit {
					fmt.Fprintf(out, "... %d more\n", len(diffs)-limit)
					break
				}
				fmt.Fprintln(out, d)
			}
			fmt.Fprintf(out, "%s: %d rows, %d trees; %s: %d rows, %d trees; %d differences\n",
				args[0], len(a), dataset.Trees(a), args[1], len(b), dataset.Trees(b), len(diffs))
			if len(diffs) > 0 || len(a) == 0 {
				return &exitError{code: 1, err: fmt.Errorf("datasets differ (%d differences)", len(diffs))}
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 50, "print at most this many differences")
	return cmd
}
