package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"github.com/murphy-rl/murphy/stages/credit"
	"github.com/murphy-rl/murphy/stages/govern"
	"github.com/murphy-rl/murphy/tasks"
	"github.com/murphy-rl/murphy/topics"
)

// gradeScheme is one way of rewarding the same executions.
type gradeScheme struct {
	name    string
	policy  string
	process bool
}

var gradeSchemes = []gradeScheme{
	{"binary", topics.RewardBinary, false},
	{"tiered", topics.RewardTiered, false},
	{"tiered + process", topics.RewardTiered, true},
}

// schemeStats is what one scheme makes of the executions.
type schemeStats struct {
	turns map[int]*credit.TurnMetrics
	// rewards per turn, for the mean and the share of middle tiers.
	rewards map[int][]float64
	// groups: reward sets of the train-route members of each group, for
	// the groups left without a learning signal (all rewards equal).
	groups map[string][]float64
	// action tokens of trained episodes, and those weighted below 1.
	actionTokens, downWeighted int
}

// compareSchemes regrades execs under each scheme and prints the table.
func compareSchemes(ctx context.Context, w io.Writer, gcfg govern.Config, opts []govern.Option, execs []*topics.Execution, lookup *tasks.Memory) error {
	var stats []*schemeStats
	for _, sc := range gradeSchemes {
		cfg := gcfg
		cfg.RewardPolicy = sc.policy
		if !sc.process {
			cfg.Scorer, cfg.EpisodeScorer = govern.ScorerNone, govern.ScorerNone
		} else if cfg.EpisodeScorer == govern.ScorerNone {
			cfg.EpisodeScorer = govern.ScorerHeuristic
		}
		gov, err := govern.NewGovernor(cfg, nil, opts...)
		if err != nil {
			return &exitError{code: 2, err: err}
		}
		st := &schemeStats{turns: map[int]*credit.TurnMetrics{}, rewards: map[int][]float64{}, groups: map[string][]float64{}}
		for _, ex := range execs {
			e := *ex
			e.TreeSpec.RewardPolicy = "" // the scheme's policy, not the stored tree's
			res, err := gov.Govern(ctx, &e, policyFree{lookup})
			if err != nil {
				return fmt.Errorf("grade: %s: %w", ex.TaskID, err)
			}
			st.add(res.Sample)
		}
		stats = append(stats, st)
	}
	return writeSchemes(w, stats)
}

// policyFree is a task lookup that hides the tasks' own reward policy.
type policyFree struct{ l tasks.Lookup }

func (p policyFree) Task(ctx context.Context, id string) (*topics.Task, error) {
	t, err := p.l.Task(ctx, id)
	if err != nil || t == nil {
		return t, err
	}
	c := *t
	c.RewardPolicy = ""
	return &c, nil
}

func (st *schemeStats) add(s *topics.Sample) {
	m := st.turns[s.Turn]
	if m == nil {
		m = &credit.TurnMetrics{}
		st.turns[s.Turn] = m
	}
	m.Add(s)
	if s.Route != topics.RouteTrain {
		return
	}
	st.rewards[s.Turn] = append(st.rewards[s.Turn], s.Reward)
	st.groups[s.GroupID] = append(st.groups[s.GroupID], s.Reward)
	for _, ts := range s.ToolSteps {
		for k := ts.ActionStart; k < ts.ActionEnd && k < len(s.LossWeights); k++ {
			st.actionTokens++
			if s.LossWeights[k] < 1 {
				st.downWeighted++
			}
		}
	}
}

// flatGroups counts the groups (of two or more trained members) whose
// rewards are all equal: no group-relative advantage, no learning signal.
func (st *schemeStats) flatGroups() (flat, total int) {
	for _, rs := range st.groups {
		if len(rs) < 2 {
			continue
		}
		total++
		if slices.Min(rs) == slices.Max(rs) {
			flat++
		}
	}
	return flat, total
}

func writeSchemes(w io.Writer, stats []*schemeStats) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(label string, cell func(st *schemeStats) string) {
		fmt.Fprintf(tw, "%-34s\t", label)
		for _, st := range stats {
			fmt.Fprintf(tw, "%s\t", cell(st))
		}
		fmt.Fprintln(tw)
	}
	row("", func(st *schemeStats) string { return gradeSchemes[slices.Index(stats, st)].name })
	var turns []int
	for t := range stats[0].turns {
		turns = append(turns, t)
	}
	slices.Sort(turns)
	for _, t := range turns {
		row(fmt.Sprintf("samples, turn %d", t), func(st *schemeStats) string { return fmt.Sprint(st.turns[t].Nodes) })
		row(fmt.Sprintf("mean reward, turn %d", t), func(st *schemeStats) string {
			rs := st.rewards[t]
			if len(rs) == 0 {
				return "-"
			}
			sum := 0.0
			for _, r := range rs {
				sum += r
			}
			return fmt.Sprintf("%.3f", sum/float64(len(rs)))
		})
		row(fmt.Sprintf("partial credit (0 < r < 1), turn %d", t), func(st *schemeStats) string {
			n := 0
			for _, r := range st.rewards[t] {
				if r > 0 && r < 1 {
					n++
				}
			}
			return fmt.Sprintf("%d/%d", n, len(st.rewards[t]))
		})
		row(fmt.Sprintf("strict accuracy (tier 1), turn %d", t), func(st *schemeStats) string {
			acc, _, _, _ := st.turns[t].Cells()
			return acc
		})
	}
	row("groups without a learning signal", func(st *schemeStats) string {
		flat, total := st.flatGroups()
		return fmt.Sprintf("%d/%d", flat, total)
	})
	row("action tokens weighted < 1", func(st *schemeStats) string {
		if st.actionTokens == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f%% of %d", 100*float64(st.downWeighted)/float64(st.actionTokens), st.actionTokens)
	})
	return tw.Flush()
}
