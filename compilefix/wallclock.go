package compilefix

import (
	"context"

	"github.com/murphy-rl/murphy/sandbox"
)

// wallClockKill reports whether a command was killed at its wall-clock
// limit without having used its CPU limit: the machine was busy
// (contention, a stalled sandbox), not the candidate slow. The margin keeps
// a CPU kill that the cgroup accounted a little short of the limit a CPU
// kill.
func wallClockKill(c *sandbox.CommandResult, lim sandbox.BuildLimits) bool {
	return c.TimedOut && c.CPU < lim.CPU*9/10
}

// buildOnce runs job and retries it once when a command was killed at the
// wall clock without a CPU overrun; harness reports that the retry was too,
// and the result is then not a verdict on the candidate (the method's
// system timeout: govern masks it as infra.harness_timeout).
func (c *Evaluator) buildOnce(ctx context.Context, job *sandbox.BuildJob) (res *sandbox.BuildResult, harness bool, err error) {
	for attempt := 0; ; attempt++ {
		res, err = c.Builder.Build(ctx, job)
		if err != nil || res.SandboxError != "" {
			return res, false, err
		}
		killed := false
		for i := range res.Commands {
			killed = killed || wallClockKill(&res.Commands[i], res.Limits)
		}
		if !killed {
			return res, false, nil
		}
		if attempt == 1 {
			return res, true, nil
		}
	}
}
