package credit

import (
	"fmt"
	"math/rand/v2"

	"github.com/murphy-rl/murphy/topics"
)

// nb is a node blueprint for building test trees.
type nb struct {
	r      float64
	masked bool
	out    bool // excluded from group stats (in_group_stats=false)
	deg    bool // degenerate: route last_step_penalty
	kids   []nb
}

// build turns blueprints into samples with ids derived as the pipeline
// derives them. The root group is roots.
func build(treeID string, maxTurns int, roots []nb) []*topics.Sample {
	var out []*topics.Sample
	var walk func(parent string, turn int, group []nb)
	walk = func(parent string, turn int, group []nb) {
		gid := topics.ParentNode(treeID, parent)
		for i, b := range group {
			s := &topics.Sample{}
			s.SchemaVersion = topics.SchemaVersion
			s.TreeID = treeID
			s.TaskID = "task-" + treeID
			s.MaxTurns = maxTurns
			s.GroupSizes = []int{len(group)}
			s.NodeID = topics.NodeID(treeID, gid, i)
			s.ParentID = parent
			s.GroupID = gid
			s.Turn = turn
			s.Index = i
			s.GroupSize = len(group)
			s.ResponseTokenIDs = []int32{1, 2, 3}
			s.LossWeights = []float32{1, 1, 1}
			s.Status = topics.StatusWrongAnswer
			s.Reward = b.r
			s.Route = topics.RouteTrain
			if b.masked {
				s.Route = topics.RouteMasked
				s.Status = topics.StatusSandboxError
			}
			if b.deg {
				s.Route = topics.RouteLastStepPenalty
				s.FailureCause = "degenerate.truncated"
			}
			s.InGroupStats = !b.out
			s.ChildrenRequested = len(b.kids)
			out = append(out, s)
			if len(b.kids) > 0 {
				walk(s.NodeID, turn+1, b.kids)
			}
		}
	}
	walk("", 1, roots)
	return out
}

// genSpec shapes random trees.
type genSpec struct {
	maxTurns  int
	minG      int
	maxG      int
	expand    float64 // probability that a non-masked node below the last turn is expanded
	masked    float64 // probability that a node is masked
	outStats  float64 // probability that a masked node is out of the group stats
	degen     float64 // probability that a node is degenerate (never expanded)
	degenOut  float64 // probability that a degenerate node is out of the group stats
	discrete  bool    // rewards from {0, .25, .5, .75, 1} (ties) instead of uniform
	allExpand bool    // expand every node below the last turn (full trees)
}

func genGroup(rng *rand.Rand, sp genSpec, turn int) []nb {
	g := sp.minG
	if sp.maxG > sp.minG {
		g += rng.IntN(sp.maxG - sp.minG + 1)
	}
	group := make([]nb, g)
	for i := range group {
		b := nb{}
		if sp.discrete {
			b.r = float64(rng.IntN(5)) / 4
		} else {
			b.r = rng.Float64()
		}
		if rng.Float64() < sp.masked {
			b.masked = true
			b.r = 0
			b.out = rng.Float64() < sp.outStats
		} else if rng.Float64() < sp.degen {
			b.deg = true
			b.r = 0
			b.out = rng.Float64() < sp.degenOut
		}
		if !b.masked && !b.deg && turn < sp.maxTurns && (sp.allExpand || rng.Float64() < sp.expand) {
			b.kids = genGroup(rng, sp, turn+1)
		}
		group[i] = b
	}
	return group
}

func genTree(rng *rand.Rand, id string, sp genSpec) []*topics.Sample {
	return build(id, sp.maxTurns, genGroup(rng, sp, 1))
}

func mustTree(samples []*topics.Sample) *Tree {
	t := NewTree(samples[0].TreeID)
	for _, s := range samples {
		if _, err := t.Add(s); err != nil {
			panic(fmt.Sprintf("add: %v", err))
		}
	}
	return t
}

// interleave streams trees' samples the way a live pipeline does: up to
// window trees are in flight at once, each tree's samples in random order.
func interleave(rng *rand.Rand, trees [][]*topics.Sample, window int) []*topics.Sample {
	var out []*topics.Sample
	var active [][]*topics.Sample
	next := 0
	for next < len(trees) || len(active) > 0 {
		for len(active) < window && next < len(trees) {
			tr := append([]*topics.Sample{}, trees[next]...)
			rng.Shuffle(len(tr), func(i, j int) { tr[i], tr[j] = tr[j], tr[i] })
			active = append(active, tr)
			next++
		}
		i := rng.IntN(len(active))
		out = append(out, active[i][0])
		active[i] = active[i][1:]
		if len(active[i]) == 0 {
			active = append(active[:i], active[i+1:]...)
		}
	}
	return out
}
