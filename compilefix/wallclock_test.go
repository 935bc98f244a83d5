package compilefix

import (
	"testing"

	"github.com/murphy-rl/murphy/topics"
)

// TestWallClockKillIsHarnessTimeout: a build killed at its wall-clock
// limit without using its CPU time (here one that sleeps) is retried once,
// then reported as a harness timeout, not as the candidate's timeout; a
// build that uses up its CPU time is the candidate's timeout.
func TestWallClockKillIsHarnessTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for wall-clock limits")
	}
	cf, byID, _ := openCompileFix(t)
	base := *byID["murphy/cf-c-ringbuf"]
	base.TimeoutMS = 300 // CPU 300ms, wall 2x+5s = 5.6s
	for _, tc := range []struct {
		name, script, status, kind string
	}{
		{"sleeps past the wall clock", "sleep 30", topics.StatusSandboxError, topics.SandboxErrorHarnessTimeout},
		{"burns its CPU time", "while :; do :; done", topics.StatusTimeout, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			task := base
			cfc := *base.CompileFix
			cfc.Build = []string{"sh", "-c", "[ $(ls | wc -l) -gt 4 ] && " + tc.script + "; true"}
			cfc.Tests = nil
			task.CompileFix = &cfc
			// The baseline (four files) builds at once; the candidate adds a
			// fifth and runs the script.
			out := evalCF(t, cf, &task, "--- /dev/null\n+++ b/note.txt\n@@ -0,0 +1 @@\n+x\n")
			if out.Status != tc.status || out.SandboxErrorKind != tc.kind {
				t.Fatalf("status %s kind %q (%s%s), want %s %q", out.Status, out.SandboxErrorKind, out.SandboxError, out.Feedback, tc.status, tc.kind)
			}
		})
	}
}
