// Command murphy runs the rollout pipeline: every stage in one process on an
// embedded broker (run), one stage per process on a Kafka cluster (stage), and
// offline tools (exec, credit, submit).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRootCmd()
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "murphy:", err)
		os.Exit(exitCode(err))
	}
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "murphy",
		Short:         "murphy turns coding tasks into credit-assigned RL training data",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		newRunCmd(),
		newStageCmd(),
		newTopicsCmd(),
		newBrokerCmd(),
		newCompareCmd(),
		newVersionCmd(),
		newExecCmd(),
		newGradeCmd(),
		newCreditCmd(),
		newSubmitCmd(),
		newBenchCmd(),
		newInspectCmd(),
		newBackfillCmd(),
	)
	setupFlags(root)
	return root
}

// exitError carries a process exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func exitCode(err error) int {
	if e, ok := err.(*exitError); ok {
		return e.code
	}
	return 1
}
