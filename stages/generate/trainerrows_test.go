package generate

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/murphy-rl/murphy/pipeline/pipelinetest"
	"github.com/murphy-rl/murphy/stages/generate/policy"
	"github.com/murphy-rl/murphy/topics"
)

func TestTrainedStalenessSumsRanks(t *testing.T) {
	h, ok := trainedStaleness([]*topics.TrainerProgress{
		{Rank: 0, RowsTrainedStaleness: map[string]int64{"0": 5, "1": 3, "40": 1}},
		{Rank: 1, RowsTrainedStaleness: map[string]int64{"1": 2, "5": 4, "-1": 9, "x": 9, "2": -3}}, // invalid left out
		{Rank: 2}, // reports no staleness
	})
	if !ok || h.count != 15 || h.sum != 0*5+1*5+40+5*4 {
		t.Fatalf("count %d sum %v ok %v, want 15, 65, true", h.count, h.sum, ok)
	}
	want := map[float64]uint64{0: 5, 1: 10, 2: 10, 3: 10, 4: 10, 6: 14, 8: 14, 16: 14, 32: 14}
	if len(h.buckets) != len(want) {
		t.Fatalf("buckets %v, want %v", h.buckets, want)
	}
	for b, n := range want {
		if h.buckets[b] != n {
			t.Errorf("bucket le=%v: %d rows, want %d", b, h.buckets[b], n)
		}
	}
	if _, ok := trainedStaleness([]*topics.TrainerProgress{{Rank: 0}}); ok {
		t.Error("no rank reports staleness: want no histogram")
	}
	if h, ok := trainedStaleness([]*topics.TrainerProgress{{RowsTrainedStaleness: map[string]int64{}}}); !ok || h.count != 0 {
		t.Errorf("empty counts: %+v %v, want an empty histogram", h, ok)
	}
	got := rowsDropped([]*topics.TrainerProgress{
		{RowsDropped: map[string]int64{"stale": 4, "duplicate_batch": 1}}, {RowsDropped: map[string]int64{"stale": 2, "x": -1}}})
	if len(got) != 2 || got["stale"] != 6 || got["duplicate_batch"] != 1 {
		t.Errorf("rows dropped %v", got)
	}
}

// TestTrainerRowsMetrics: generate exports each trainer's staleness
// histogram of trained rows and its dropped rows from the newest progress
// of its ranks, summed; a newer record replaces a rank's; a trainer whose
// progress is older than progress_ttl is not exported.
func TestTrainerRowsMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	cfg := DefaultConfig()
	cfg.InstanceID = "test"
	cfg.Staleness.Enabled = true
	cfg.Staleness.ProgressTTL = time.Minute
	s, err := NewStageWithPolicy(cfg, simulated(t), memTasks(), testCatalog(), reg)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 1, 18, 0, 0, 0, time.UTC)
	s.now = func() time.Time { return now }
	names := []string{"murphy_trainer_row_staleness_versions", "murphy_trainer_rows_dropped_total"}
	if got := pipelinetest.MetricsText(t, reg, names...); got != "" {
		t.Fatalf("before any progress:\n%s", got)
	}
	s.ObserveProgress(&topics.TrainerProgress{TrainerID: "a", Rank: 0, UpdatedAt: now.Add(-time.Second),
		RowsTrainedStaleness: map[string]int64{"0": 1}, RowsDropped: map[string]int64{"stale": 1}})
	s.ObserveProgress(&topics.TrainerProgress{TrainerID: "a", Rank: 0, UpdatedAt: now, // replaces the one above
		RowsTrainedStaleness: map[string]int64{"0": 6, "1": 3}, RowsDropped: map[string]int64{"stale": 4, "duplicate_batch": 2}})
	s.ObserveProgress(&topics.TrainerProgress{TrainerID: "a", Rank: 1, UpdatedAt: now.Add(-2 * time.Minute), // stale rank, still counted
		RowsTrainedStaleness: map[string]int64{"3": 1}, RowsDropped: map[string]int64{"stale": 1}})
	s.ObserveProgress(&topics.TrainerProgress{TrainerID: "b", MaxStaleness: intp(2), TreesPerVersion: 4, UpdatedAt: now,
		RowsDropped: map[string]int64{"stale": 0}}) // reports no staleness: no histogram
	s.ObserveProgress(&topics.TrainerProgress{TrainerID: "gone", UpdatedAt: now.Add(-time.Hour),
		RowsTrainedStaleness: map[string]int64{"0": 100}})
	want := `# HELP murphy_trainer_row_staleness_versions Staleness of the rows a trainer trained, in policy versions (its version minus the row's when its reader yielded it), from its progress records.
# TYPE murphy_trainer_row_staleness_versions histogram
murphy_trainer_row_staleness_versions_bucket{stage="generate",trainer="a",le="0"} 6
murphy_trainer_row_staleness_versions_bucket{stage="generate",trainer="a",le="1"} 9
murphy_trainer_row_staleness_versions_bucket{stage="generate",trainer="a",le="2"} 9
murphy_trainer_row_staleness_versions_bucket{stage="generate",trainer="a",le="3"} 10
murphy_trainer_row_staleness_versions_bucket{stage="generate",trainer="a",le="4"} 10
murphy_trainer_row_staleness_versions_bucket{stage="generate",trainer="a",le="6"} 10
murphy_trainer_row_staleness_versions_bucket{stage="generate",trainer="a",le="8"} 10
murphy_trainer_row_staleness_versions_bucket{stage="generate",trainer="a",le="16"} 10
murphy_trainer_row_staleness_versions_bucket{stage="generate",trainer="a",le="32"} 10
murphy_trainer_row_staleness_versions_bucket{stage="generate",trainer="a",le="+Inf"} 10
murphy_trainer_row_staleness_versions_sum{stage="generate",trainer="a"} 6
murphy_trainer_row_staleness_versions_count{stage="generate",trainer="a"} 10
# HELP murphy_trainer_rows_dropped_total Rows a trainer's reader dropped, by reason (stale, duplicate_batch), from its progress records.
# TYPE murphy_trainer_rows_dropped_total counter
murphy_trainer_rows_dropped_total{reason="duplicate_batch",stage="generate",trainer="a"} 2
murphy_trainer_rows_dropped_total{reason="stale",stage="generate",trainer="a"} 5
murphy_trainer_rows_dropped_total{reason="stale",stage="generate",trainer="b"} 0
`
	if got := pipelinetest.MetricsText(t, reg, names...); got != want {
		t.Errorf("metrics:\n%s\nwant:\n%s", got, want)
	}
	// Once every rank of a trainer is older than the TTL it goes.
	now = now.Add(2 * time.Minute)
	if got := pipelinetest.MetricsText(t, reg, names...); got != "" {
		t.Errorf("after the TTL:\n%s", got)
	}
}

// TestTrainerRowsWithoutStaleness: without staleness.enabled generate
// reads no progress and exports no trainer series.
func TestTrainerRowsWithoutStaleness(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	s, err := NewStageWithPolicy(DefaultConfig(), simulated(t), memTasks(), testCatalog(), reg)
	if err != nil {
		t.Fatal(err)
	}
	s.ObserveProgress(&topics.TrainerProgress{TrainerID: "a", UpdatedAt: time.Now(), RowsTrainedStaleness: map[string]int64{"0": 1}})
	if got := pipelinetest.MetricsText(t, reg, "murphy_trainer_row_staleness_versions", "murphy_trainer_rows_dropped_total"); got != "" {
		t.Errorf("metrics:\n%s", got)
	}
}

func simulated(t *testing.T) policy.Policy {
	t.Helper()
	p, err := policy.NewSimulated(policy.DefaultSimulatedConfig())
	if err != nil {
		t.Fatal(err)
	}
	return p
}
