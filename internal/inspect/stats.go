package inspect

import (
	"math"
	"sort"
)

// Run aggregates the trees of one run (the <run> of tree ids
// <run>/<task>/<k>; "" when tree ids do not say).
type Run struct {
	ID           string `json:"id"`
	Trees        int    `json:"trees"`
	Solved       int    `json:"solved"`
	Incomplete   int    `json:"incomplete"`
	Nodes        int    `json:"nodes"`
	PrunedNodes  int    `json:"pruned_nodes"`
	Placeholders int    `json:"placeholders"`
	// Edges are the histogram bin edges shared by every turn and both
	// rewards: [lo, hi] split evenly, lo = min(0, values), hi = max(1,
	// values); bin i is [Edges[i], Edges[i+1]), the last one closed.
	Edges []float64    `json:"edges"`
	Turns []*TurnStats `json:"turns"`
}

// TurnStats are one turn of a run.
type TurnStats struct {
	Turn     int `json:"turn"`
	Nodes    int `json:"nodes"`
	Passed   int `json:"passed"`
	Masked   int `json:"masked"`
	LastStep int `json:"last_step_penalty"`
	// Failed counts trained responses that did not pass; Lifted those whose
	// credited reward exceeds their reward (credit flowed back to them);
	// LiftedBySuccess those of Lifted with a surviving descendant that
	// passed.
	Failed          int     `json:"failed"`
	Lifted          int     `json:"lifted"`
	LiftedBySuccess int     `json:"lifted_by_success"`
	MeanReward      float64 `json:"mean_reward"`
	MeanCredited    float64 `json:"mean_credited"`
	MeanAdvantage   float64 `json:"mean_advantage"`
	Reward          []int   `json:"reward_hist"`
	Credited        []int   `json:"credited_hist"`
}

// Edges splits [lo, hi] into bins equal bins.
func Edges(lo, hi float64, bins int) []float64 {
	if bins < 1 {
		bins = 1
	}
	if !(hi > lo) {
		hi = lo + 1
	}
	e := make([]float64, bins+1)
	for i := range e {
		e[i] = lo + (hi-lo)*float64(i)/float64(bins)
	}
	e[bins] = hi
	return e
}

// Bin returns the bin of x under edges (bin i is [edges[i], edges[i+1]),
// the last bin closed), or -1 when x is outside them or not finite.
func Bin(x float64, edges []float64) int {
	n := len(edges) - 1
	if n < 1 || math.IsNaN(x) || x < edges[0] || x > edges[n] {
		return -1
	}
	if x == edges[n] {
		return n - 1
	}
	i := sort.Search(n+1, func(i int) bool { return edges[i] > x }) - 1
	return min(max(i, 0), n-1)
}

// Histogram counts xs per bin of edges; values outside are left out.
func Histogram(xs []float64, edges []float64) []int {
	h := make([]int, max(len(edges)-1, 0))
	for _, x := range xs {
		if b := Bin(x, edges); b >= 0 {
			h[b]++
		}
	}
	return h
}

func runStats(trees []*Tree, bins int) []*Run {
	if bins <= 0 {
		bins = 10
	}
	byID := map[string]*Run{}
	var runs []*Run
	type vals struct{ reward, credited []float64 }
	per := map[*Run]map[int]*vals{}
	for _, t := range trees {
		r := byID[t.Run]
		if r == nil {
			r = &Run{ID: t.Run}
			byID[t.Run] = r
			runs = append(runs, r)
			per[r] = map[int]*vals{}
		}
		r.Trees++
		if t.Solved {
			r.Solved++
		}
		if t.Incomplete {
			r.Incomplete++
		}
		r.PrunedNodes += t.PrunedNodes
		r.Placeholders += len(t.Placeholders)
		for _, n := range t.Nodes {
			if n.Ghost {
				continue
			}
			r.Nodes++
			ts := turnOf(r, n.Turn)
			v := per[r][n.Turn]
			if v == nil {
				v = &vals{}
				per[r][n.Turn] = v
			}
			ts.Nodes++
			switch n.Route {
			case "masked":
				ts.Masked++
			case "last_step_penalty":
				ts.LastStep++
			}
			if passed(n) {
				ts.Passed++
			}
			if n.Failed {
				ts.Failed++
				if n.Lifted {
					ts.Lifted++
					if n.SolvedBelow {
						ts.LiftedBySuccess++
					}
				}
			}
			ts.MeanReward += n.Reward
			ts.MeanCredited += n.Credited
			ts.MeanAdvantage += n.Advantage
			v.reward = append(v.reward, n.Reward)
			v.credited = append(v.credited, n.Credited)
		}
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].ID < runs[j].ID })
	for _, r := range runs {
		lo, hi := 0.0, 1.0
		for _, v := range per[r] {
			for _, xs := range [][]float64{v.reward, v.credited} {
				for _, x := range xs {
					if !math.IsNaN(x) && !math.IsInf(x, 0) {
						lo, hi = math.Min(lo, x), math.Max(hi, x)
					}
				}
			}
		}
		r.Edges = Edges(lo, hi, bins)
		sort.Slice(r.Turns, func(i, j int) bool { return r.Turns[i].Turn < r.Turns[j].Turn })
		for _, ts := range r.Turns {
			v := per[r][ts.Turn]
			ts.Reward = Histogram(v.reward, r.Edges)
			ts.Credited = Histogram(v.credited, r.Edges)
			if ts.Nodes > 0 {
				ts.MeanReward /= float64(ts.Nodes)
				ts.MeanCredited /= float64(ts.Nodes)
				ts.MeanAdvantage /= float64(ts.Nodes)
			}
		}
	}
	return runs
}

func turnOf(r *Run, turn int) *TurnStats {
	for _, ts := range r.Turns {
		if ts.Turn == turn {
			return ts
		}
	}
	ts := &TurnStats{Turn: turn}
	r.Turns = append(r.Turns, ts)
	return ts
}
