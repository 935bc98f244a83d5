package credit

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/murphy-rl/murphy/topics"
)

// Summary aggregates what one credit configuration does to a sample set:
// how much pruning keeps and where the learning signal of failed nodes goes.
// It is the comparison table of `murphy credit --summary` and of the
// `murphy run` report.
//
// A node is successful when its status is passed or, for records without a
// status (data not produced by murphy), when its reward is at least 1. A
// failed node is any other node that is not masked (degenerate responses
// are failures). A failure is informative when a kept descendant succeeded:
// the feedback it produced led to a fix.
type Summary struct {
	Config topics.CreditConfig
	// Trees credited, Nodes assembled, Kept after pruning (before
	// drop_zero_signal).
	Trees, Nodes, Kept int
	// Failed nodes kept; FailedPositive of them got a positive advantage.
	Failed, FailedPositive int
	// Informative and Uninformative failures: count and advantage sum.
	Informative, Uninformative meanAcc
	turns                      map[int]*spread
	// Signal are the method's metrics per turn (TurnMetrics) of the samples
	// kept.
	Signal map[int]*TurnMetrics
}

type meanAcc struct {
	N   int
	Sum float64
}

func (m *meanAcc) add(x float64) { m.N++; m.Sum += x }

// Mean is the mean (NaN without values).
func (m meanAcc) Mean() float64 {
	if m.N == 0 {
		return math.NaN()
	}
	return m.Sum / float64(m.N)
}

// spread accumulates advantages of one turn (Welford).
type spread struct {
	n        int
	mean, m2 float64
	lo, hi   float64
}

func (s *spread) add(x float64) {
	if s.n == 0 {
		s.lo, s.hi = x, x
	}
	s.n++
	d := x - s.mean
	s.mean += d / float64(s.n)
	s.m2 += d * (x - s.mean)
	s.lo, s.hi = min(s.lo, x), max(s.hi, x)
}

// NewSummary starts an empty summary of cfg.
func NewSummary(cfg topics.CreditConfig) *Summary {
	return &Summary{Config: cfg, turns: map[int]*spread{}, Signal: map[int]*TurnMetrics{}}
}

// Successful says whether a sample counts as a success in the summary.
func Successful(s *topics.Sample) bool {
	if s.Status != "" {
		return s.Status == topics.StatusPassed
	}
	return s.Reward >= 1
}

// Add adds one credited tree. nodes is how many nodes the tree had before
// pruning (len(ct.Samples) + ct.PrunedNodes + any zero-signal samples
// dropped).
func (s *Summary) Add(ct *topics.CreditedTree, nodes int) {
	s.Trees++
	s.Nodes += nodes
	s.Kept += nodes - ct.PrunedNodes
	idx := make(map[string]int, len(ct.Samples))
	for i := range ct.Samples {
		idx[ct.Samples[i].NodeID] = i
	}
	// Mark the kept ancestors of every success.
	fixed := make([]bool, len(ct.Samples))
	for i := range ct.Samples {
		if !Successful(&ct.Samples[i].Sample) {
			continue
		}
		for p := ct.Samples[i].ParentID; p != ""; {
			j, ok := idx[p]
			if !ok || fixed[j] {
				break
			}
			fixed[j] = true
			p = ct.Samples[j].ParentID
		}
	}
	for i := range ct.Samples {
		cs := &ct.Samples[i]
		tm := s.Signal[cs.Turn]
		if tm == nil {
			tm = &TurnMetrics{}
			s.Signal[cs.Turn] = tm
		}
		tm.Add(&cs.Sample)
		if cs.Route == topics.RouteMasked {
			continue
		}
		sp := s.turns[cs.Turn]
		if sp == nil {
			sp = &spread{}
			s.turns[cs.Turn] = sp
		}
		sp.add(cs.Advantage)
		if Successful(&cs.Sample) {
			continue
		}
		s.Failed++
		if cs.Advantage > 0 {
			s.FailedPositive++
		}
		if fixed[i] {
			s.Informative.add(cs.Advantage)
		} else {
			s.Uninformative.add(cs.Advantage)
		}
	}
}

// Name is the strategy with its non-default settings, as a column header.
func (s *Summary) Name() string {
	c := s.Config
	parts := []string{c.Strategy}
	if c.Strategy == StrategyMERS {
		parts = append(parts, fmt.Sprintf("γ=%g", c.Gamma))
		if c.Z != ZOne {
			parts = append(parts, "z="+c.Z)
		}
	}
	if c.Advantage != AdvantageStd {
		parts = append(parts, c.Advantage)
	} else if c.UnbiasedStd {
		parts = append(parts, "unbiased")
	}
	return strings.Join(parts, " ")
}

// WriteSummaries prints the summaries side by side, one column per
// configuration (see the credit README for how to read it).
func WriteSummaries(w io.Writer, sums []*Summary) error {
	if len(sums) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	const labelWidth = 34 // labels left-aligned in a right-aligned table
	row := func(label string, cell func(s *Summary) string) {
		fmt.Fprintf(tw, "%-*s\t", labelWidth, label)
		for _, s := range sums {
			fmt.Fprintf(tw, "%s\t", cell(s))
		}
		fmt.Fprintln(tw)
	}
	row("", func(s *Summary) string { return s.Name() })
	row("trees", func(s *Summary) string { return fmt.Sprint(s.Trees) })
	row("samples kept by pruning", func(s *Summary) string {
		return fmt.Sprintf("%d/%d (%.0f%%)", s.Kept, s.Nodes, 100*float64(s.Kept)/float64(max(s.Nodes, 1)))
	})
	row("failed nodes", func(s *Summary) string { return fmt.Sprint(s.Failed) })
	row("failed with advantage > 0", func(s *Summary) string {
		return fmt.Sprintf("%d (%.1f%%)", s.FailedPositive, 100*float64(s.FailedPositive)/float64(max(s.Failed, 1)))
	})
	row("mean adv, informative failures", func(s *Summary) string { return meanCell(s.Informative) })
	row("mean adv, uninformative failures", func(s *Summary) string { return meanCell(s.Uninformative) })
	var turns []int
	for _, s := range sums {
		for t := range s.turns {
			if !slices.Contains(turns, t) {
				turns = append(turns, t)
			}
		}
		for t := range s.Signal {
			if !slices.Contains(turns, t) {
				turns = append(turns, t)
			}
		}
	}
	slices.Sort(turns)
	signalRow := func(label string, t int, pick func(acc, deg, steps, scored string) string) {
		row(fmt.Sprintf("%s, turn %d", label, t), func(s *Summary) string {
			m := s.Signal[t]
			if m == nil {
				return "-"
			}
			return pick(m.Cells())
		})
	}
	for _, t := range turns {
		signalRow("strict accuracy (tier 1)", t, func(acc, _, _, _ string) string { return acc })
		signalRow("degenerate share", t, func(_, deg, _, _ string) string { return deg })
		signalRow("mean steps per episode", t, func(_, _, steps, _ string) string { return steps })
		signalRow("episodes with step scores", t, func(_, _, _, scored string) string { return scored })
	}
	for _, t := range turns {
		row(fmt.Sprintf("adv std [min, max], turn %d", t), func(s *Summary) string {
			sp := s.turns[t]
			if sp == nil || sp.n == 0 {
				return "-"
			}
			return fmt.Sprintf("%.3f [%.2f, %.2f]", math.Sqrt(sp.m2/float64(sp.n)), sp.lo, sp.hi)
		})
	}
	return tw.Flush()
}

func meanCell(m meanAcc) string {
	if m.N == 0 {
		return "- (n=0)"
	}
	return fmt.Sprintf("%+.3f (n=%d)", m.Mean(), m.N)
}

// TurnMetrics are the signal-reshaping method's metrics of one turn's
// samples: strict accuracy (the tier-1 rate: samples on the train route
// with reward 1), the degenerate share (samples routed last_step_penalty),
// both of the samples that are not masked, and the mean steps of the agent
// episodes with the share of them carrying process scores.
type TurnMetrics struct {
	Nodes, Masked, Correct, Degenerate int
	// Episodes are agent episodes (candidates with tool steps or an episode
	// end); EpisodeSteps their steps; Compiled those on the train route whose
	// patch built (passed, wrong_answer), Scored those with step scores.
	Episodes, EpisodeSteps, Compiled, Scored int
}

// Add counts one sample.
func (m *TurnMetrics) Add(s *topics.Sample) {
	m.Nodes++
	switch s.Route {
	case topics.RouteMasked:
		m.Masked++
	case topics.RouteLastStepPenalty:
		m.Degenerate++
	case topics.RouteTrain:
		if s.Reward >= 1 {
			m.Correct++
		}
	}
	if len(s.ToolSteps) > 0 || s.EpisodeEnd != "" {
		m.Episodes++
		m.EpisodeSteps += len(s.ToolSteps)
		if s.Route == topics.RouteTrain && (s.Status == topics.StatusPassed || s.Status == topics.StatusWrongAnswer) {
			m.Compiled++
		}
		if len(s.StepScores) > 0 {
			m.Scored++
		}
	}
}

func ratio(a, b int) float64 {
	if b == 0 {
		return math.NaN()
	}
	return float64(a) / float64(b)
}

// StrictAccuracy is the tier-1 rate of the samples that are not masked.
func (m TurnMetrics) StrictAccuracy() float64 { return ratio(m.Correct, m.Nodes-m.Masked) }

// DegenerateShare is the share of the samples that are not masked routed
// to the last-step penalty.
func (m TurnMetrics) DegenerateShare() float64 { return ratio(m.Degenerate, m.Nodes-m.Masked) }

// MeanSteps is the mean number of steps of an agent episode.
func (m TurnMetrics) MeanSteps() float64 { return ratio(m.EpisodeSteps, m.Episodes) }

// Cells renders the metrics as "strict accuracy, degenerate share, steps
// per episode, episodes with step scores of the compiled ones".
func (m TurnMetrics) Cells() (acc, degenerate, steps, scored string) {
	pctCell := func(x float64) string {
		if math.IsNaN(x) {
			return "-"
		}
		return fmt.Sprintf("%.1f%%", 100*x)
	}
	steps = "-"
	if m.Episodes > 0 {
		steps = fmt.Sprintf("%.1f", m.MeanSteps())
		scored = fmt.Sprintf("%d/%d compiled", m.Scored, m.Compiled)
	} else {
		scored = "-"
	}
	return pctCell(m.StrictAccuracy()), pctCell(m.DegenerateShare()), steps, scored
}

// TurnMetricsOf computes the metrics of samples per turn.
func TurnMetricsOf(samples []*topics.Sample) map[int]*TurnMetrics {
	out := map[int]*TurnMetrics{}
	for _, s := range samples {
		m := out[s.Turn]
		if m == nil {
			m = &TurnMetrics{}
			out[s.Turn] = m
		}
		m.Add(s)
	}
	return out
}
