package execute

import (
	"context"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/topics"
)

func TestCalibrationLimit(t *testing.T) {
	c := Calibration{Runs: 1, Factor: 10, Floor: 500 * time.Millisecond}
	if got := c.Limit(3 * time.Millisecond); got != 500*time.Millisecond {
		t.Errorf("floor: %v", got)
	}
	if got := c.Limit(120 * time.Millisecond); got != 1200*time.Millisecond {
		t.Errorf("factor: %v", got)
	}
	if (Calibration{Runs: 0, Factor: 10, Floor: time.Second}).Validate() == nil {
		t.Error("runs 0 accepted")
	}
	task := topics.Task{TimeoutMS: 800, CalibratedTimeoutMS: 300}
	if l := limits(&task); l.CPU != 300*time.Millisecond || l.Wall != 1600*time.Millisecond {
		t.Errorf("calibrated limits %+v", l)
	}
	task.CalibratedTimeoutMS = 5000 // an explicit limit caps a calibrated one
	if l := limits(&task); l.CPU != 800*time.Millisecond {
		t.Errorf("capped limits %+v", l)
	}
}

// TestHumanEvalCalibrated calibrates HumanEval's tasks from their canonical
// solutions: every reference then passes under its own limit, and a
// looping candidate is stopped at that limit, not after the fixed 10 s.
func TestHumanEvalCalibrated(t *testing.T) {
	ts := humanEval(t)
	pool := testPool(t, 0)
	ev := &Evaluator{Runner: pool}
	ctx := context.Background()
	rep, err := ev.Calibrate(ctx, ts, DefaultCalibration(), pool.Size())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Calibrated != len(ts) {
		t.Fatalf("%s: %v", rep, rep.Skipped)
	}
	longest := 0
	for i := range ts {
		longest = max(longest, ts[i].CalibratedTimeoutMS)
		o, err := ev.Evaluate(ctx, &ts[i], ts[i].Reference)
		if err != nil || o.Status != topics.StatusPassed {
			t.Fatalf("%s under %d ms: %v %s\n%s", ts[i].TaskID, ts[i].CalibratedTimeoutMS, err, o.Status, o.Feedback)
		}
	}
	t.Logf("%s, longest limit %d ms", rep, longest)
	task := ts[0]
	start := time.Now()
	o, err := ev.Evaluate(ctx, &task, task.Prompt+"    while True:\n        pass\n")
	if err != nil || o.Status != topics.StatusTimeout {
		t.Fatalf("loop: %v %s", err, o.Status)
	}
	if el, lim := time.Since(start), time.Duration(task.CalibratedTimeoutMS)*time.Millisecond; el > lim+time.Second {
		t.Errorf("a loop under a %v limit held the sandbox for %v", lim, el)
	}
}
