package main

import (
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/murphy-rl/murphy/internal/bench"
)

// newBenchSaturationCmd is `murphy bench saturation`; cfg and opt are the
// bench command's persistent settings (broker, tasks, partitions, seed...).
func newBenchSaturationCmd(cfg *bench.Config, opt *benchOptions) *cobra.Command {
	sc := bench.DefaultSaturationConfig()
	cmd := &cobra.Command{
		Use:   "saturation",
		Short: "Pipeline samples/s through the server pool against the inference servers' own maximum (target >= 0.9)",
		Long: `Starts --servers fake OpenAI-compatible servers (openai/fakeserver's Engine:
continuous batching whose decode step takes --step + --step-per-seq x the
batch, a KV cache of --kv-tokens, a prefix cache; vLLM's scheduler gauges on
/metrics unless --no-server-metrics), runs the whole pipeline (execute's
sandbox replaced by the benchmark verdict) with the OpenAI policy over a pool
of them (generate's scheduler, the pool's per-server limits and tree
affinity), then measures each server's own peak by a direct concurrency
sweep of plain HTTP requests replaying the pipeline's requests, and runs the
pipeline again without affinity. Prints pipeline samples/s over the servers'
summed peak, and the prefix cache's hit rate and samples/s with affinity and
without.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c := *cfg
			if opt.Embedded {
				c.Brokers = nil
			}
			if err := c.Validate(); err != nil {
				return &exitError{code: 2, err: err}
			}
			if err := sc.Validate(); err != nil {
				return &exitError{code: 2, err: err}
			}
			stderr := cmd.ErrOrStderr()
			ts, err := benchTasks(*opt, stderr)
			if err != nil {
				return err
			}
			stopProfile, err := startCPUProfile(opt.CPUProfile)
			if err != nil {
				return err
			}
			defer stopProfile()
			slog.SetDefault(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
			b, err := bench.OpenBroker(c.Brokers, c.Partitions)
			if err != nil {
				return err
			}
			defer b.Close()
			res, err := bench.Saturation(cmd.Context(), b, c, sc, ts, stderr)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), res)
			if opt.Check && res.Ratio() < bench.SaturationTarget {
				return &exitError{code: 1, err: fmt.Errorf("bench: saturation %.2f < %.1f", res.Ratio(), bench.SaturationTarget)}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&sc.Servers, "servers", sc.Servers, "fake inference servers")
	f.IntVar(&sc.Tokens, "tokens", sc.Tokens, "tokens of every response")
	f.DurationVar(&sc.Engine.Step, "step", sc.Engine.Step, "each server's decode step, without the batch")
	f.DurationVar(&sc.Engine.PerSeq, "step-per-seq", sc.Engine.PerSeq, "what each sequence in the batch adds to a step")
	f.DurationVar(&sc.Engine.PrefillPerToken, "prefill-per-token", sc.Engine.PrefillPerToken, "prefill time per prompt token not in the prefix cache")
	f.IntVar(&sc.Engine.KVTokens, "kv-tokens", sc.Engine.KVTokens, "each server's KV cache, in tokens (a sequence holds its prompt and response)")
	f.IntVar(&sc.Engine.PrefixCacheTokens, "prefix-cache-tokens", sc.Engine.PrefixCacheTokens, "each server's prefix cache, in tokens")
	f.IntVar(&sc.TreesPerTask, "saturation-trees-per-task", sc.TreesPerTask, "trees per task of each pipeline run")
	f.DurationVar(&sc.Level, "level", sc.Level, "how long each concurrency of the direct sweep is measured")
	f.IntVar(&sc.Concurrency, "concurrency", sc.Concurrency, "generate's concurrency (an upper bound: the slots follow the pool's capacity)")
	f.BoolVar(&sc.NoMetrics, "no-server-metrics", sc.NoMetrics, "the servers expose no metrics (the pool's limits follow throughput)")
	f.IntVar(&sc.SweepFlat, "sweep-flat", sc.SweepFlat, "doublings of the sweep in a row gaining less than 3% that end it")
	return cmd
}
