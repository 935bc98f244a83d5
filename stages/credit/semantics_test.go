package credit

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/murphy-rl/murphy/topics"
)

// The membership rules of DESIGN §4 credit, one test per rule, and an
// independent reference implementation of propagation, advantages and the
// grpo-mt baseline checked against the core on random trees.

func TestInterpNeverRanksTheRootGroup(t *testing.T) {
	// Turn 1 all failed (variance 0): exactly the case refinement is for.
	// The refinement groups {0, 1} (.25) and {0, .5} (.0625) are ranked;
	// the root group is kept whatever m or the threshold say.
	s := build("I", 2, []nb{
		{r: 0, kids: []nb{{r: 0}, {r: 1}}},
		{r: 0, kids: []nb{{r: 0}, {r: 0.5}}},
		{r: 0},
	})
	for _, tc := range []struct {
		name      string
		m         int
		threshold float64
		kept      int
	}{
		{"m=1", 1, 0, 3 + 2},
		{"m=2", 2, 0, 3 + 4},
		{"threshold above every group", 0, 0.5, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ct, st := Credit(mustTree(s), cfgWith(func(c *Config) { c.InterpM = tc.m; c.InterpThreshold = tc.threshold }))
			if len(ct.Samples) != tc.kept || st.PrunedNodes != len(s)-tc.kept {
				t.Fatalf("kept %d, pruned %d; want %d kept", len(ct.Samples), st.PrunedNodes, tc.kept)
			}
			roots := 0
			for _, cs := range ct.Samples {
				if cs.ParentID == "" {
					roots++
				}
			}
			if roots != 3 {
				t.Fatalf("%d root members kept, want all 3", roots)
			}
		})
	}
}

func TestMaskedChildrenNeverPropagate(t *testing.T) {
	// P (r=0) has children {c=1, m masked r=0}. Counted in the group
	// statistics or not, m must not dilute P: MERS r~(P) = 0 + 1·1 = 1.
	for _, out := range []bool{false, true} {
		for _, strategy := range []string{StrategyMERS, StrategyMARS} {
			s := build("P", 2, []nb{{r: 0, kids: []nb{{r: 1}, {r: 0, masked: true, out: out}}}, {r: 0}})
			ct, _ := Credit(mustTree(s), cfgWith(func(c *Config) { c.Strategy = strategy }))
			if got := byNode(ct)[s[0].NodeID].CreditedReward; got != 1 {
				t.Errorf("%s, masked child out of stats=%v: r~(P) = %v, want 1", strategy, out, got)
			}
		}
	}
	t.Run("all children masked", func(t *testing.T) {
		s := build("Q", 2, []nb{{r: 0.25, kids: []nb{{r: 0.9, masked: true}, {r: 0.9, masked: true}}}, {r: 0}})
		for _, strategy := range []string{StrategyMERS, StrategyMARS, StrategyGRPOMT} {
			ct, _ := Credit(mustTree(s), cfgWith(func(c *Config) { c.Strategy = strategy }))
			if got := byNode(ct)[s[0].NodeID].CreditedReward; got != 0.25 {
				t.Errorf("%s: r~ = %v, want r = 0.25", strategy, got)
			}
		}
	})
	t.Run("degenerate children propagate", func(t *testing.T) {
		// d is degenerate and out of the statistics: a real outcome, so
		// MERS r~(P) = 0 + (1 + 0)/2.
		s := build("D", 2, []nb{{r: 0, kids: []nb{{r: 1}, {r: 0, deg: true, out: true}}}, {r: 0}})
		ct, _ := Credit(mustTree(s), cfgWith(func(c *Config) { c.Strategy = StrategyMERS }))
		if got := byNode(ct)[s[0].NodeID].CreditedReward; got != 0.5 {
			t.Errorf("r~(P) = %v, want 0.5", got)
		}
	})
}

func TestOutsiderAdvantagesAreBounded(t *testing.T) {
	// Three counting members agree; the truncated response (out of the
	// statistics) is worse: its advantage is −√(n−1) = −√2, not −1e6.
	s := build("O", 1, []nb{{r: 1}, {r: 1}, {r: 1}, {r: 0, deg: true, out: true}})
	ct, _ := Credit(mustTree(s), cfgWith(nil))
	got := byNode(ct)
	for i := range 3 {
		if a := got[s[i].NodeID].Advantage; a != 0 {
			t.Errorf("counting member %d: advantage %v, want 0", i, a)
		}
	}
	if a := got[s[3].NodeID].Advantage; !near(a, -math.Sqrt2) {
		t.Errorf("outsider: advantage %v, want −√2", a)
	}
	ct, _ = Credit(mustTree(s), cfgWith(func(c *Config) { c.UnbiasedStd = true }))
	if a := byNode(ct)[s[3].NodeID].Advantage; !near(a, -2/math.Sqrt(3)) {
		t.Errorf("outsider, unbiased std: advantage %v, want −(n−1)/√n", a)
	}

	rng := rand.New(rand.NewPCG(31, 32))
	xs := make([]float64, 0, 12)
	in := make([]bool, 0, 12)
	for trial := range 5000 {
		xs, in = xs[:0], in[:0]
		for range 1 + rng.IntN(10) {
			x := float64(rng.IntN(3)) / 2
			if trial%2 == 0 {
				x = rng.Float64() * 3
			}
			xs = append(xs, x)
			in = append(in, rng.IntN(3) > 0)
		}
		n, sum := 0, 0.0
		for i, x := range xs {
			if in[i] {
				n++
				sum += x
			}
		}
		for _, unbiased := range []bool{false, true} {
			cfg := cfgWith(func(c *Config) { c.UnbiasedStd = unbiased })
			out := Normalise(cfg, xs, in, nil)
			bound := math.Sqrt(float64(max(n-1, 0)))
			if unbiased && n > 0 {
				bound = float64(n-1) / math.Sqrt(float64(n))
			}
			for i, a := range out {
				if math.IsNaN(a) || math.IsInf(a, 0) || math.Abs(a) > bound+1e-9 {
					t.Fatalf("trial %d %v in=%v: advantage %d = %v, bound %v", trial, xs, in, i, a, bound)
				}
				if n == 0 {
					continue
				}
				d := xs[i] - sum/float64(n)
				if n > 1 && !in[i] && math.Abs(d) > 1e-9 && (a > 0) != (d > 0) {
					t.Fatalf("trial %d %v in=%v: outsider %d has advantage %v for x − mean = %v", trial, xs, in, i, a, d)
				}
			}
		}
	}
}

func TestUnbiasedStdHandChecked(t *testing.T) {
	s := build("U", 1, []nb{{r: 1}, {r: 0}, {r: 0}, {r: 0.5}})
	ct, _ := Credit(mustTree(s), cfgWith(func(c *Config) { c.UnbiasedStd = true; c.Epsilon = 0.01 }))
	std := math.Sqrt(0.6875 / 3) // Σ(x − .375)² = .6875, n − 1 = 3
	for i, r := range []float64{1, 0, 0, 0.5} {
		if want := (r - 0.375) / (std + 0.01); !near(ct.Samples[i].Advantage, want) {
			t.Errorf("member %d: %v want %v", i, ct.Samples[i].Advantage, want)
		}
	}
	if !ct.Config.UnbiasedStd {
		t.Errorf("the setting does not travel with the tree: %+v", ct.Config)
	}
	bad := DefaultConfig()
	bad.UnbiasedStd, bad.Advantage = true, AdvantageNoStd
	if bad.Validate() == nil {
		t.Errorf("unbiased_std with advantage no_std accepted")
	}
}

func TestRootGroupIDsAreOpaque(t *testing.T) {
	base := build("R", 2, []nb{{r: 0, kids: []nb{{r: 1}, {r: 0}}}, {r: 1}})
	want, _ := Credit(mustTree(base), cfgWith(nil))
	for _, tc := range []struct {
		name   string
		ids    []string // group_id of the two root members
		wantID string
	}{
		{"shared foreign id", []string{"prompt-17", "prompt-17"}, "prompt-17"},
		{"empty ids", []string{"", ""}, topics.RootID("R")},
		{"one empty", []string{"", "prompt-17"}, "prompt-17"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := cloneSamples(base)
			s[0].GroupID, s[3].GroupID = tc.ids[0], tc.ids[1]
			s[1].GroupID = "" // a refinement member's group id is its parent
			ct, _ := Credit(mustTree(s), cfgWith(nil))
			if len(ct.Samples) != len(want.Samples) {
				t.Fatalf("%d samples, want %d", len(ct.Samples), len(want.Samples))
			}
			for i, cs := range ct.Samples {
				w := want.Samples[i]
				if cs.Advantage != w.Advantage || cs.CreditedReward != w.CreditedReward {
					t.Errorf("node %s: credit differs from murphy's own ids", cs.NodeID)
				}
				wantGroup := w.GroupID
				if cs.ParentID == "" {
					wantGroup = tc.wantID
				}
				if cs.GroupID != wantGroup {
					t.Errorf("node %s: group_id %q, want %q", cs.NodeID, cs.GroupID, wantGroup)
				}
			}
		})
	}
	for _, tc := range []struct {
		name  string
		field string
		mod   func(s []*topics.Sample)
	}{
		{"root members disagree", "group_id", func(s []*topics.Sample) { s[0].GroupID, s[3].GroupID = "a", "b" }},
		{"root id is a later node's id", "node_id", func(s []*topics.Sample) { s[0].GroupID, s[3].GroupID = s[1].NodeID, s[1].NodeID }},
		{"root id is an earlier node's id", "group_id", func(s []*topics.Sample) { s[3].GroupID = s[0].NodeID; s[0].GroupID = "" }},
		{"refinement group is not the parent", "group_id", func(s []*topics.Sample) { s[1].GroupID = s[3].NodeID }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := cloneSamples(base)
			tc.mod(s)
			tr := NewTree("R")
			var err error
			for _, x := range s {
				if _, err = tr.Add(x); err != nil {
					break
				}
			}
			var se *SampleError
			if !errors.As(err, &se) || se.Field != tc.field {
				t.Fatalf("err %v, want a SampleError on %s", err, tc.field)
			}
		})
	}
}

func cloneSamples(in []*topics.Sample) []*topics.Sample {
	out := make([]*topics.Sample, len(in))
	for i, s := range in {
		c := *s
		out[i] = &c
	}
	return out
}

func TestGRPOMTHandChecked(t *testing.T) {
	// Chains: A→A1 (1), A→A2 (0), A→Am (masked: no chain), B (.5).
	s := build("G", 2, []nb{
		{r: 0, kids: []nb{{r: 1}, {r: 0}, {r: 0.7, masked: true}}},
		{r: 0.5},
	})
	A, A1, A2, Am, B := s[0].NodeID, s[1].NodeID, s[2].NodeID, s[3].NodeID, s[4].NodeID
	std := math.Sqrt(1.0 / 6) // chains {1, 0, .5}: mean .5
	ct, _ := Credit(mustTree(s), cfgWith(func(c *Config) { c.Strategy = StrategyGRPOMT; c.Epsilon = 1e-6 }))
	got := byNode(ct)
	wantAdv := map[string]float64{A1: 0.5 / (std + 1e-6), A2: -0.5 / (std + 1e-6), B: 0, A: 0, Am: 0}
	wantRt := map[string]float64{A1: 1, A2: 0, B: 0.5, A: 0.5, Am: 0.7}
	for id, w := range wantAdv {
		if !near(got[id].Advantage, w) || !near(got[id].CreditedReward, wantRt[id]) {
			t.Errorf("node %s: advantage %v r~ %v, want %v %v", id, got[id].Advantage, got[id].CreditedReward, w, wantRt[id])
		}
	}
}

// refCredit is an independent implementation of propagation and advantages
// (DESIGN §4 credit) over samples, without pruning: recursion over a
// parent → children map instead of the core's group tables.
func refCredit(samples []*topics.Sample, cfg topics.CreditConfig) (rt, adv map[string]float64) {
	kids := map[string][]*topics.Sample{}
	groups := map[string][]*topics.Sample{}
	for _, s := range samples {
		kids[s.ParentID] = append(kids[s.ParentID], s)
		groups[s.ParentID] = append(groups[s.ParentID], s)
	}
	rt, adv = map[string]float64{}, map[string]float64{}
	masked := func(s *topics.Sample) bool { return s.Route == topics.RouteMasked }
	normalise := func(xs []float64, in []bool) []float64 {
		var c []float64
		for i, x := range xs {
			if in[i] {
				c = append(c, x)
			}
		}
		out := make([]float64, len(xs))
		n := float64(len(c))
		if n == 0 {
			return out
		}
		mean := 0.0
		for _, x := range c {
			mean += x / n
		}
		ss := 0.0
		for _, x := range c {
			ss += (x - mean) * (x - mean)
		}
		std, bound := math.Sqrt(ss/n), math.Sqrt(n-1)
		if cfg.UnbiasedStd {
			std, bound = 0, (n-1)/math.Sqrt(n)
			if n > 1 {
				std = math.Sqrt(ss / (n - 1))
			}
		}
		allSame := true
		for _, x := range c {
			allSame = allSame && x == c[0]
		}
		for i, x := range xs {
			switch {
			case in[i] && allSame:
			case cfg.Advantage == AdvantageStd && in[i]:
				out[i] = (x - mean) / (std + cfg.Epsilon)
			case cfg.Advantage == AdvantageStd:
				out[i] = math.Max(-bound, math.Min(bound, (x-mean)/(std+cfg.Epsilon)))
			case cfg.Advantage == AdvantageLeaveOneOut && in[i] && n == 1:
			case cfg.Advantage == AdvantageLeaveOneOut && in[i]:
				out[i] = x - (mean*n-x)/(n-1)
			default:
				out[i] = x - mean
			}
		}
		return out
	}
	if cfg.Strategy == StrategyGRPOMT {
		type chain struct{ r, a float64 }
		var leaves []*topics.Sample
		var find func(s *topics.Sample)
		find = func(s *topics.Sample) {
			live := 0
			for _, k := range kids[s.NodeID] {
				if !masked(k) {
					live++
					find(k)
				}
			}
			if live == 0 {
				leaves = append(leaves, s)
			}
		}
		for _, s := range kids[""] {
			if !masked(s) {
				find(s)
			}
		}
		xs, in := make([]float64, len(leaves)), make([]bool, len(leaves))
		for i, l := range leaves {
			xs[i], in[i] = l.Reward, l.InGroupStats
		}
		a := normalise(xs, in)
		through := map[string][]chain{}
		byID := map[string]*topics.Sample{}
		for _, s := range samples {
			byID[s.NodeID] = s
		}
		for i, l := range leaves {
			for v := l; v != nil; v = byID[v.ParentID] {
				through[v.NodeID] = append(through[v.NodeID], chain{xs[i], a[i]})
			}
		}
		for _, s := range samples {
			cs := through[s.NodeID]
			if len(cs) == 0 {
				rt[s.NodeID] = s.Reward
				continue
			}
			for _, c := range cs {
				rt[s.NodeID] += c.r / float64(len(cs))
				adv[s.NodeID] += c.a / float64(len(cs))
			}
		}
		return rt, adv
	}
	var prop func(s *topics.Sample) float64
	prop = func(s *topics.Sample) float64 {
		var vals []float64
		for _, k := range kids[s.NodeID] {
			if v := prop(k); !masked(k) {
				vals = append(vals, v)
			}
		}
		r := s.Reward
		switch {
		case len(vals) == 0:
		case cfg.Strategy == StrategyMARS:
			for _, v := range vals {
				r = math.Max(r, v)
			}
		default:
			m := 0.0
			for _, v := range vals {
				m += v / float64(len(vals))
			}
			z := 1.0
			switch cfg.Z {
			case ZRemainingTurns:
				z = float64(s.MaxTurns - s.Turn + 1)
			case ZOnePlusGamma:
				z = 1 + cfg.Gamma
			}
			r += cfg.Gamma * m / z
		}
		rt[s.NodeID] = r
		return r
	}
	for _, s := range kids[""] {
		prop(s)
	}
	for _, g := range groups {
		xs, in := make([]float64, len(g)), make([]bool, len(g))
		for i, s := range g {
			xs[i], in[i] = rt[s.NodeID], s.InGroupStats
		}
		for i, a := range normalise(xs, in) {
			if !masked(g[i]) {
				adv[g[i].NodeID] = a
			}
		}
	}
	return rt, adv
}

func TestCreditMatchesAnIndependentImplementation(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	for trial := range 1500 {
		cfg := cfgWith(func(c *Config) {
			c.Strategy = Strategies()[trial%len(Strategies())]
			c.Advantage = []string{AdvantageStd, AdvantageNoStd, AdvantageLeaveOneOut}[(trial/3)%3]
			c.UnbiasedStd = c.Advantage == AdvantageStd && rng.IntN(2) == 0
			c.Z = []string{ZOne, ZRemainingTurns, ZOnePlusGamma}[rng.IntN(3)]
			c.Gamma = rng.Float64()
		})
		sp := genSpec{maxTurns: 1 + rng.IntN(4), minG: 1, maxG: 5, expand: 0.6, discrete: trial%2 == 0,
			masked: 0.15, outStats: 0.5, degen: 0.15, degenOut: 0.5}
		samples := genTree(rng, fmt.Sprintf("t%d", trial), sp)
		ct, _ := Credit(mustTree(samples), cfg)
		rt, adv := refCredit(samples, cfg)
		for _, cs := range ct.Samples {
			if !near(cs.CreditedReward, rt[cs.NodeID]) || !near(cs.Advantage, adv[cs.NodeID]) {
				t.Fatalf("trial %d %s/%s unbiased=%v node %s (turn %d, route %s, in stats %v): r~ %v adv %v, reference %v %v",
					trial, cfg.Strategy, cfg.Advantage, cfg.UnbiasedStd, cs.NodeID, cs.Turn, cs.Route, cs.InGroupStats,
					cs.CreditedReward, cs.Advantage, rt[cs.NodeID], adv[cs.NodeID])
			}
		}
	}
}
