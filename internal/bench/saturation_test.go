package bench

import (
	"context"
	"os"
	"testing"
	"time"
)

// TestSaturationTiny runs the saturation measurement on two small servers
// and two trees per task: every tree must come through the pool, both
// servers must have served, and the ratio must be a number.
func TestSaturationTiny(t *testing.T) {
	b := testBroker(t)
	ts := builtinTasks(t)
	sc := DefaultSaturationConfig()
	sc.MaxSeqs, sc.TreesPerTask, sc.Baseline = 8, 2, 500*time.Millisecond
	res, err := Saturation(context.Background(), b, tiny(), sc, ts, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + res.String())
	if res.Pipeline.Trees != 2*len(ts) || res.Pipeline.Samples < 4*len(ts) {
		t.Fatalf("trees %d (want %d), samples %d", res.Pipeline.Trees, 2*len(ts), res.Pipeline.Samples)
	}
	for i, s := range res.Servers {
		if s.Direct <= 0 || s.Pipeline == 0 || s.Limit < 1 {
			t.Errorf("server %d: %+v", i, s)
		}
	}
	if res.Ratio() <= 0 {
		t.Fatalf("ratio %v", res.Ratio())
	}
}
