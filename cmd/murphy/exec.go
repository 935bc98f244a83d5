package main

import (
	"errors"

	"github.com/spf13/cobra"
)

func newExecCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "exec",
		Short: "(not built yet)",
		RunE:  func(*cobra.Command, []string) error { return errors.New("exec: not built yet") },
	}
}
