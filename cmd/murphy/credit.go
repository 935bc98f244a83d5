package main

import (
	"errors"

	"github.com/spf13/cobra"
)

func newCreditCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "credit",
		Short: "(not built yet)",
		RunE:  func(*cobra.Command, []string) error { return errors.New("credit: not built yet") },
	}
}
