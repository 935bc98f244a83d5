package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/murphy-rl/murphy/stages/credit"
)

func newCreditCmd() *cobra.Command {
	c := credit.DefaultConfig()
	var in, out string
	cmd := &cobra.Command{
		Use:   "credit --in samples.jsonl --out credited.jsonl",
		Short: "Re-derive credit offline from stored sample records (JSON lines)",
		Long: `credit reads sample records as JSON lines (any order, trees interleaved,
duplicates allowed), assembles each rollout tree, prunes it, propagates rewards
(MARS or MERS) and computes group advantages with exactly the code of the
credit stage, and writes one credited sample per line: the input fields plus
credited_reward, advantage and credit_config.

Each input line needs tree_id, node_id, parent_id ("" for the root group),
group_id, group_size, turn, max_turns, reward, route, in_group_stats and
children_requested. Trees still incomplete at the end of the input are reported
on stderr and skipped (--incomplete drop) or written with "incomplete": true
(--incomplete flag). Use "-" for stdin/stdout.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := c.Validate(); err != nil {
				return &exitError{code: 2, err: err}
			}
			r, closeIn, err := openIn(in)
			if err != nil {
				return err
			}
			defer closeIn()
			w, closeOut, err := openOut(out)
			if err != nil {
				return err
			}
			rep, err := credit.Offline(cmd.Context(), r, w, credit.OfflineOptions{
				Credit:     c.CreditConfig(),
				Incomplete: c.Incomplete,
				Log:        cmd.ErrOrStderr(),
			})
			if cerr := closeOut(); err == nil && cerr != nil {
				err = fmt.Errorf("credit: close %s: %w", out, cerr)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(),
				"credit: %d lines, %d duplicates, %d trees complete, %d incomplete (%s), %d samples written, %d nodes pruned, %d zero-signal groups (%d samples dropped)\n",
				rep.Lines, rep.Duplicates, rep.Trees, rep.IncompleteTrees, c.Incomplete, rep.Written, rep.PrunedNodes, rep.ZeroSignalGroups, rep.DroppedSamples)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&in, "in", "-", "input sample records, JSON lines (- = stdin)")
	f.StringVar(&out, "out", "-", "output credited samples, JSON lines (- = stdout)")
	f.StringVar(&c.Strategy, "strategy", c.Strategy, "reward propagation: mars | mers")
	f.Float64Var(&c.Gamma, "gamma", c.Gamma, "MERS discount γ")
	f.StringVar(&c.Z, "z", c.Z, "MERS normaliser: 1 | remaining_turns | one_plus_gamma")
	f.IntVar(&c.IntrapK, "intrap", c.IntrapK, "INTRAP: keep the k members of each group with the largest reward variance (0 = off)")
	f.IntVar(&c.InterpM, "interp", c.InterpM, "INTERP: keep the m groups of each tree with the largest reward variance (0 = off)")
	f.Float64Var(&c.InterpThreshold, "interp-threshold", c.InterpThreshold, "INTERP: keep only groups with reward variance >= this (0 = off)")
	f.StringSliceVar(&c.PruneOrder, "prune-order", c.PruneOrder, "order of the pruning passes, e.g. interp,intrap (default intrap,interp)")
	f.StringVar(&c.Advantage, "advantage", c.Advantage, "group advantage: std | no_std | leave_one_out")
	f.Float64Var(&c.Epsilon, "epsilon", c.Epsilon, "ε added to the group std (advantage std)")
	f.BoolVar(&c.DropZeroSignal, "drop-zero-signal", c.DropZeroSignal, "leave out groups whose advantages are all zero")
	f.StringVar(&c.Incomplete, "incomplete", c.Incomplete, "trees incomplete at the end of the input: drop | flag")
	return cmd
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
