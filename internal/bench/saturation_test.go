package bench

import (
	"context"
	"os"
	"testing"
	"time"
)

// TestSaturationTiny runs the saturation measurement on two small servers
// and two trees per task: the direct sweep finds a peak, every tree comes
// through the pool with affinity and without, both servers served and saw
// prefix lookups, and the ratio is a number.
func TestSaturationTiny(t *testing.T) {
	b := testBroker(t)
	ts := builtinTasks(t)
	sc := DefaultSaturationConfig()
	sc.Engine.KVTokens, sc.TreesPerTask, sc.Level, sc.Tokens = 3000, 2, 200*time.Millisecond, 16
	res, err := Saturation(context.Background(), b, tiny(), sc, ts, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + res.String())
	if res.Pipeline.Trees != 2*len(ts) || res.Pipeline.Samples < 4*len(ts) {
		t.Fatalf("trees %d (want %d), samples %d", res.Pipeline.Trees, 2*len(ts), res.Pipeline.Samples)
	}
	for i, s := range res.Servers {
		if s.Peak <= 0 || s.Pipeline == 0 || s.Limit < 1 || s.Lookups == 0 {
			t.Errorf("server %d: %+v", i, s)
		}
	}
	if res.NoAffinity.Trees != res.Pipeline.Trees {
		t.Errorf("without affinity: %d trees, with: %d", res.NoAffinity.Trees, res.Pipeline.Trees)
	}
	if res.Ratio() <= 0 {
		t.Fatalf("ratio %v", res.Ratio())
	}
}
