package main

import (
	"fmt"

	"github.com/murphy-rl/murphy/backfill/cilog"
	"github.com/spf13/cobra"
)

func newBenchCILogCmd() *cobra.Command {
	size := int64(1 << 30)
	maxHeapMiB := 64.0
	check := false
	cmd := &cobra.Command{
		Use:   "cilog",
		Short: "Stream a 1 GiB generated CI log through the parser: throughput against a line scan, peak live heap",
		Long: `Generates a GitHub Actions log of a Maven build (timestamped lines, download
progress, compiler errors echoed by Maven, test failures with stack traces) of
--size bytes on the fly, times a plain line scan of it as the baseline, then
parses it with murphy's CI-log parser while sampling the live heap every 10 ms.
The log is never held whole: the heap is bounded by a chunk of lines.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := cilog.StreamBench(size)
			if err != nil {
				return err
			}
			fmt.Fprint(cmd.OutOrStdout(), r)
			if live := float64(r.PeakHeapBytes) / (1 << 20); check && live > maxHeapMiB {
				return &exitError{code: 1, err: fmt.Errorf("peak live heap %.1f MiB above its bound of %.0f MiB", live, maxHeapMiB)}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.Int64Var(&size, "size", size, "bytes of log to generate")
	f.Float64Var(&maxHeapMiB, "max-heap-mib", maxHeapMiB, "the peak live heap --check allows")
	f.BoolVar(&check, "check", false, "exit 1 when the peak live heap is above --max-heap-mib")
	return cmd
}
