package credit

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"

	"github.com/murphy-rl/murphy/topics"
)

func cfgWith(mod func(*Config)) topics.CreditConfig {
	c := DefaultConfig()
	if mod != nil {
		mod(&c)
	}
	if err := c.Validate(); err != nil {
		panic(err)
	}
	return c.CreditConfig()
}

func byNode(ct topics.CreditedTree) map[string]*topics.CreditedSample {
	m := make(map[string]*topics.CreditedSample, len(ct.Samples))
	for i := range ct.Samples {
		m[ct.Samples[i].NodeID] = &ct.Samples[i]
	}
	return m
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*(1+math.Abs(a)+math.Abs(b)) }

func TestTreeCompletesExactlyWhenLastNodeArrives(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		sp := genSpec{maxTurns: 1 + rng.IntN(4), minG: 1, maxG: 5, expand: 0.5, masked: 0.1, outStats: 0.5}
		samples := genTree(rng, fmt.Sprintf("t%d", trial), sp)
		rng.Shuffle(len(samples), func(i, j int) { samples[i], samples[j] = samples[j], samples[i] })
		tr := NewTree(samples[0].TreeID)
		for i, s := range samples {
			if tr.Complete() {
				t.Fatalf("trial %d: complete after %d of %d nodes", trial, i, len(samples))
			}
			if tr.Missing() == "" {
				t.Fatalf("trial %d: incomplete tree describes nothing missing", trial)
			}
			added, err := tr.Add(s)
			if err != nil || !added {
				t.Fatalf("trial %d: add %d: added=%v err=%v", trial, i, added, err)
			}
			// A duplicate (a replayed record) changes nothing.
			dup := *s
			dup.Reward = 42
			if added, err := tr.Add(&dup); added || err != nil {
				t.Fatalf("trial %d: duplicate accepted: added=%v err=%v", trial, added, err)
			}
		}
		if !tr.Complete() || tr.Missing() != "" || tr.Len() != len(samples) {
			t.Fatalf("trial %d: not complete after every node: %s", trial, tr.Missing())
		}
	}
}

func TestAddRejectsSamplesThatContradictTheTree(t *testing.T) {
	base := build("T", 3, []nb{{r: 0, kids: []nb{{r: 1}}}, {r: 1}})
	tests := []struct {
		name  string
		field string
		mod   func(s *topics.Sample)
	}{
		{"other tree", "tree_id", func(s *topics.Sample) { s.TreeID = "U" }},
		{"no node id", "node_id", func(s *topics.Sample) { s.NodeID = "" }},
		{"group is not the parent", "group_id", func(s *topics.Sample) { s.ParentID = base[0].NodeID }},
		{"empty group", "group_size", func(s *topics.Sample) { s.GroupSize = 0 }},
		{"turn past max", "max_turns", func(s *topics.Sample) { s.MaxTurns = 1; s.Turn = 2 }},
		{"children at last turn", "children_requested", func(s *topics.Sample) { s.MaxTurns = 1; s.ChildrenRequested = 2 }},
		{"negative children", "children_requested", func(s *topics.Sample) { s.ChildrenRequested = -1 }},
		{"NaN reward", "reward", func(s *topics.Sample) { s.Reward = math.NaN() }},
		{"unknown route", "route", func(s *topics.Sample) { s.Route = "bogus" }},
		{"root member at turn 2", "turn", func(s *topics.Sample) { s.Turn = 2 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTree("T")
			s := *base[2] // the root-group leaf
			tc.mod(&s)
			added, err := tr.Add(&s)
			var se *SampleError
			if added || !errors.As(err, &se) || se.Field != tc.field {
				t.Fatalf("added=%v err=%v, want a SampleError on %s", added, err, tc.field)
			}
			if tr.Len() != 0 {
				t.Fatalf("rejected sample changed the tree")
			}
		})
	}
	t.Run("child turn disagrees with parent", func(t *testing.T) {
		tr := NewTree("T")
		child := *base[1]
		child.Turn = 3
		if _, err := tr.Add(&child); err != nil {
			t.Fatal(err)
		}
		if _, err := tr.Add(base[0]); err == nil {
			t.Fatal("parent at turn 1 accepted over children at turn 3")
		}
	})
}

// subtreeMax is max r over v and its descendants.
func subtreeMax(samples []*topics.Sample) map[string]float64 {
	kids := map[string][]*topics.Sample{}
	for _, s := range samples {
		kids[s.ParentID] = append(kids[s.ParentID], s)
	}
	out := map[string]float64{}
	var f func(s *topics.Sample) float64
	f = func(s *topics.Sample) float64 {
		m := s.Reward
		for _, k := range kids[s.NodeID] {
			m = max(m, f(k))
		}
		out[s.NodeID] = m
		return m
	}
	for _, s := range kids[""] {
		f(s)
	}
	return out
}

func TestMARSEqualsSubtreeMaxAndNeverLowersReward(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	cfg := cfgWith(nil)
	for trial := range 500 {
		sp := genSpec{maxTurns: 1 + rng.IntN(4), minG: 1, maxG: 6, expand: 0.6, masked: 0.1, discrete: trial%2 == 0}
		samples := genTree(rng, fmt.Sprintf("t%d", trial), sp)
		ct, _ := Credit(mustTree(samples), cfg)
		want := subtreeMax(samples)
		for _, cs := range ct.Samples {
			if cs.CreditedReward != want[cs.NodeID] {
				t.Fatalf("trial %d node %s: r~=%v, subtree max %v", trial, cs.NodeID, cs.CreditedReward, want[cs.NodeID])
			}
			if cs.CreditedReward < cs.Reward {
				t.Fatalf("trial %d: r~ %v < r %v", trial, cs.CreditedReward, cs.Reward)
			}
		}
		if len(ct.Samples) != len(samples) {
			t.Fatalf("trial %d: %d samples out of %d", trial, len(ct.Samples), len(samples))
		}
	}
}

func TestMERSNeverLowersNonNegativeRewards(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, z := range []string{ZOne, ZRemainingTurns, ZOnePlusGamma} {
		cfg := cfgWith(func(c *Config) { c.Strategy = StrategyMERS; c.Z = z; c.Gamma = 0.9 })
		for trial := range 200 {
			sp := genSpec{maxTurns: 3, minG: 2, maxG: 5, expand: 0.5}
			ct, _ := Credit(mustTree(genTree(rng, fmt.Sprintf("t%d", trial), sp)), cfg)
			for _, cs := range ct.Samples {
				if cs.CreditedReward < cs.Reward {
					t.Fatalf("z=%s: r~ %v < r %v", z, cs.CreditedReward, cs.Reward)
				}
				if cs.ChildrenRequested == 0 && cs.CreditedReward != cs.Reward {
					t.Fatalf("z=%s: leaf r~ %v != r %v", z, cs.CreditedReward, cs.Reward)
				}
			}
		}
	}
}

func TestAdvantagesOfFullGroupsSumToZero(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, mode := range []string{AdvantageStd, AdvantageNoStd, AdvantageLeaveOneOut} {
		for _, strat := range []string{StrategyMARS, StrategyMERS} {
			cfg := cfgWith(func(c *Config) { c.Advantage = mode; c.Strategy = strat; c.Gamma = 0.7 })
			for trial := range 200 {
				sp := genSpec{maxTurns: 3, minG: 1, maxG: 8, expand: 0.5, discrete: trial%3 == 0}
				ct, _ := Credit(mustTree(genTree(rng, fmt.Sprintf("t%d", trial), sp)), cfg)
				sums := map[string]float64{}
				scale := map[string]float64{}
				for _, cs := range ct.Samples {
					sums[cs.GroupID] += cs.Advantage
					scale[cs.GroupID] += math.Abs(cs.Advantage)
				}
				for g, s := range sums {
					if math.Abs(s) > 1e-9*(1+scale[g]) {
						t.Fatalf("%s/%s trial %d: group %s advantages sum to %v", mode, strat, trial, g, s)
					}
				}
			}
		}
	}
}

// bruteMaxVariance enumerates every k-subset of xs.
func bruteMaxVariance(xs []float64, k int) float64 {
	best := math.Inf(-1)
	n := len(xs)
	for mask := 0; mask < 1<<n; mask++ {
		if popcount(mask) != k {
			continue
		}
		var sub []float64
		for i := range n {
			if mask&(1<<i) != 0 {
				sub = append(sub, xs[i])
			}
		}
		best = max(best, popVariance(sub))
	}
	return best
}

func popcount(x int) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}

func popVariance(xs []float64) float64 {
	var m float64
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	var ss float64
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	return ss / float64(len(xs))
}

func extremes(xs []float64, k, i int) []float64 {
	n := len(xs)
	return append(append([]float64{}, xs[:i]...), xs[n-(k-i):]...)
}

func TestIntrapSplitMatchesBruteForceUpTo12(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for trial := range 3000 {
		n := 1 + rng.IntN(12)
		xs := make([]float64, n)
		for i := range xs {
			switch trial % 3 {
			case 0:
				xs[i] = float64(rng.IntN(3)) / 2 // many ties
			case 1:
				xs[i] = rng.Float64()
			default:
				xs[i] = rng.NormFloat64() * 100
			}
		}
		sort.Float64s(xs)
		k := 1 + rng.IntN(n)
		i := BestExtremeSplit(xs, k)
		if i < 0 || i > k {
			t.Fatalf("split %d outside 0..%d", i, k)
		}
		brute := bruteMaxVariance(xs, k)
		tol := 1e-9 * (1 + (xs[n-1]-xs[0])*(xs[n-1]-xs[0]))
		got := popVariance(extremes(xs, k, i))
		if math.Abs(got-brute) > tol {
			t.Fatalf("xs=%v k=%d: split %d has variance %v, brute force %v", xs, k, i, got, brute)
		}
		// The smallest i that reaches the maximum wins.
		for j := 0; j < i; j++ {
			if v := popVariance(extremes(xs, k, j)); v >= brute-tol*1e-3 {
				t.Fatalf("xs=%v k=%d: split %d chosen but %d already reaches %v", xs, k, i, j, v)
			}
		}
	}
}

func TestIntrapKeepsKMembersOfMaximalVariance(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for trial := range 300 {
		k := 1 + rng.IntN(5)
		cfg := cfgWith(func(c *Config) { c.IntrapK = k })
		sp := genSpec{maxTurns: 3, minG: 1, maxG: 12, expand: 0.3, discrete: trial%2 == 0}
		samples := genTree(rng, fmt.Sprintf("t%d", trial), sp)
		ct, st := Credit(mustTree(samples), cfg)
		in := map[string][]float64{}
		for _, s := range samples {
			in[s.GroupID] = append(in[s.GroupID], s.Reward)
		}
		out := map[string][]float64{}
		for _, cs := range ct.Samples {
			out[cs.GroupID] = append(out[cs.GroupID], cs.Reward)
		}
		for g, kept := range out {
			orig := in[g]
			if len(orig) <= k {
				if len(kept) != len(orig) {
					t.Fatalf("trial %d: group of %d <= k=%d lost members", trial, len(orig), k)
				}
				continue
			}
			if len(kept) != k {
				t.Fatalf("trial %d: group of %d kept %d, want k=%d", trial, len(orig), len(kept), k)
			}
			if v, b := popVariance(kept), bruteMaxVariance(orig, k); !near(v, b) {
				t.Fatalf("trial %d: kept variance %v, best %v", trial, v, b)
			}
		}
		if st.PrunedNodes+len(ct.Samples) != len(samples) || ct.PrunedNodes != st.PrunedNodes {
			t.Fatalf("trial %d: pruned %d + kept %d != %d", trial, st.PrunedNodes, len(ct.Samples), len(samples))
		}
	}
}

func TestPruningNeverLeavesAnOrphan(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	orders := [][]string{nil, {PruneInterp, PruneIntrap}, {PruneIntrap, PruneInterp}}
	for trial := range 600 {
		cfg := cfgWith(func(c *Config) {
			c.IntrapK = rng.IntN(4)
			c.InterpM = rng.IntN(6)
			if rng.IntN(2) == 0 {
				c.InterpThreshold = rng.Float64() * 0.1
			}
			o := orders[rng.IntN(len(orders))]
			if o != nil && c.IntrapK > 0 && (c.InterpM > 0 || c.InterpThreshold > 0) {
				c.PruneOrder = o
			}
		})
		sp := genSpec{maxTurns: 4, minG: 1, maxG: 6, expand: 0.6, discrete: trial%2 == 0, masked: 0.05}
		samples := genTree(rng, fmt.Sprintf("t%d", trial), sp)
		ct, st := Credit(mustTree(samples), cfg)
		kept := byNode(ct)
		for _, cs := range ct.Samples {
			if cs.ParentID != "" && kept[cs.ParentID] == nil {
				t.Fatalf("trial %d (%+v): node %s kept without its parent %s", trial, cfg, cs.NodeID, cs.ParentID)
			}
		}
		if st.PrunedNodes+len(ct.Samples) != len(samples) {
			t.Fatalf("trial %d: pruned %d + kept %d != %d", trial, st.PrunedNodes, len(ct.Samples), len(samples))
		}
		if cfg.InterpM > 0 && st.Groups > cfg.InterpM+1 {
			t.Fatalf("trial %d: %d groups survive interp m=%d (plus the root group)", trial, st.Groups, cfg.InterpM)
		}
		if len(ct.Samples) == 0 || ct.Samples[0].ParentID != "" {
			t.Fatalf("trial %d (%+v): the root group did not survive pruning", trial, cfg)
		}
	}
}

func TestInterpRanksGroupsByVarianceThenID(t *testing.T) {
	// Root group {0, 1} (variance .25, never ranked); A's children {0, .5}
	// (.0625); B's children {1, 1} (0).
	roots := []nb{
		{r: 0, kids: []nb{{r: 0}, {r: 0.5}}},
		{r: 1, kids: []nb{{r: 1}, {r: 1}}},
	}
	samples := build("T", 2, roots)
	root := topics.RootID("T")
	a, b := samples[0].NodeID, samples[3].NodeID
	tests := []struct {
		name      string
		m         int
		threshold float64
		groups    []string
	}{
		{"top 1 and the root group", 1, 0, []string{root, a}},
		{"top 2", 2, 0, []string{root, a, b}},
		{"threshold .1", 0, 0.1, []string{root}},
		{"threshold .05", 0, 0.05, []string{root, a}},
		{"top 3 above .01", 3, 0.01, []string{root, a}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := cfgWith(func(c *Config) { c.InterpM = tc.m; c.InterpThreshold = tc.threshold })
			ct, _ := Credit(mustTree(samples), cfg)
			var got []string
			seen := map[string]bool{}
			for _, cs := range ct.Samples {
				if !seen[cs.GroupID] {
					seen[cs.GroupID] = true
					got = append(got, cs.GroupID)
				}
			}
			sort.Strings(got)
			want := append([]string{}, tc.groups...)
			sort.Strings(want)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("groups %v, want %v (a=%s b=%s)", got, want, a, b)
			}
		})
	}
	t.Run("a zero-variance root group is kept", func(t *testing.T) {
		// The root group {.5, .5} has variance 0; its child group {0, 1}
		// is the only refinement group and is kept too.
		s := build("U", 2, []nb{{r: 0.5, kids: []nb{{r: 0}, {r: 1}}}, {r: 0.5}})
		ct, st := Credit(mustTree(s), cfgWith(func(c *Config) { c.InterpM = 1; c.InterpThreshold = 0.01 }))
		if len(ct.Samples) != 4 || st.PrunedNodes != 0 {
			t.Fatalf("kept %d, pruned %d; want 4 and 0", len(ct.Samples), st.PrunedNodes)
		}
	})
}

func TestCreditDoesNotDependOnArrivalOrderOrDuplicates(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	for trial := range 200 {
		cfg := cfgWith(func(c *Config) {
			c.IntrapK = rng.IntN(4)
			c.InterpM = rng.IntN(4)
			c.Strategy = []string{StrategyMARS, StrategyMERS}[trial%2]
			c.Z = ZRemainingTurns
		})
		sp := genSpec{maxTurns: 3, minG: 1, maxG: 7, expand: 0.5, discrete: true, masked: 0.1, outStats: 0.5}
		samples := genTree(rng, fmt.Sprintf("t%d", trial), sp)
		want, _ := Credit(mustTree(samples), cfg)
		shuffled := append([]*topics.Sample{}, samples...)
		for range len(samples) / 3 {
			shuffled = append(shuffled, samples[rng.IntN(len(samples))])
		}
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		tr := NewTree(samples[0].TreeID)
		for _, s := range shuffled {
			if _, err := tr.Add(s); err != nil {
				t.Fatal(err)
			}
		}
		got, _ := Credit(tr, cfg)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("trial %d: credit changed with arrival order", trial)
		}
	}
}

// handTree: A (r=0) → {A1 (1), A2 (0) → {A2a (1), A2b (0)}}, B (1); T=3.
func handTree() []*topics.Sample {
	return build("H", 3, []nb{
		{r: 0, kids: []nb{{r: 1}, {r: 0, kids: []nb{{r: 1}, {r: 0}}}}},
		{r: 1},
	})
}

func TestMERSHandChecked(t *testing.T) {
	tests := []struct {
		z     string
		gamma float64
		a, a2 float64 // r~ of A and A2
	}{
		// A2 = 0 + γ·mean(1, 0)/Z(turn 2); A = 0 + γ·mean(1, A2)/Z(turn 1).
		{ZOne, 0.5, 0.5 * (1 + 0.25) / 2, 0.25},
		{ZRemainingTurns, 0.5, 0.5 * (1 + 0.125) / 2 / 3, 0.5 * 0.5 / 2},
		{ZOnePlusGamma, 0.5, 7.0 / 36, 1.0 / 6},
		{ZOne, 1, (1 + 0.5) / 2, 0.5},
		{ZRemainingTurns, 1, (1 + 0.25) / 2 / 3, 0.25},
		{ZOnePlusGamma, 1, (1 + 0.25) / 2 / 2, 0.25},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("z=%s/gamma=%v", tc.z, tc.gamma), func(t *testing.T) {
			s := handTree()
			cfg := cfgWith(func(c *Config) { c.Strategy = StrategyMERS; c.Z = tc.z; c.Gamma = tc.gamma })
			ct, _ := Credit(mustTree(s), cfg)
			got := byNode(ct)
			A, A1, A2, A2a, A2b, B := s[0].NodeID, s[1].NodeID, s[2].NodeID, s[3].NodeID, s[4].NodeID, s[5].NodeID
			for id, want := range map[string]float64{A: tc.a, A2: tc.a2, A1: 1, A2a: 1, A2b: 0, B: 1} {
				if !near(got[id].CreditedReward, want) {
					t.Errorf("node %s: r~=%v want %v", id, got[id].CreditedReward, want)
				}
			}
			// Root group {A, B}: two members, so std advantages are ∓1.
			if !near(got[A].Advantage, -1/(1+2e-6/(1-tc.a))) || !near(got[B].Advantage, -got[A].Advantage) {
				t.Errorf("root advantages %v %v", got[A].Advantage, got[B].Advantage)
			}
			if ct.Config.Strategy != StrategyMERS || ct.Config.Z != tc.z || ct.Config.Gamma != tc.gamma {
				t.Errorf("config does not travel with the tree: %+v", ct.Config)
			}
		})
	}
	t.Run("mars", func(t *testing.T) {
		s := handTree()
		ct, _ := Credit(mustTree(s), cfgWith(nil))
		got := byNode(ct)
		if got[s[0].NodeID].CreditedReward != 1 || got[s[2].NodeID].CreditedReward != 1 {
			t.Fatalf("MARS A=%v A2=%v, want 1 1", got[s[0].NodeID].CreditedReward, got[s[2].NodeID].CreditedReward)
		}
	})
}

func TestMaskedMembers(t *testing.T) {
	// Root group {x=1, y=0, m masked (reward .9)}; P (root member, r=0) has
	// children {c=0.2, mc masked r=.8}.
	tests := []struct {
		name     string
		out      bool // masked members out of group stats
		mode     string
		wantX    float64
		wantY    float64
		wantP    float64 // MARS r~ of P
		wantPAdv float64
		wantC    float64 // advantage of P's train child
	}{
		// In stats: the masked child never propagates, so P's r~ is .2 and
		// the root group r~ = {x 1, y 0, m .9, P .2}: mean .525.
		{"in stats, no_std", false, AdvantageNoStd, 1 - 0.525, -0.525, 0.2, 0.2 - 0.525, 0.2 - 0.5},
		// Out of stats: root {x 1, y 0, P .2}: mean 0.4.
		{"out of stats, no_std", true, AdvantageNoStd, 0.6, -0.4, 0.2, 0.2 - 0.4, 0},
		// Leave-one-out, out of stats: x: 1 − (0+.2)/2.
		{"out of stats, loo", true, AdvantageLeaveOneOut, 0.9, 0 - 0.6, 0.2, 0.2 - 0.5, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := build("M", 2, []nb{
				{r: 1}, {r: 0}, {r: 0.9, masked: true, out: tc.out},
				{r: 0, kids: []nb{{r: 0.2}, {r: 0.8, masked: true, out: tc.out}}},
			})
			ct, _ := Credit(mustTree(s), cfgWith(func(c *Config) { c.Advantage = tc.mode }))
			got := byNode(ct)
			x, y, m, p, c, mc := got[s[0].NodeID], got[s[1].NodeID], got[s[2].NodeID], got[s[3].NodeID], got[s[4].NodeID], got[s[5].NodeID]
			if !near(x.Advantage, tc.wantX) || !near(y.Advantage, tc.wantY) {
				t.Errorf("advantages x=%v y=%v, want %v %v", x.Advantage, y.Advantage, tc.wantX, tc.wantY)
			}
			if !near(p.CreditedReward, tc.wantP) || !near(p.Advantage, tc.wantPAdv) {
				t.Errorf("P r~=%v adv=%v, want %v %v", p.CreditedReward, p.Advantage, tc.wantP, tc.wantPAdv)
			}
			for _, mm := range []*topics.CreditedSample{m, mc} {
				if mm.Advantage != 0 || !reflect.DeepEqual(mm.LossWeights, topics.Float32s{0, 0, 0}) {
					t.Errorf("masked member: advantage %v, loss weights %v", mm.Advantage, mm.LossWeights)
				}
			}
			if !reflect.DeepEqual(x.LossWeights, topics.Float32s{1, 1, 1}) || !near(c.Advantage, tc.wantC) {
				t.Errorf("train member loss weights %v; P's child advantage %v, want %v", x.LossWeights, c.Advantage, tc.wantC)
			}
			if !reflect.DeepEqual(s[2].LossWeights, topics.Float32s{1, 1, 1}) {
				t.Errorf("input sample was modified")
			}
		})
	}
}

func TestStdAdvantageHandChecked(t *testing.T) {
	s := build("S", 1, []nb{{r: 1}, {r: 0}, {r: 0}, {r: 0.5}})
	ct, _ := Credit(mustTree(s), cfgWith(func(c *Config) { c.Epsilon = 0.01 }))
	// mean .375, std sqrt((.390625+.140625*2+.015625)/4) = sqrt(.171875)
	std := math.Sqrt(0.171875)
	for i, r := range []float64{1, 0, 0, 0.5} {
		if want := (r - 0.375) / (std + 0.01); !near(ct.Samples[i].Advantage, want) {
			t.Errorf("member %d: %v want %v", i, ct.Samples[i].Advantage, want)
		}
	}
}

func TestZeroSignalGroupsCountedAndDropped(t *testing.T) {
	// Root {A=0 → {.3,.3,.3}, B=.3}: MARS gives the root group {.3, .3} and
	// the child group {.3,.3,.3}: both zero-signal. C's group is not.
	s := build("Z", 2, []nb{{r: 0.1, kids: []nb{{r: 0.3}, {r: 0.3}, {r: 0.3}}}, {r: 0.3}})
	for _, drop := range []bool{false, true} {
		ct, st := Credit(mustTree(s), cfgWith(func(c *Config) { c.DropZeroSignal = drop }))
		if st.ZeroSignalGroups != 2 || st.Groups != 2 {
			t.Fatalf("drop=%v: %d zero-signal of %d groups, want 2 of 2", drop, st.ZeroSignalGroups, st.Groups)
		}
		for _, cs := range ct.Samples {
			if cs.Advantage != 0 {
				t.Fatalf("advantage %v in a zero-signal group", cs.Advantage)
			}
		}
		wantOut, wantDropped := 5, 0
		if drop {
			wantOut, wantDropped = 0, 5
		}
		if len(ct.Samples) != wantOut || st.DroppedSamples != wantDropped {
			t.Fatalf("drop=%v: %d out, %d dropped", drop, len(ct.Samples), st.DroppedSamples)
		}
	}
	// Only the all-equal group is dropped; its informative children stay.
	s = build("Z2", 2, []nb{{r: 0, kids: []nb{{r: 1}, {r: 0}}}, {r: 1}})
	ct, st := Credit(mustTree(s), cfgWith(func(c *Config) { c.DropZeroSignal = true }))
	if st.ZeroSignalGroups != 1 || len(ct.Samples) != 2 || ct.Samples[0].Turn != 2 {
		t.Fatalf("zero-signal %d, kept %d", st.ZeroSignalGroups, len(ct.Samples))
	}
}

func TestIncompleteTreeIsCreditedOverWhatArrived(t *testing.T) {
	s := handTree()
	tr := NewTree("H")
	for _, x := range s {
		if x.NodeID == s[4].NodeID { // A2b never arrives
			continue
		}
		if _, err := tr.Add(x); err != nil {
			t.Fatal(err)
		}
	}
	if tr.Complete() {
		t.Fatal("tree without A2b is complete")
	}
	ct, _ := Credit(tr, cfgWith(nil))
	if !ct.Incomplete || len(ct.Samples) != 5 {
		t.Fatalf("incomplete=%v samples=%d", ct.Incomplete, len(ct.Samples))
	}
}

func TestConfigValidation(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*Config)
		ok   bool
	}{
		{"default", func(*Config) {}, true},
		{"mers remaining turns", func(c *Config) { c.Strategy = StrategyMERS; c.Z = ZRemainingTurns }, true},
		{"unknown strategy", func(c *Config) { c.Strategy = "sum" }, false},
		{"negative gamma", func(c *Config) { c.Gamma = -1 }, false},
		{"unknown z", func(c *Config) { c.Z = "2" }, false},
		{"unknown advantage", func(c *Config) { c.Advantage = "rank" }, false},
		{"zero epsilon with std", func(c *Config) { c.Epsilon = 0 }, false},
		{"zero epsilon without std", func(c *Config) { c.Epsilon = 0; c.Advantage = AdvantageNoStd }, true},
		{"order lacks an enabled pass", func(c *Config) { c.IntrapK = 2; c.InterpM = 1; c.PruneOrder = []string{PruneInterp} }, false},
		{"unknown pass", func(c *Config) { c.PruneOrder = []string{"prune"} }, false},
		{"incomplete mode", func(c *Config) { c.Incomplete = "keep" }, false},
		{"no deadline", func(c *Config) { c.Deadline = 0 }, false},
		{"no open trees", func(c *Config) { c.MaxOpenTrees = 0 }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.mod(&c)
			if err := c.Validate(); (err == nil) != tc.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tc.ok)
			}
		})
	}
	c := DefaultConfig()
	c.IntrapK, c.InterpM = 2, 3
	if got := c.CreditConfig().PruneOrder; !reflect.DeepEqual(got, []string{PruneIntrap, PruneInterp}) {
		t.Fatalf("default prune order %v", got)
	}
	if got := DefaultConfig().CreditConfig().PruneOrder; got != nil {
		t.Fatalf("prune order without pruning: %v", got)
	}
}
