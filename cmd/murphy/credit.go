package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/murphy-rl/murphy/stages/credit"
)

// creditOptions are murphy credit's flags.
type creditOptions struct {
	c                   credit.Config
	in, out, strategies string
	summary             bool
}

func newCreditCmd() *cobra.Command {
	o := &creditOptions{c: credit.DefaultConfig()}
	c := &o.c
	cmd := &cobra.Command{
		Use:   "credit --in samples.jsonl --out credited.jsonl",
		Short: "Re-derive credit offline from stored sample records (JSON lines), or compare strategies on them",
		Long: `credit reads sample records as JSON lines (any order, trees interleaved,
duplicates allowed), assembles each rollout tree, prunes it, propagates rewards
(MARS or MERS, or the GRPO-MT baseline) and computes group advantages with
exactly the code of the credit stage, and writes one credited sample per line:
the input fields plus credited_reward, advantage and credit_config.

Each input line needs tree_id, node_id, parent_id ("" for the root group),
group_id (any id the root members share, or ""), group_size, turn, max_turns,
reward, route, in_group_stats and children_requested. Trees still incomplete at
the end of the input are reported on stderr and skipped (--incomplete drop) or
written with "incomplete": true (--incomplete flag). Use "-" for stdin/stdout.

--summary prints, for every strategy listed in --strategy (e.g.
--strategy mars,mers,grpo-mt), how many samples pruning keeps, how many failed
nodes get a positive advantage, the mean advantage of failures with and without
a successful descendant, and the advantage spread per turn. With --summary the
credited samples are written only when --out is given (one strategy only).`,
		Example: `  murphy credit --in samples.jsonl --out credited.jsonl --strategy mers --gamma 0.9
  murphy credit --in samples.jsonl --summary --strategy mars,mers,grpo-mt --interp 4`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCredit(cmd, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.in, "in", "-", "input sample records, JSON lines (- = stdin)")
	f.StringVar(&o.out, "out", "-", "output credited samples, JSON lines (- = stdout)")
	f.StringVar(&o.strategies, "strategy", c.Strategy, "reward propagation: mars | mers | grpo-mt (the multi-turn GRPO baseline); with --summary a comma-separated list to compare")
	f.BoolVar(&o.summary, "summary", false, "print the credit summary table (one column per --strategy) instead of, or with --out beside, the credited samples")
	f.Float64Var(&c.Gamma, "gamma", c.Gamma, "MERS discount γ")
	f.StringVar(&c.Z, "z", c.Z, "MERS normaliser: 1 | remaining_turns | one_plus_gamma")
	f.IntVar(&c.IntrapK, "intrap", c.IntrapK, "INTRAP: keep the k members of each group with the largest reward variance (0 = off)")
	f.IntVar(&c.InterpM, "interp", c.InterpM, "INTERP: keep the m refinement groups of each tree with the largest reward variance; the root group is always kept (0 = off)")
	f.Float64Var(&c.InterpThreshold, "interp-threshold", c.InterpThreshold, "INTERP: keep only refinement groups with reward variance >= this (0 = off)")
	f.StringSliceVar(&c.PruneOrder, "prune-order", c.PruneOrder, "order of the pruning passes, e.g. interp,intrap (default intrap,interp)")
	f.StringVar(&c.Advantage, "advantage", c.Advantage, "group advantage: std | no_std | leave_one_out")
	f.BoolVar(&c.UnbiasedStd, "unbiased-std", c.UnbiasedStd, "advantage std: divide by n−1 (sample std, as torch.std and TRL) instead of n")
	f.Float64Var(&c.Epsilon, "epsilon", c.Epsilon, "ε added to the group std (advantage std)")
	f.BoolVar(&c.DropZeroSignal, "drop-zero-signal", c.DropZeroSignal, "leave out groups whose advantages are all zero")
	f.StringVar(&c.Incomplete, "incomplete", c.Incomplete, "trees incomplete at the end of the input: drop | flag")
	return cmd
}

// strategyConfigs are the credit configs of the --strategy list, each
// validated; several need --summary and no --out.
func (o *creditOptions) strategyConfigs(outSet bool) ([]credit.Config, error) {
	var configs []credit.Config
	for _, name := range strings.Split(o.strategies, ",") {
		cc := o.c
		cc.Strategy = strings.TrimSpace(name)
		if err := cc.Validate(); err != nil {
			return nil, &exitError{code: 2, err: err}
		}
		configs = append(configs, cc)
	}
	switch {
	case len(configs) > 1 && !o.summary:
		return nil, &exitError{code: 2, err: fmt.Errorf("credit: several strategies (%s) need --summary", o.strategies)}
	case len(configs) > 1 && outSet:
		return nil, &exitError{code: 2, err: fmt.Errorf("credit: --out holds one strategy's credit; with --strategy %s use --summary alone", o.strategies)}
	}
	return configs, nil
}

// runCredit credits the input offline, writes the credited samples and
// the counts, and the summary table with --summary.
func runCredit(cmd *cobra.Command, o *creditOptions) error {
	outSet := cmd.Flags().Changed("out")
	configs, err := o.strategyConfigs(outSet)
	if err != nil {
		return err
	}
	r, closeIn, err := openIn(o.in)
	if err != nil {
		return err
	}
	defer closeIn()
	var w io.Writer
	closeOut := func() error { return nil }
	if !o.summary || outSet {
		if w, closeOut, err = openOut(o.out); err != nil {
			return err
		}
	}
	var sums []*credit.Summary
	if o.summary {
		for _, cc := range configs {
			sums = append(sums, credit.NewSummary(cc.CreditConfig()))
		}
	}
	rep, err := credit.Offline(cmd.Context(), r, w, credit.OfflineOptions{
		Credit:     configs[0].CreditConfig(),
		Incomplete: o.c.Incomplete,
		Log:        cmd.ErrOrStderr(),
		Summaries:  sums,
	})
	if cerr := closeOut(); err == nil && cerr != nil {
		err = fmt.Errorf("credit: close %s: %w", o.out, cerr)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(),
		"credit: %d lines, %d duplicates, %d trees complete, %d incomplete (%s), %d samples written, %d nodes pruned, %d zero-signal groups (%d samples dropped)\n",
		rep.Lines, rep.Duplicates, rep.Trees, rep.IncompleteTrees, o.c.Incomplete, rep.Written, rep.PrunedNodes, rep.ZeroSignalGroups, rep.DroppedSamples)
	if !o.summary {
		return nil
	}
	sw := cmd.OutOrStdout()
	if w != nil && o.out == "-" {
		sw = cmd.ErrOrStderr()
	}
	return credit.WriteSummaries(sw, sums)
}

func openIn(path string) (io.Reader, func(), error) {
	if path == "-" {
		return os.Stdin, func() {}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("credit: %w", err)
	}
	return f, func() { f.Close() }, nil
}

func openOut(path string) (io.Writer, func() error, error) {
	if path == "-" {
		return os.Stdout, func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, fmt.Errorf("credit: %w", err)
	}
	return f, f.Close, nil
}
