package emit

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/murphy-rl/murphy/topics"
)

// genTrees makes n credited trees with varied shapes: empty and long token
// lists, missing logprobs, masked members, several failure causes, zero and
// set timestamps, unicode text. Deterministic for a seed.
func genTrees(seed uint64, n int, cfg topics.CreditConfig) []topics.CreditedTree {
	rng := rand.New(rand.NewPCG(seed, 7))
	causes := []string{"", "wrong_answer", "infra.sandbox", "degenerate.truncated", "compile_error", "cause.new-in-this-test"}
	statuses := []string{topics.StatusPassed, topics.StatusWrongAnswer, topics.StatusSandboxError, topics.StatusRuntimeError}
	finishes := []string{"stop", "length"}
	routes := []string{topics.RouteTrain, topics.RouteMasked, topics.RouteLastStepPenalty}
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	out := make([]topics.CreditedTree, n)
	for i := range out {
		treeID := fmt.Sprintf("run-%d/task-%d/%d", seed, i%17, i)
		t := topics.CreditedTree{
			SchemaVersion: topics.SchemaVersion, TreeID: treeID, TaskID: fmt.Sprintf("task-%d", i%17),
			Incomplete: rng.IntN(9) == 0, Config: cfg, PrunedNodes: rng.IntN(3),
			CreditedAt: base.Add(time.Duration(i) * time.Second).Add(time.Duration(rng.IntN(1e6)) * time.Microsecond),
		}
		ns := rng.IntN(6) // 0 = a tree whose samples were all pruned
		root := topics.RootID(treeID)
		for j := 0; j < ns; j++ {
			resp := rng.IntN(40)
			if rng.IntN(10) == 0 {
				resp = 0
			}
			s := topics.CreditedSample{}
			s.SchemaVersion = topics.SchemaVersion
			s.TreeID, s.TaskID = treeID, t.TaskID
			s.GroupID = root
			s.NodeID = topics.NodeID(treeID, root, j)
			if j >= 3 {
				s.ParentID = topics.NodeID(treeID, root, 0)
				s.GroupID = s.ParentID
			}
			s.Turn = 1 + j/3
			s.MaxTurns = 3
			s.GroupSizes = []int{3, 2}
			s.GroupSize = 3
			s.Index = j % 3
			s.ChildrenRequested = rng.IntN(3)
			s.PromptTokenIDs = ints(rng, rng.IntN(30))
			s.ResponseTokenIDs = ints(rng, resp)
			if rng.IntN(4) != 0 {
				s.ResponseLogprobs = floats(rng, resp, -5, 0)
			}
			s.LossWeights = floats(rng, resp, 0, 1)
			if resp > 4 && rng.IntN(2) == 0 {
				s.StepEnds = []int{resp / 2, resp}
				s.StepScores = floats(rng, 2, 0, 1)
			}
			s.PromptText = fmt.Sprintf("def f%d(x):\n    \"\"\"Return x²—ünïcode %d\"\"\"\n", i, j)
			s.ResponseText = fmt.Sprintf("    return x * %d  # ✓\n", rng.IntN(100))
			s.Reward = float64(rng.IntN(5)) / 4
			s.CreditedReward = s.Reward + rng.Float64()/3
			s.Advantage = rng.NormFloat64()
			s.Route = routes[rng.IntN(len(routes))]
			s.FailureCause = causes[rng.IntN(len(causes))]
			s.Status = statuses[rng.IntN(len(statuses))]
			s.FinishReason = finishes[rng.IntN(len(finishes))]
			s.InGroupStats = rng.IntN(5) != 0
			s.TestsTotal = 1 + rng.IntN(10)
			s.TestsPassed = rng.IntN(s.TestsTotal + 1)
			s.Policy = "simulated"
			s.PolicyVersion = int64(rng.IntN(6))
			if rng.IntN(5) != 0 {
				s.GeneratedAt = base.Add(time.Duration(rng.IntN(1e9)) * time.Microsecond)
			}
			s.ExecutedAt = s.GeneratedAt
			if rng.IntN(3) != 0 {
				s.GovernedAt = base.Add(time.Duration(rng.IntN(1e9)) * time.Microsecond)
			}
			t.Samples = append(t.Samples, s)
		}
		out[i] = t
	}
	return out
}

func ints(rng *rand.Rand, n int) []int32 {
	v := make([]int32, n)
	for i := range v {
		v[i] = rng.Int32N(152000)
	}
	return v
}

func floats(rng *rand.Rand, n int, lo, hi float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = lo + (hi-lo)*rng.Float32()
	}
	return v
}

func testCreditConfig() topics.CreditConfig {
	return topics.CreditConfig{Strategy: "mars", Gamma: 0.9, Z: "1", Advantage: "std", Epsilon: 1e-6,
		PruneOrder: []string{"intrap", "interp"}, IntrapK: 4, InterpM: 2}
}
