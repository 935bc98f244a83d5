package stages

import (
	"strings"
	"testing"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/stages/credit"
	"github.com/murphy-rl/murphy/stages/emit"
	"github.com/murphy-rl/murphy/stages/govern"
	"github.com/murphy-rl/murphy/tasks"
	"github.com/murphy-rl/murphy/topics"
)

func wiring(t *testing.T, lookups *int) Wiring {
	t.Helper()
	kc := pipeline.DefaultKafkaConfig()
	cat := topics.DefaultCatalog()
	rt, err := pipeline.NewRuntime(pipeline.RuntimeConfig{Kafka: kc, Catalog: cat, Name: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return Wiring{Runtime: rt, Kafka: kc, Catalog: cat,
		Lookup: func() tasks.Lookup {
			*lookups++
			return tasks.NewMemory(nil)
		},
		Govern: govern.DefaultConfig(), Credit: credit.DefaultConfig(), Emit: emit.DefaultConfig()}
}

// Only stages that look tasks up ask for the lookup, and an unknown stage
// is an error that lists the stages.
func TestAddWiresTheNamedStages(t *testing.T) {
	var lookups int
	release, err := Add(t.Context(), wiring(t, &lookups), []string{"emit", "credit", "govern"})
	if err != nil {
		t.Fatal(err)
	}
	release()
	if lookups != 1 {
		t.Fatalf("lookup asked %d times, want once (govern)", lookups)
	}
	release, err = Add(t.Context(), wiring(t, &lookups), []string{"credit", "judge"})
	release()
	if err == nil || !strings.Contains(err.Error(), `unknown stage "judge"`) || !strings.Contains(err.Error(), strings.Join(Names, ", ")) {
		t.Fatalf("unknown stage: %v", err)
	}
	if Index("credit") != 3 || Index("judge") != len(Names) {
		t.Fatalf("Index: credit %d, judge %d", Index("credit"), Index("judge"))
	}
}

func TestMemoryLimits(t *testing.T) {
	cat := topics.Catalog{Prefix: "t.", Partitions: 8}
	const maxBytes = 8 << 20
	for _, tc := range []struct {
		names  []string
		budget int
		limit  int
	}{
		{[]string{"generate"}, 128, 80},
		{[]string{"credit"}, 256, 160},
		// 64 + 16 x 8 MiB x 8 partitions.
		{[]string{"emit"}, 1088, 680},
		{Names, 3*128 + 256 + 1088, (3*128 + 256 + 1088) * 5 / 8},
	} {
		budget := 0
		for _, n := range tc.names {
			budget += MemoryBudgetMB(n, cat, maxBytes)
		}
		if budget != tc.budget {
			t.Errorf("%v: budget %d MiB, want %d", tc.names, budget, tc.budget)
		}
		if got := MemoryLimitMB(tc.names, cat, maxBytes); got != tc.limit {
			t.Errorf("%v: limit %d MiB, want %d", tc.names, got, tc.limit)
		}
	}
}
