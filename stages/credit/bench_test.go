package credit

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/topics"
)

// benchTrees are G=8 trees over 3 turns: full (every node below the last
// turn expanded: 8+64+512 nodes) and typical (about half expanded).
func benchTrees(full bool) ([][]*topics.Sample, int) {
	rng := rand.New(rand.NewPCG(42, 43))
	sp := genSpec{maxTurns: 3, minG: 8, maxG: 8, expand: 0.5, masked: 0.02, allExpand: full}
	var trees [][]*topics.Sample
	nodes := 0
	for i := range 64 {
		s := genTree(rng, fmt.Sprintf("bench/%d", i), sp)
		rng.Shuffle(len(s), func(a, b int) { s[a], s[b] = s[b], s[a] })
		trees = append(trees, s)
		nodes += len(s)
	}
	return trees, nodes
}

// copyBaseline is the least any credit step must do per node: one pass
// that copies every sample into its credited form.
func copyBaseline(trees [][]*topics.Sample) int {
	n := 0
	for _, tr := range trees {
		out := make([]topics.CreditedSample, 0, len(tr))
		for _, s := range tr {
			out = append(out, topics.CreditedSample{Sample: *s, CreditedReward: s.Reward})
		}
		n += len(out)
	}
	return n
}

func runCore(b *testing.B, trees [][]*topics.Sample, cfg topics.CreditConfig) int {
	n := 0
	for _, samples := range trees {
		t := NewTree(samples[0].TreeID)
		for _, s := range samples {
			if _, err := t.Add(s); err != nil {
				b.Fatal(err)
			}
		}
		if !t.Complete() {
			b.Fatal("incomplete")
		}
		ct, _ := Credit(t, cfg)
		n += len(ct.Samples)
	}
	return n
}

// BenchmarkCore measures assemble + prune + propagate + advantages in
// nodes per second on one core, and the ratio of its cost per node to the
// copy baseline measured in the same run.
func BenchmarkCore(b *testing.B) {
	configs := []struct {
		name string
		cfg  topics.CreditConfig
	}{
		{"mars", cfgWith(nil)},
		{"mers-remaining", cfgWith(func(c *Config) { c.Strategy = StrategyMERS; c.Z = ZRemainingTurns; c.Gamma = 0.9 })},
		{"mars-intrap4-interp16", cfgWith(func(c *Config) { c.IntrapK = 4; c.InterpM = 16 })},
	}
	for _, full := range []bool{true, false} {
		trees, nodes := benchTrees(full)
		shape := "typical"
		if full {
			shape = "full"
		}
		baseNsPerNode := measure(func() { copyBaseline(trees) }) / float64(nodes)
		for _, c := range configs {
			b.Run(shape+"/"+c.name, func(b *testing.B) {
				b.ReportAllocs()
				cpu0 := cpuTime()
				for b.Loop() {
					runCore(b, trees, c.cfg)
				}
				cpu := (cpuTime() - cpu0).Seconds()
				sec := b.Elapsed().Seconds()
				total := float64(b.N) * float64(nodes)
				b.ReportMetric(total/sec, "nodes/s")
				// CPU time of the process: with -cpu 1 this is the cost on one
				// core even when the machine is shared.
				b.ReportMetric(total/cpu, "nodes/cpu_s")
				b.ReportMetric(cpu*1e9/total/baseNsPerNode, "x_copy_baseline")
				b.ReportMetric(float64(nodes)/float64(len(trees)), "nodes/tree")
			})
		}
	}
}

// measure returns the CPU ns per call of f, run for at least 300ms of CPU.
func measure(f func()) float64 {
	f()
	n := 0
	start := cpuTime()
	for cpuTime()-start < 300*time.Millisecond {
		f()
		n++
	}
	return float64((cpuTime() - start).Nanoseconds()) / float64(n)
}

// cpuTime is the user+system CPU time of the process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
