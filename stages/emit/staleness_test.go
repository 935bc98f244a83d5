package emit

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/pipeline/pipelinetest"
	"github.com/murphy-rl/murphy/topics"
)

// treeAt is a credited tree whose rows are at the given policy versions.
func treeAt(id string, versions ...int64) sourcedTree {
	t := &topics.CreditedTree{TreeID: id}
	for _, v := range versions {
		t.Samples = append(t.Samples, topics.CreditedSample{})
		t.Samples[len(t.Samples)-1].PolicyVersion = v
	}
	return sourcedTree{Tree: t}
}

func TestRowStaleness(t *testing.T) {
	cases := []struct {
		name        string
		trees       []sourcedTree
		newest      int64
		want        []int64
		top         int64
		unversioned int
	}{
		{name: "against the newest published", trees: []sourcedTree{treeAt("a", 5, 4), treeAt("b", 2)}, newest: 6,
			want: []int64{1, 2, 4}, top: 6},
		{name: "a row newer than the topic says raises the newest", trees: []sourcedTree{treeAt("a", 3, 7)}, newest: 5,
			want: []int64{4, 0}, top: 7},
		{name: "version 0 is the initial policy once a version is known", trees: []sourcedTree{treeAt("a", 0, 2)}, newest: 0,
			want: []int64{2, 0}, top: 2},
		{name: "no version known: unversioned", trees: []sourcedTree{treeAt("a", 0, 0), treeAt("b", 0)}, newest: 0,
			top: 0, unversioned: 3},
		{name: "no rows", trees: []sourcedTree{treeAt("a")}, newest: 3, top: 3},
	}
	for _, c := range cases {
		var got []int64
		top, unv := rowStaleness(c.trees, c.newest, func(v int64) { got = append(got, v) })
		if top != c.top || unv != c.unversioned || len(got) != len(c.want) {
			t.Errorf("%s: staleness %v newest %d unversioned %d, want %v %d %d", c.name, got, top, unv, c.want, c.top, c.unversioned)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%s: staleness %v, want %v", c.name, got, c.want)
				break
			}
		}
	}
}

func TestNewestVersionOnlyGrows(t *testing.T) {
	var n newestVersion
	for _, v := range []int64{3, 1, 5, 4} {
		n.raise(v)
	}
	if n.get() != 5 {
		t.Fatalf("newest %d, want 5", n.get())
	}
}

// TestStalenessMetrics: every row the stage writes is in the staleness
// histogram against the newest version followed (or counted unversioned
// while none is known), once, when its batch is written.
func TestStalenessMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	cfg := DefaultConfig()
	cfg.Topic, cfg.Dir, cfg.Formats, cfg.MaxRows = false, t.TempDir(), []string{FormatIPC}, 3
	s, err := NewStage(cfg, nil, topics.Catalog{Prefix: "t.", Partitions: 1}, pipeline.KafkaConfig{}, reg)
	if err != nil {
		t.Fatal(err)
	}
	proc := assign(t, s, 0, -1)
	off := int64(0)
	write := func(versions ...int64) {
		t.Helper()
		tree := treeAt("t"+string(rune('a'+off)), versions...).Tree
		tree.SchemaVersion, tree.Config = topics.SchemaVersion, testCreditConfig()
		for i := range tree.Samples {
			sm := &tree.Samples[i]
			sm.SchemaVersion, sm.TreeID, sm.TaskID = topics.SchemaVersion, tree.TreeID, "task"
			sm.GroupID = topics.RootID(tree.TreeID)
			sm.NodeID = topics.NodeID(tree.TreeID, sm.GroupID, i)
			sm.Route = topics.RouteTrain
		}
		if err := proc.Process(t.Context(), record(t, "t.credited", 0, off, tree)); err != nil {
			t.Fatal(err)
		}
		off++
	}
	write(0, 0, 0) // a full batch, no version known
	s.ObserveVersion(&topics.PolicyVersion{Version: 4, Model: "m-v4"})
	s.ObserveVersion(&topics.PolicyVersion{Version: 2, Model: "m-v2"}) // older: the newest stays 4
	write(4, 3)
	write(1) // the batch closes: 3 rows at staleness 0, 1, 3
	if err := proc.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if s.NewestVersion() != 4 {
		t.Errorf("newest version %d, want 4", s.NewestVersion())
	}
	want := `
# HELP murphy_emit_row_staleness_versions Staleness of the rows written, in policy versions: the newest version known (policy-versions topic, or a row's) minus the row's policy_version.
# TYPE murphy_emit_row_staleness_versions histogram
murphy_emit_row_staleness_versions_bucket{stage="emit",le="0"} 1
murphy_emit_row_staleness_versions_bucket{stage="emit",le="1"} 2
murphy_emit_row_staleness_versions_bucket{stage="emit",le="2"} 2
murphy_emit_row_staleness_versions_bucket{stage="emit",le="3"} 3
murphy_emit_row_staleness_versions_bucket{stage="emit",le="4"} 3
murphy_emit_row_staleness_versions_bucket{stage="emit",le="6"} 3
murphy_emit_row_staleness_versions_bucket{stage="emit",le="8"} 3
murphy_emit_row_staleness_versions_bucket{stage="emit",le="16"} 3
murphy_emit_row_staleness_versions_bucket{stage="emit",le="32"} 3
murphy_emit_row_staleness_versions_bucket{stage="emit",le="+Inf"} 3
murphy_emit_row_staleness_versions_sum{stage="emit"} 4
murphy_emit_row_staleness_versions_count{stage="emit"} 3
# HELP murphy_emit_rows_unversioned_total Rows written while no policy version is known (every row at policy_version 0): not in the staleness histogram.
# TYPE murphy_emit_rows_unversioned_total counter
murphy_emit_rows_unversioned_total{stage="emit"} 3
`
	if got := pipelinetest.MetricsText(t, reg, "murphy_emit_row_staleness_versions", "murphy_emit_rows_unversioned_total"); got != strings.TrimLeft(want, "\n") {
		t.Errorf("metrics:\n%s\nwant:\n%s", got, want)
	}
	if got := counter(s.metrics.rows); got != 6 {
		t.Errorf("rows %v, want 6", got)
	}
}
