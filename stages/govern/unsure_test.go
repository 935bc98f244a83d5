package govern

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/murphy-rl/murphy/topics"
)

// TestLLMJudgeUnsure: "unsure" is a verdict of its own: under tiered it gets
// the unsure tier (default 0.5, the wrong tier), under binary 0, under
// pass_rate the tests' reward; the node is not solved (it expands), and the
// verdict is cached like the others.
func TestLLMJudgeUnsure(t *testing.T) {
	if !strings.Contains(DefaultJudgeRubric, `"unsure"`) {
		t.Fatalf("the default rubric does not offer the unsure verdict:\n%s", DefaultJudgeRubric)
	}
	v, err := ParseJudgeAnswer(`{"verdict": "unsure", "reason": "the task does not say how ties are broken"}`)
	if err != nil || v.String() != "unsure" {
		t.Fatalf("unsure parsed as %v, %v", v, err)
	}
	for _, tc := range []struct {
		policy string
		reward float64
	}{{topics.RewardTiered, 0.5}, {topics.RewardBinary, 0}, {topics.RewardPassRate, 1}} {
		t.Run(tc.policy, func(t *testing.T) {
			srv := newChatServer(t, func(int64, chatRequest) (int, string) {
				return http.StatusOK, `{"verdict":"unsure","reason":"cannot tell"}`
			})
			cfg := DefaultConfig()
			cfg.Judges = []string{JudgeLLM}
			cfg.RewardPolicy = tc.policy
			cfg.LLM = llmConfig(srv.URL)
			g, err := NewGovernor(cfg, chatModel(t, srv.URL), WithClock(clock))
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				res, err := g.Govern(context.Background(), execution(), tasksWith(testTask()))
				if err != nil {
					t.Fatal(err)
				}
				s := res.Sample
				if s.FailureCause != CausePassed || s.Route != topics.RouteTrain || res.Judge != JudgeLLM || !s.InGroupStats {
					t.Fatalf("cause %s route %s judge %s in_group_stats %v", s.FailureCause, s.Route, res.Judge, s.InGroupStats)
				}
				if s.Reward != tc.reward {
					t.Errorf("reward %g, want %g", s.Reward, tc.reward)
				}
				if res.Refinement == nil || s.ChildrenRequested != 2 {
					t.Errorf("an unsure node is not solved: expanded %v, children %d", res.Refinement != nil, s.ChildrenRequested)
				}
			}
			if n := srv.requests.Load(); n != 1 {
				t.Fatalf("%d requests for one program judged twice, want 1 (unsure is cached)", n)
			}
		})
	}
}

// TestUnsureTier: the chain's unsure verdict gets Tiers.Unsure under tiered
// (configurable apart from the wrong tier), 0 under binary; the node is not
// solved.
func TestUnsureTier(t *testing.T) {
	if d := DefaultConfig().Tiers; d.Unsure != 0.5 || d.Unsure != d.Wrong {
		t.Fatalf("default tiers %+v: unsure should be 0.5, the wrong tier", d)
	}
	for _, tc := range []struct {
		policy string
		v      Verdict
		want   float64
		solved bool
	}{
		{topics.RewardTiered, Unsure, 0.3, false},
		{topics.RewardTiered, Wrong, 0.6, false},
		{topics.RewardTiered, Correct, 1, true},
		{topics.RewardBinary, Unsure, 0, false},
		{topics.RewardPassRate, Unsure, 1, false},
	} {
		cfg := DefaultConfig()
		cfg.RewardPolicy = tc.policy
		cfg.Tiers = Tiers{NoCompile: 0, Wrong: 0.6, Unsure: 0.3, Correct: 1}
		j := &staticJudge{v: tc.v}
		res, err := newGovernor(t, cfg, WithJudges(j)).Govern(context.Background(), execution(), tasksWith(testTask()))
		if err != nil {
			t.Fatal(err)
		}
		if res.Sample.Reward != tc.want || res.Judge != "static" || (res.Refinement == nil) != tc.solved {
			t.Errorf("%s %v: reward %g judge %s expanded %v, want %g solved %v", tc.policy, tc.v, res.Sample.Reward, res.Judge, res.Refinement != nil, tc.want, tc.solved)
		}
	}
	// A compile error is never judged: no_compile, whatever a judge would say.
	cfg := DefaultConfig()
	cfg.RewardPolicy = topics.RewardTiered
	cfg.Tiers = Tiers{NoCompile: 0.1, Wrong: 0.6, Unsure: 0.3, Correct: 1}
	res, err := newGovernor(t, cfg, WithJudges(&staticJudge{v: Unsure})).Govern(context.Background(), execution(status(topics.StatusCompileError)), tasksWith(testTask()))
	if err != nil || res.Sample.Reward != 0.1 {
		t.Fatalf("compile error: %v reward %g", err, res.Sample.Reward)
	}
}
