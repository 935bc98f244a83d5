package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/murphy-rl/murphy/compilefix"
	"github.com/murphy-rl/murphy/topics"
)

func newBenchCompileFixCmd() *cobra.Command {
	repeat, workers := 3, 0
	check := false
	cmd := &cobra.Command{
		Use:   "compilefix",
		Short: "Compile-fix executions/s through murphy against the same builds run directly (target >= 0.7)",
		Long: `Evaluates every built-in compile-fix task's reference patch --repeat times as
execute does (apply the patch to the cached snapshot, build in a fresh build
sandbox, parse the diagnostics against the baseline), then runs the same build
commands directly on copies of the patched trees prepared beforehand, as many at
once as the builder has slots, and prints both rates and their ratio.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			ts, err := allBuiltinTasks()
			if err == nil {
				ts, err = selectKinds(ts, []string{topics.KindCompileFix})
			}
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			url, cleanup, err := builtinStore(ctx, "")
			if err != nil {
				return err
			}
			defer cleanup()
			cfg := compilefix.DefaultConfig()
			cfg.Store, cfg.Builder.Workers = url, workers
			cf, closeCF, err := compilefix.Open(ctx, cfg)
			if err != nil {
				return err
			}
			defer closeCF()
			n := workers
			if n == 0 {
				n = cf.Builder.(interface{ Size() int }).Size()
			}
			r, err := compilefix.Throughput(ctx, cf, n, repeat, ts)
			if err != nil {
				return err
			}
			fmt.Fprint(cmd.OutOrStdout(), r)
			if check && r.Ratio() < 0.7 {
				return &exitError{code: 1, err: fmt.Errorf("ratio %.2f below its target of 0.7", r.Ratio())}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&repeat, "repeat", repeat, "evaluations of each reference patch")
	f.IntVar(&workers, "workers", workers, "build slots (0 = one per CPU); the baseline runs as many at once")
	f.BoolVar(&check, "check", false, "exit 1 when the ratio misses its target")
	return cmd
}
