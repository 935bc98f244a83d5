package govern

import (
	"context"
	"testing"

	"github.com/murphy-rl/murphy/topics"
)

// TestReferencePatchMismatchAbstainsByDefault: another fix may be valid too,
// so a mismatch passes to the next judge (here the tests) by default.
func TestReferencePatchMismatchAbstainsByDefault(t *testing.T) {
	const refPatch = "--- a/add.py\n+++ b/add.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n"
	const otherPatch = "--- a/add.py\n+++ b/add.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return sum([a, b])\n"
	cfg := DefaultConfig()
	if !cfg.ReferencePatch.MismatchAbstains {
		t.Error("reference_patch.mismatch_abstains is off by default")
	}
	cfg.Judges, cfg.RewardPolicy = []string{JudgeReferencePatch}, topics.RewardTiered
	task := testTask()
	task.ReferencePatch = refPatch // the general chain; compile-fix tasks have their own (compilefix_test.go)
	res, err := newGovernor(t, cfg).Govern(context.Background(), execution(func(e *topics.Execution) { e.Code = otherPatch }), tasksWith(task))
	if err != nil {
		t.Fatal(err)
	}
	if res.Sample.Reward != 1 || res.Judge != JudgeTests || res.Refinement != nil {
		t.Fatalf("reward %g judge %s expanded %v, want 1 by the tests", res.Sample.Reward, res.Judge, res.Refinement != nil)
	}
}
