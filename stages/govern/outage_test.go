package govern

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/murphy-rl/murphy/topics"
)

// TestOutagesLeaveGroupStats: a judge or scorer outage is masked with its
// own cause and, by default, kept out of its group's mean/std, so that its
// reward 0 never becomes a real zero in the baseline. group_stats still
// overrides it; other infrastructure causes keep counting by default.
func TestOutagesLeaveGroupStats(t *testing.T) {
	multiStep := trajectory(toolCall("read_file", map[string]any{"path": "a.py"}), toolCall("run", map[string]any{"command": "pytest"}))
	cases := []struct {
		name  string
		ex    *topics.Execution
		opts  func() []Option
		cause string
	}{
		{"judge", execution(), func() []Option { return []Option{WithJudges(&staticJudge{err: errors.New("connection refused")})} }, CauseJudge},
		{"scorer", execution(failing(1), multiStep), func() []Option { return []Option{WithScorer(failingScorer{})} }, CauseScorer},
	}
	for _, tc := range cases {
		for _, override := range []*bool{nil, ptr(true), ptr(false)} {
			cfg := DefaultConfig()
			cfg.RewardPolicy = topics.RewardTiered // a real wrong answer would get 0.5: the outage must not
			want := false
			if override != nil {
				cfg.GroupStats = map[string]bool{tc.cause: *override}
				want = *override
			}
			res, err := newGovernor(t, cfg, tc.opts()...).Govern(context.Background(), tc.ex, tasksWith(testTask()))
			if err != nil {
				t.Fatal(err)
			}
			s := res.Sample
			if s.FailureCause != tc.cause || s.Route != topics.RouteMasked || s.Reward != 0 {
				t.Fatalf("%s: cause %s route %s reward %g", tc.name, s.FailureCause, s.Route, s.Reward)
			}
			if s.InGroupStats != want {
				t.Errorf("%s (group_stats %v): in_group_stats = %v, want %v", tc.name, override, s.InGroupStats, want)
			}
			if res.Refinement != nil || s.ChildrenRequested != 0 || s.StepScores != nil {
				t.Errorf("%s: expanded %v children %d scores %v", tc.name, res.Refinement != nil, s.ChildrenRequested, s.StepScores)
			}
			for i, w := range s.LossWeights {
				if w != 0 {
					t.Fatalf("%s: weight[%d] = %g", tc.name, i, w)
				}
			}
		}
	}
	// Other infrastructure causes still count by default (the paper's setting).
	res, err := newGovernor(t, DefaultConfig()).Govern(context.Background(), execution(status(topics.StatusSandboxError)), tasksWith(testTask()))
	if err != nil || res.Sample.FailureCause != CauseSandbox || !res.Sample.InGroupStats {
		t.Fatalf("sandbox error: %v cause %s in_group_stats %v", err, res.Sample.FailureCause, res.Sample.InGroupStats)
	}
}

func ptr[T any](v T) *T { return &v }

// TestStageCountsOutages: with the LLM judge and scorer down, the stage
// emits masked samples outside group statistics and counts them by route and
// cause, and the failed calls as llm_calls_total{result=error}.
func TestStageCountsOutages(t *testing.T) {
	srv := newChatServer(t, func(int64, chatRequest) (int, string) {
		return http.StatusServiceUnavailable, "overloaded"
	})
	cfg := DefaultConfig()
	cfg.Judges = []string{JudgeLLM}
	cfg.Scorer = ScorerLLM
	cfg.RewardPolicy = topics.RewardTiered
	cfg.LLM = llmConfig(srv.URL)
	s, reg := newTestStage(t, cfg, tasksWith(testTask()))

	multiStep := trajectory(toolCall("read_file", map[string]any{"path": "a.py"}), toolCall("run", map[string]any{"command": "pytest"}))
	for _, tc := range []struct {
		ex    *topics.Execution
		cause string
	}{
		{execution(), CauseJudge},                       // passes the tests: the judge is asked and fails
		{execution(failing(1), multiStep), CauseScorer}, // wrong by the tests gate; the scorer fails
	} {
		outs, err := s.Handle(context.Background(), record(t, tc.ex))
		if err != nil {
			t.Fatal(err)
		}
		if len(outs) != 1 {
			t.Fatalf("%s: %d outputs, want the sample alone (never expanded)", tc.cause, len(outs))
		}
		var sample topics.Sample
		if err := topics.Decode(outs[0].Value, &sample); err != nil {
			t.Fatal(err)
		}
		if sample.FailureCause != tc.cause || sample.Route != topics.RouteMasked || sample.InGroupStats || sample.Reward != 0 {
			t.Fatalf("sample: cause %s route %s in_group_stats %v reward %g", sample.FailureCause, sample.Route, sample.InGroupStats, sample.Reward)
		}
	}
	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"murphy_govern_samples_total", map[string]string{"route": "masked", "cause": CauseJudge}, 1},
		{"murphy_govern_samples_total", map[string]string{"route": "masked", "cause": CauseScorer}, 1},
		{"murphy_govern_llm_calls_total", map[string]string{"component": "judge", "result": "error"}, 1},
		{"murphy_govern_llm_calls_total", map[string]string{"component": "scorer", "result": "error"}, 1},
		{"murphy_govern_reward", map[string]string{"turn": "1"}, 0}, // masked rewards are not train rewards
		{"murphy_govern_expansions_total", nil, 0},
	}
	for _, c := range checks {
		if got := metricValue(t, reg, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %g, want %g", c.name, c.labels, got, c.want)
		}
	}
}
