package credit

import (
	"math"
	"testing"

	"github.com/murphy-rl/murphy/topics"
)

// TestTurnMetrics: strict accuracy and the degenerate share are of the
// samples that are not masked; steps and scored episodes of the episodes.
func TestTurnMetrics(t *testing.T) {
	ep := func(route, status string, reward float64, steps int, scored bool) *topics.Sample {
		s := &topics.Sample{Route: route, Reward: reward}
		s.Status, s.Turn, s.EpisodeEnd = status, 1, "submitted"
		s.ToolSteps = make([]topics.ToolStep, steps)
		if scored {
			s.StepScores = make(topics.Float32s, steps)
		}
		return s
	}
	ms := TurnMetricsOf([]*topics.Sample{
		ep(topics.RouteTrain, topics.StatusPassed, 1, 4, true),
		ep(topics.RouteTrain, topics.StatusPassed, 0.5, 2, true),
		ep(topics.RouteTrain, topics.StatusCompileError, 0, 6, false),
		ep(topics.RouteLastStepPenalty, topics.StatusPassed, 0, 16, false),
		ep(topics.RouteMasked, topics.StatusSandboxError, 0, 0, false),
	})
	m := ms[1]
	if m.StrictAccuracy() != 0.25 || m.DegenerateShare() != 0.25 || m.MeanSteps() != 28.0/5 || m.Compiled != 2 || m.Scored != 2 {
		t.Fatalf("%+v: accuracy %v degenerate %v steps %v", *m, m.StrictAccuracy(), m.DegenerateShare(), m.MeanSteps())
	}
	if acc, deg, steps, scored := m.Cells(); acc != "25.0%" || deg != "25.0%" || steps != "5.6" || scored != "2/2 compiled" {
		t.Fatalf("cells %q %q %q %q", acc, deg, steps, scored)
	}
	if empty := (TurnMetrics{}); !math.IsNaN(empty.StrictAccuracy()) {
		t.Fatal("no samples: accuracy is a number")
	}
}
