package credit

import (
	"cmp"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/murphy-rl/murphy/topics"
)

// Stats counts what Credit did to one tree.
type Stats struct {
	// Nodes is the number of distinct nodes assembled.
	Nodes int
	// PrunedNodes were removed by INTRAP/INTERP, subtrees included.
	PrunedNodes int
	// Groups is the number of response groups that survived pruning.
	Groups int
	// ZeroSignalGroups are surviving groups whose advantages are all zero.
	ZeroSignalGroups int
	// DroppedSamples are members of zero-signal groups left out of the
	// output (DropZeroSignal).
	DroppedSamples int
}

// work holds the per-call state of Credit, indexed like Tree.nodes/groups.
type work struct {
	t      *Tree
	cfg    topics.CreditConfig
	alive  []bool
	rt     []float64 // r~
	adv    []float64
	order  []int32   // groups by (turn, id)
	sorted [][]int32 // members of each group by (index, node id)
	stack  []int32
	pruned int
	// scratch of advantages
	xs, out []float64
	in      []bool
}

// Credit prunes, propagates and computes advantages for t under cfg, which
// must satisfy ValidateCreditConfig. t is not modified. Samples of the
// result are ordered by (turn, group id, index, node id) whatever the
// arrival order; CreditedAt is left for the caller to set.
//
// Membership rules (DESIGN §4 credit), each its own setting:
//
//   - INTERP ranks refinement groups only; the root group is always kept.
//   - Propagation never uses a masked child (an infrastructure failure);
//     a node whose children are all masked keeps r~ = r. Children outside
//     the group statistics for another reason (degenerate) propagate.
//   - A member enters its group's mean/std exactly when in_group_stats is
//     set; one outside them gets a bounded advantage (see Normalise).
//   - Masked members always get a zero advantage and zero loss weights.
//
// An incomplete tree is credited over the nodes that arrived: a group whose
// parent never arrived is propagated and normalised on its own. Root
// members carry the root group's id (RootGroup) in the output.
func Credit(t *Tree, cfg topics.CreditConfig) (topics.CreditedTree, Stats) {
	w := &work{
		t:      t,
		cfg:    cfg,
		alive:  make([]bool, len(t.nodes)),
		rt:     make([]float64, len(t.nodes)),
		adv:    make([]float64, len(t.nodes)),
		sorted: make([][]int32, len(t.groups)),
	}
	for i := range w.alive {
		w.alive[i] = true
	}
	w.sortGroups()
	for _, p := range cfg.PruneOrder {
		switch p {
		case PruneIntrap:
			if cfg.IntrapK > 0 {
				w.intrap(cfg.IntrapK)
			}
		case PruneInterp:
			if cfg.InterpM > 0 || cfg.InterpThreshold > 0 {
				w.interp(cfg.InterpM, cfg.InterpThreshold)
			}
		}
	}
	st := Stats{Nodes: len(t.nodes), PrunedNodes: w.pruned}
	zero := make([]bool, len(t.groups))
	chains := cfg.Strategy == StrategyGRPOMT
	if chains {
		w.chains()
	} else {
		w.propagate()
	}
	for _, gi := range w.order {
		if chains {
			if w.emptyGroup(gi) {
				continue
			}
		} else if w.advantages(gi) {
			continue
		}
		st.Groups++
		if w.zeroSignal(gi) {
			zero[gi] = true
			st.ZeroSignalGroups++
		}
	}

	out := topics.CreditedTree{
		SchemaVersion: topics.SchemaVersion,
		TreeID:        t.id,
		TaskID:        t.taskID,
		Incomplete:    !t.Complete(),
		Config:        cfg,
		PrunedNodes:   w.pruned,
		Samples:       make([]topics.CreditedSample, 0, len(t.nodes)-w.pruned),
	}
	for _, gi := range w.order {
		for _, v := range w.sorted[gi] {
			if !w.alive[v] {
				continue
			}
			if zero[gi] && cfg.DropZeroSignal {
				st.DroppedSamples++
				continue
			}
			s := t.nodes[v].s
			cs := topics.CreditedSample{Sample: *s, CreditedReward: w.rt[v], Advantage: w.adv[v]}
			switch {
			case t.groups[gi].root:
				cs.GroupID = t.rootGroup // opaque or derived root group id
			case cs.GroupID == "":
				cs.GroupID = cs.ParentID
			}
			if s.Route == topics.RouteMasked {
				n := max(len(s.LossWeights), len(s.ResponseTokenIDs))
				if n > 0 || s.LossWeights != nil {
					cs.LossWeights = make([]float32, n)
				}
			}
			out.Samples = append(out.Samples, cs)
		}
	}
	return out, st
}

// sortGroups orders groups by (turn, id) and each group's members by
// (index, node id), so that every float sum below runs in an order that
// does not depend on arrival.
func (w *work) sortGroups() {
	t := w.t
	w.order = make([]int32, 0, len(t.groups))
	for gi := range t.groups {
		if len(t.groups[gi].members) > 0 {
			w.order = append(w.order, int32(gi))
		}
	}
	slices.SortFunc(w.order, func(a, b int32) int {
		ga, gb := &t.groups[a], &t.groups[b]
		if c := cmp.Compare(ga.turn, gb.turn); c != 0 {
			return c
		}
		return strings.Compare(ga.id, gb.id)
	})
	all := make([]int32, len(t.nodes))
	off := 0
	for _, gi := range w.order {
		m := all[off : off+len(t.groups[gi].members) : off+len(t.groups[gi].members)]
		off += len(m)
		copy(m, t.groups[gi].members)
		if len(m) > 1 {
			slices.SortFunc(m, func(a, b int32) int {
				sa, sb := t.nodes[a].s, t.nodes[b].s
				if c := cmp.Compare(sa.Index, sb.Index); c != 0 {
					return c
				}
				return strings.Compare(sa.NodeID, sb.NodeID)
			})
		}
		w.sorted[gi] = m
	}
}

// kill removes node v and its whole subtree.
func (w *work) kill(v int32) {
	w.stack = append(w.stack[:0], v)
	for len(w.stack) > 0 {
		u := w.stack[len(w.stack)-1]
		w.stack = w.stack[:len(w.stack)-1]
		if !w.alive[u] {
			continue
		}
		w.alive[u] = false
		w.pruned++
		if c := w.t.nodes[u].child; c >= 0 {
			w.stack = append(w.stack, w.t.groups[c].members...)
		}
	}
}

func (w *work) aliveMembers(gi int32, buf []int32) []int32 {
	buf = buf[:0]
	for _, v := range w.sorted[gi] {
		if w.alive[v] {
			buf = append(buf, v)
		}
	}
	return buf
}

// intrap keeps, in every group with more than k members, the k members
// whose rewards have the largest variance among themselves. For values
// sorted ascending the best k-subset is the i lowest plus the k−i highest
// for some i; members are ordered by (reward, node id) and the smallest i
// reaching the maximum wins.
func (w *work) intrap(k int) {
	var buf []int32
	var xs []float64
	for _, gi := range w.order {
		buf = w.aliveMembers(gi, buf)
		if len(buf) <= k {
			continue
		}
		nodes := w.t.nodes
		slices.SortFunc(buf, func(a, b int32) int {
			sa, sb := nodes[a].s, nodes[b].s
			if c := cmp.Compare(sa.Reward, sb.Reward); c != 0 {
				return c
			}
			return strings.Compare(sa.NodeID, sb.NodeID)
		})
		xs = xs[:0]
		for _, v := range buf {
			xs = append(xs, nodes[v].s.Reward)
		}
		i := BestExtremeSplit(xs, k)
		n := len(buf)
		for j := i; j < n-(k-i); j++ {
			w.kill(buf[j])
		}
	}
}

// BestExtremeSplit returns the i in 0..k for which the i lowest and the
// k−i highest of the ascending values xs have the largest (population)
// variance, the smallest such i on ties. It needs 1 <= k <= len(xs).
func BestExtremeSplit(xs []float64, k int) int {
	n := len(xs)
	if k >= n || k <= 0 {
		return 0
	}
	shift := xs[n/2]
	spread := xs[n-1] - xs[0]
	if spread == 0 {
		return 0
	}
	// Sums of the i lowest (lo) and of the k−i highest (hi) shifted values.
	var lo1, lo2, hi1, hi2 float64
	for j := n - k; j < n; j++ {
		y := xs[j] - shift
		hi1 += y
		hi2 += y * y
	}
	vars := make([]float64, k+1)
	best := math.Inf(-1)
	fk := float64(k)
	for i := 0; i <= k; i++ {
		if i > 0 {
			y := xs[i-1] - shift
			lo1 += y
			lo2 += y * y
			z := xs[n-k+i-1] - shift
			hi1 -= z
			hi2 -= z * z
		}
		m := (lo1 + hi1) / fk
		v := (lo2+hi2)/fk - m*m
		vars[i] = v
		best = max(best, v)
	}
	// Mathematically equal variances may differ in the last bits.
	tol := 1e-12 * spread * spread
	for i, v := range vars {
		if v >= best-tol {
			return i
		}
	}
	return 0
}

// variance is the population variance of the alive members' rewards.
func (w *work) variance(gi int32) (float64, bool) {
	var n int
	var sum float64
	for _, v := range w.sorted[gi] {
		if w.alive[v] {
			n++
			sum += w.t.nodes[v].s.Reward
		}
	}
	if n == 0 {
		return 0, false
	}
	mean := sum / float64(n)
	var ss float64
	for _, v := range w.sorted[gi] {
		if w.alive[v] {
			d := w.t.nodes[v].s.Reward - mean
			ss += d * d
		}
	}
	return ss / float64(n), true
}

// interp keeps the m refinement groups with the largest within-group
// reward variance (ranked by variance descending, then group id) that also
// reach the threshold; the members of every other refinement group go with
// their subtrees. The root group, sampled from the task's own prompt, is
// never ranked and always kept, so pruning never empties a tree.
func (w *work) interp(m int, threshold float64) {
	type ranked struct {
		gi  int32
		v   float64
		ids string
	}
	var rs []ranked
	for _, gi := range w.order {
		if w.t.groups[gi].root {
			continue
		}
		if v, ok := w.variance(gi); ok {
			rs = append(rs, ranked{gi: gi, v: v, ids: w.t.groups[gi].id})
		}
	}
	sort.Slice(rs, func(a, b int) bool {
		if rs[a].v != rs[b].v {
			return rs[a].v > rs[b].v
		}
		return rs[a].ids < rs[b].ids
	})
	for rank, r := range rs {
		keep := (m <= 0 || rank < m) && (threshold <= 0 || r.v >= threshold)
		if keep {
			continue
		}
		for _, v := range w.sorted[r.gi] {
			if w.alive[v] {
				w.kill(v)
			}
		}
	}
}

// counts says whether a member enters its group's statistics.
func counts(s *topics.Sample) bool { return s.InGroupStats }

// propagates says whether a child enters its parent's propagated reward:
// every outcome of the policy does (degenerate ones too, whatever the
// group statistics say); an infrastructure failure (masked) says nothing
// about the feedback its parent produced and never does.
func propagates(s *topics.Sample) bool { return s.Route != topics.RouteMasked }

// propagate computes r~ for every alive node, children before parents
// (groups by turn descending).
func (w *work) propagate() {
	t := w.t
	mars := w.cfg.Strategy == StrategyMARS
	for o := len(w.order) - 1; o >= 0; o-- {
		for _, v := range w.sorted[w.order[o]] {
			if !w.alive[v] {
				continue
			}
			nd := &t.nodes[v]
			r := nd.s.Reward
			w.rt[v] = r
			if nd.child < 0 {
				continue
			}
			var n int
			var acc float64
			if mars {
				acc = math.Inf(-1)
			}
			for _, u := range w.sorted[nd.child] {
				if !w.alive[u] || !propagates(t.nodes[u].s) {
					continue
				}
				n++
				if mars {
					acc = max(acc, w.rt[u])
				} else {
					acc += w.rt[u]
				}
			}
			if n == 0 {
				continue // leaf after pruning, or every child masked: r~ = r
			}
			if mars {
				w.rt[v] = max(r, acc)
			} else {
				w.rt[v] = r + w.cfg.Gamma*(acc/float64(n))/w.z(nd.s)
			}
		}
	}
}

func (w *work) z(s *topics.Sample) float64 {
	switch w.cfg.Z {
	case ZRemainingTurns:
		return float64(s.MaxTurns - s.Turn + 1)
	case ZOnePlusGamma:
		return 1 + w.cfg.Gamma
	}
	return 1
}

// advantages fills adv for the alive members of group gi from r~. It
// reports true when the group has no alive member.
func (w *work) advantages(gi int32) (empty bool) {
	t := w.t
	w.xs, w.in, w.out = w.xs[:0], w.in[:0], w.out[:0]
	for _, v := range w.sorted[gi] {
		if !w.alive[v] {
			continue
		}
		s := t.nodes[v].s
		w.xs = append(w.xs, w.rt[v])
		w.in = append(w.in, counts(s))
	}
	if len(w.xs) == 0 {
		return true
	}
	w.out = Normalise(w.cfg, w.xs, w.in, w.out)
	i := 0
	for _, v := range w.sorted[gi] {
		if !w.alive[v] {
			continue
		}
		if t.nodes[v].s.Route == topics.RouteMasked {
			w.adv[v] = 0
		} else {
			w.adv[v] = w.out[i]
		}
		i++
	}
	return false
}

// Normalise computes the advantages of one pool of values (a group's
// members, or a tree's chains under grpo-mt) into out (reused, returned).
// in[i] says whether xs[i] counts in the pool's statistics; only counting
// values set the mean and std. A pool without counting values gets zeros;
// counting values that all agree get exactly zero.
//
// A value outside the statistics (e.g. a degenerate response excluded by
// the group_stats setting) gets a finite advantage of the right sign that
// is never larger in magnitude than a counting member could reach: in std
// mode its z-score clipped to ±√(n−1) (population std; (n−1)/√n with the
// unbiased std) for n counting values; in no_std and leave_one_out mode
// its difference from the counting values' mean.
func Normalise(cfg topics.CreditConfig, xs []float64, in []bool, out []float64) []float64 {
	out = slices.Grow(out[:0], len(xs))[:len(xs)]
	var n int
	var sum float64
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, x := range xs {
		if in[i] {
			n++
			sum += x
			lo, hi = min(lo, x), max(hi, x)
		}
	}
	if n == 0 {
		clear(out)
		return out
	}
	mean := sum / float64(n)
	var std, bound float64
	if cfg.Advantage == AdvantageStd {
		var ss float64
		for i, x := range xs {
			if in[i] {
				d := x - mean
				ss += d * d
			}
		}
		fn := float64(n)
		if cfg.UnbiasedStd {
			if n > 1 {
				std = math.Sqrt(ss / (fn - 1))
			}
			bound = (fn - 1) / math.Sqrt(fn)
		} else {
			std = math.Sqrt(ss / fn)
			bound = math.Sqrt(fn - 1)
		}
	}
	same := lo == hi
	for i, x := range xs {
		var a float64
		switch {
		case same && in[i]:
			a = 0 // exactly zero: no learning signal, whatever the rounding
		case cfg.Advantage == AdvantageStd:
			a = (x - mean) / (std + cfg.Epsilon)
			if !in[i] {
				a = max(-bound, min(bound, a))
			}
		case cfg.Advantage == AdvantageNoStd:
			a = x - mean
		default: // leave-one-out
			switch {
			case !in[i]:
				a = x - mean
			case n == 1:
				a = 0
			default:
				a = x - (sum-x)/float64(n-1)
			}
		}
		out[i] = a
	}
	return out
}

func (w *work) emptyGroup(gi int32) bool {
	for _, v := range w.sorted[gi] {
		if w.alive[v] {
			return false
		}
	}
	return true
}

// chains credits the tree as the multi-turn GRPO baseline (grpo-mt): every
// chain from a root-group member (or from the top of a group whose parent
// never arrived) down to a leaf is one trajectory rewarded by its leaf's
// reward. Masked nodes are on no chain (as in propagation, a node whose
// children are all masked is a leaf) and get r~ = r and advantage 0.
// Chains are normalised among the tree's chains with Normalise (a chain
// counts in the statistics when its leaf does); every node gets the mean
// advantage, and as r~ the mean reward, of the chains through it.
func (w *work) chains() {
	t := w.t
	n := len(t.nodes)
	cnt := make([]int, n)
	sumAdv := make([]float64, n)
	sumR := make([]float64, n)
	leaves := w.stack[:0]
	// Leaves, children before parents; sorted order keeps sums deterministic.
	for o := len(w.order) - 1; o >= 0; o-- {
		for _, v := range w.sorted[w.order[o]] {
			if !w.alive[v] || !propagates(t.nodes[v].s) {
				continue
			}
			if c := t.nodes[v].child; c >= 0 {
				leaf := true
				for _, u := range w.sorted[c] {
					if w.alive[u] && propagates(t.nodes[u].s) {
						leaf = false
						break
					}
				}
				if !leaf {
					continue
				}
			}
			leaves = append(leaves, v)
		}
	}
	w.stack = leaves
	w.xs, w.in = w.xs[:0], w.in[:0]
	for _, v := range leaves {
		w.xs = append(w.xs, t.nodes[v].s.Reward)
		w.in = append(w.in, counts(t.nodes[v].s))
	}
	w.out = Normalise(w.cfg, w.xs, w.in, w.out)
	for i, v := range leaves {
		cnt[v], sumAdv[v], sumR[v] = 1, w.out[i], w.xs[i]
	}
	for o := len(w.order) - 1; o >= 0; o-- {
		for _, v := range w.sorted[w.order[o]] {
			if !w.alive[v] {
				continue
			}
			s := t.nodes[v].s
			if !propagates(s) || cnt[v] == 0 {
				w.rt[v], w.adv[v] = s.Reward, 0
				continue
			}
			w.rt[v] = sumR[v] / float64(cnt[v])
			w.adv[v] = sumAdv[v] / float64(cnt[v])
			if p := t.nodes[v].s; p.ParentID != "" {
				if r, ok := t.ids[p.ParentID]; ok && r.node >= 0 && w.alive[r.node] {
					cnt[r.node] += cnt[v]
					sumAdv[r.node] += sumAdv[v]
					sumR[r.node] += sumR[v]
				}
			}
		}
	}
}

func (w *work) zeroSignal(gi int32) bool {
	for _, v := range w.sorted[gi] {
		if w.alive[v] && w.adv[v] != 0 {
			return false
		}
	}
	return true
}
