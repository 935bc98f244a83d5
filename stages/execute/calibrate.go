package execute

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/murphy-rl/murphy/topics"
)

// Calibration derives each task's time limit from its reference solution,
// EvalPlus-style: the reference's measured CPU time (the largest of Runs
// runs, the whole job) times Factor, at least Floor. A task's explicit
// timeout_ms caps the result. A looping candidate then holds a sandbox for
// a fraction of a second instead of a fixed 10 s.
type Calibration struct {
	Runs   int           `yaml:"runs"`
	Factor float64       `yaml:"factor"`
	Floor  time.Duration `yaml:"floor"`
}

// DefaultCalibration: CPU time varies far less than wall time under load,
// so a factor of 10 over the slowest of 3 runs leaves references a wide
// margin, and the floor covers interpreter start-up noise.
func DefaultCalibration() Calibration {
	return Calibration{Runs: 3, Factor: 10, Floor: 500 * time.Millisecond}
}

// Validate checks the settings.
func (c Calibration) Validate() error {
	if c.Runs < 1 || c.Factor < 1 || c.Floor < time.Millisecond {
		return errors.New("calibration: runs >= 1, factor >= 1 and floor >= 1ms are required")
	}
	return nil
}

// Limit is the calibrated limit for a reference that used cpu, rounded up
// to a tenth of a second so that small differences between measurements
// rarely change it.
func (c Calibration) Limit(cpu time.Duration) time.Duration {
	const grid = 100 * time.Millisecond
	l := max(c.Floor, time.Duration(math.Ceil(float64(cpu)*c.Factor)))
	return (l + grid - 1) / grid * grid
}

// CalibrationReport says what calibration did.
type CalibrationReport struct {
	Calibrated int
	// Skipped lists tasks left at their fixed limit: no reference, or a
	// reference that does not pass (it is reported, not guessed around).
	Skipped []string
}

// Calibrate sets CalibratedTimeoutMS on every task of ts that has a
// reference passing all its tests, running references workers at once.
func (e *Evaluator) Calibrate(ctx context.Context, ts []topics.Task, c Calibration, workers int) (CalibrationReport, error) {
	var rep CalibrationReport
	if err := c.Validate(); err != nil {
		return rep, err
	}
	// Each task's measurement, or why it has none; tasks are written only
	// after every measurement is in.
	cpu := make([]time.Duration, len(ts))
	problem := make([]string, len(ts))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(workers, 1))
	for i := range ts {
		if ts[i].Reference == "" || ts[i].Kind == topics.KindCompileFix {
			problem[i] = "no reference"
			continue
		}
		g.Go(func() error {
			task := ts[i]
			task.CalibratedTimeoutMS = 0 // measure under the fixed limit
			for range c.Runs {
				o, err := e.Evaluate(gctx, &task, task.Reference)
				if err != nil {
					return err
				}
				if o.Status != topics.StatusPassed {
					problem[i] = "reference got " + o.Status
					return nil
				}
				cpu[i] = max(cpu[i], o.MaxRunCPU)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return rep, err
	}
	for i := range ts {
		if problem[i] != "" {
			rep.Skipped = append(rep.Skipped, ts[i].TaskID+": "+problem[i])
			continue
		}
		lim := c.Limit(cpu[i])
		if ts[i].TimeoutMS > 0 {
			lim = min(lim, time.Duration(ts[i].TimeoutMS)*time.Millisecond)
		}
		ts[i].CalibratedTimeoutMS = int((lim + time.Millisecond - 1) / time.Millisecond)
		rep.Calibrated++
	}
	return rep, nil
}

func (r CalibrationReport) String() string {
	return fmt.Sprintf("calibrated %d tasks, %d at their fixed limit", r.Calibrated, len(r.Skipped))
}
