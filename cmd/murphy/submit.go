package main

import (
	"errors"

	"github.com/spf13/cobra"
)

func newSubmitCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "submit",
		Short: "(not built yet)",
		RunE:  func(*cobra.Command, []string) error { return errors.New("submit: not built yet") },
	}
}
