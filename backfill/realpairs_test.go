package backfill

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/murphy-rl/murphy/backfill/cilog"
	"github.com/murphy-rl/murphy/topics"
)

// pairsDir holds the BugSwarm job pairs' logs (SOURCES.md).
const pairsDir = "../../shared/data/cilogs/bugswarm-pairs"

// TestRealPairF90nmlRejected: f90nml's CI failed with a SyntaxError inside
// coverage (installed for Python 3.2), and the fix only pins
// test/requirements_test.txt: the item is rejected, and the rejection says
// why, without building anything.
func TestRealPairF90nmlRejected(t *testing.T) {
	t.Parallel()
	repo := repoPath(t, "f90nml.bundle")
	log := filepath.Join(pairsDir, "marshallward-f90nml-81508928", "failing.log")
	b := &Builder{} // rejected before anything is built
	res, err := b.BuildItem(context.Background(), Item{Kind: KindHistory, Name: "f90nml", Repo: repo, Fail: "fail", Fix: "fix", Log: log,
		Build: []string{"python3", "-m", "pytest", "-q", "test"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tasks) != 0 || len(res.Rejected) != 1 {
		t.Fatalf("%d tasks, rejected %+v", len(res.Tasks), res.Rejected)
	}
	rj := res.Rejected[0]
	for _, want := range []string{"installed distribution coverage", "site-packages/coverage/annotate.py:81", "SyntaxError",
		"test/requirements_test.txt", "which dependency versions are installed"} {
		if !strings.Contains(rj.Detail, want) {
			t.Errorf("the rejection does not say %q: %s", want, rj.Detail)
		}
	}
	if rj.Reason != RejectNoSourceChange || res.Cause != cilog.CauseDependency {
		t.Errorf("rejected %s (cause %s): %s", rj.Reason, res.Cause, rj.Detail)
	}
	t.Logf("%s: %s", rj.Reason, rj.Detail)
}

// TestMatchByLocationAndKind: the log's errors are found in the sandbox
// build by message where the toolchains agree, and by file, line and class
// where they word the error differently; the target is the sandbox's
// diagnostic, and the mapping says which was which.
func TestMatchByLocationAndKind(t *testing.T) {
	t.Parallel()
	logged := []cilog.Diagnostic{
		{Diagnostic: topics.Diagnostic{Tool: "python", Severity: "error", File: "/home/travis/build/u/p/pkg/io.py", Line: 41, Code: "SyntaxError", Message: "invalid syntax"}, LogLines: [2]int{120, 125}},
		{Diagnostic: topics.Diagnostic{Tool: "maven", Severity: "error", File: "/home/travis/build/u/p/src/main/java/a/Util.java", Line: 237, Column: 16, Message: "cannot find symbol\nsymbol: class ResultSetMapper"}, LogLines: [2]int{826, 828}},
		{Diagnostic: topics.Diagnostic{Tool: "javac", Severity: "error", File: "/home/travis/build/u/p/src/main/java/a/Q.java", Line: 90, Message: "incompatible types: int cannot be converted to String"}, LogLines: [2]int{900, 900}},
		{Diagnostic: topics.Diagnostic{Tool: "javac", Severity: "error", File: "/home/travis/build/u/p/src/main/java/a/Q.java", Line: 140, Message: "cannot find symbol"}, LogLines: [2]int{910, 910}},
	}
	files := map[string]bool{"pkg/io.py": true, "src/main/java/a/Util.java": true, "src/main/java/a/Q.java": true}
	baseline := []topics.Diagnostic{
		{Tool: "python", Severity: "error", File: "pkg/io.py", Line: 41, Code: "SyntaxError", Message: "multiple exception types must be parenthesized"},
		{Tool: "maven", Severity: "error", File: "src/main/java/a/Util.java", Line: 237, Column: 16, Message: "cannot find symbol\nsymbol: class ResultSetMapper\nlocation: class a.Util"},
		{Tool: "maven", Severity: "error", File: "src/main/java/a/Q.java", Line: 91, Message: "incompatible types: possible lossy conversion from int to String"},
	}
	kept, m := match(locate(logged, files), baseline)
	if len(kept) != 3 || len(m) != 4 {
		t.Fatalf("kept %d of %d: %+v", len(kept), len(m), m)
	}
	// PyPy's and CPython's SyntaxError agree on the code (diag.Match's
	// tiers); javac's two wordings of one type error only on its place
	// and class.
	for i, want := range []struct{ by, file string }{{ByMessage, "pkg/io.py"}, {ByMessage, "src/main/java/a/Util.java"}, {ByLocation, "src/main/java/a/Q.java"}} {
		if m[i].By != want.by || m[i].Sandbox == nil || m[i].Sandbox.File != want.file || kept[i] != baseline[i] {
			t.Errorf("target %d: %+v, want %s by %s", i, m[i], want.file, want.by)
		}
	}
	if m[3].Sandbox != nil || m[3].Dropped == "" || m[3].Log.LogLines == nil || m[3].Log.LogLines[0] != 910 {
		t.Errorf("an unreproduced target: %+v", m[3])
	}
	if m[0].Log.LogFile != "/home/travis/build/u/p/pkg/io.py" || m[0].Log.File != "pkg/io.py" || m[0].Log.Class != "syntax" {
		t.Errorf("the log side: %+v", m[0].Log)
	}
}
