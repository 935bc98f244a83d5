package stages

import (
	"strings"
	"testing"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/stages/credit"
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
		Configs: DefaultConfigs()}
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
	if err == nil || !strings.Contains(err.Error(), `unknown stage "judge"`) || !strings.Contains(err.Error(), strings.Join(Names(), ", ")) {
		t.Fatalf("unknown stage: %v", err)
	}
	if Index("credit") != 3 || Index("judge") != len(Names()) {
		t.Fatalf("Index: credit %d, judge %d", Index("credit"), Index("judge"))
	}
}

func TestMemoryLimits(t *testing.T) {
	cat := topics.Catalog{Prefix: "t.", Partitions: 8}
	c := DefaultConfigs()
	c.Emit.MaxBytes = 8 << 20
	for _, tc := range []struct {
		names  []string
		budget int
		limit  int
	}{
		{[]string{"generate"}, 128, 80},
		{[]string{"credit"}, 256, 160},
		// 64 + 16 x 8 MiB x 8 partitions.
		{[]string{"emit"}, 1088, 680},
		{Names(), 3*128 + 256 + 1088, (3*128 + 256 + 1088) * 5 / 8},
	} {
		budget := 0
		for _, n := range tc.names {
			budget += MemoryBudgetMB(n, cat, &c)
		}
		if budget != tc.budget {
			t.Errorf("%v: budget %d MiB, want %d", tc.names, budget, tc.budget)
		}
		if got := MemoryLimitMB(tc.names, cat, &c); got != tc.limit {
			t.Errorf("%v: limit %d MiB, want %d", tc.names, got, tc.limit)
		}
	}
}

// The registry is the only list of stages: every stage has a section, a
// constructor, inputs and a main output, and the dataflow is a chain (each
// stage's inputs are produced by stages before it, or submitted).
func TestRegistryDescribesEveryStage(t *testing.T) {
	c := DefaultConfigs()
	produced := map[topics.Name]bool{topics.Prompts: true, topics.BackfillPrompts: true, topics.Tasks: true}
	for i, d := range All() {
		if d.Name == "" || d.Section == nil || d.Build == nil || d.MemoryBudgetMB == nil || len(d.Inputs) == 0 || len(d.Outputs) == 0 {
			t.Fatalf("stage %d: incomplete descriptor %+v", i, d)
		}
		if err := d.Section(&c).Validate(); err != nil {
			t.Errorf("%s: defaults do not validate: %v", d.Name, err)
		}
		if got, err := Get(d.Name); err != nil || got.Name != d.Name || Index(d.Name) != i {
			t.Errorf("%s: Get %v, Index %d", d.Name, err, Index(d.Name))
		}
		for _, in := range d.Inputs {
			if !produced[in] && in != topics.Refinements { // refinements come from govern, later: the loop
				t.Errorf("%s reads %s, which no earlier stage produces", d.Name, in)
			}
		}
		for _, out := range d.Outputs {
			produced[out] = true
		}
	}
	// Descriptors are copies: changing one changes nothing.
	a := All()
	a[0].Inputs[0] = "changed"
	if All()[0].Inputs[0] == "changed" {
		t.Fatal("All returns the registry's own slices")
	}
	// A section is the Configs field the flags and YAML set.
	d, _ := Get("credit")
	d.Section(&c).(*credit.Config).IntrapK = 3
	if c.Credit.IntrapK != 3 {
		t.Fatal("Section does not point into Configs")
	}
}
