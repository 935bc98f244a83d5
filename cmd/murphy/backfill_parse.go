package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/murphy-rl/murphy/backfill/cilog"
	"github.com/spf13/cobra"
)

func newBackfillParseCmd() *cobra.Command {
	var (
		asJSON bool
		opt    cilog.Options
	)
	cmd := &cobra.Command{
		Use:   "parse [--json] FILE...",
		Short: "Parse CI logs: steps, diagnostics with their log lines, failure cause",
		Long: `Parse reads CI job logs (GitHub Actions raw and "gh run view --log", GitLab,
Travis, Jenkins, Buildkite or plain; gzip, zstd and bzip2 read through) and
JUnit XML reports, and prints for each file its CI service, its steps with
their line ranges and whether they failed, the diagnostics of compilers,
build tools and test runners with the raw log lines they span, and the
failure's cause: compile, test, lint, dependency, environment, infra,
unknown, or none for a log whose build passed. Line numbers are 1-based
lines of the raw file, where "\n", "\r\n" and a lone "\r" each end a line.

With --json each file gives one JSON object on its own line:
{"file", "ci", "cause", "steps": [{"name", "log_lines": [a, b], "failed"}],
 "diagnostics": [{"tool", "severity", "file", "line", "column", "code",
 "message", "log_lines": [a, b], "log_ranges": [[a, b], ...]}]}
A file that cannot be read gives {"file", "error"}; the other files are
still parsed, and the exit status is 1.`,
		Example: "  murphy backfill parse --json job.log build.log.gz TEST-report.xml",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			out := cmd.OutOrStdout()
			failed := 0
			for _, f := range files {
				rep, err := cilog.ParseFileWith(f, opt)
				if err != nil {
					failed++
					if rep == nil {
						rep = &cilog.Report{File: f}
					}
					rep.Error = err.Error()
					fmt.Fprintf(cmd.ErrOrStderr(), "%s: %v\n", f, err)
				}
				if asJSON {
					if err := writeParseJSON(out, rep); err != nil {
						return err
					}
					continue
				}
				writeParseText(out, rep)
			}
			if failed > 0 {
				return &exitError{code: 1, err: fmt.Errorf("backfill parse: %d of %d files could not be read", failed, len(files))}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per file (the contract in DESIGN.md §4)")
	cmd.Flags().BoolVar(&opt.Warnings, "warnings", false, "keep warning-severity compiler diagnostics too")
	return cmd
}

func writeParseJSON(w io.Writer, rep *cilog.Report) error {
	if rep.Error != "" && rep.CI == "" {
		b, _ := json.Marshal(struct {
			File  string `json:"file"`
			Error string `json:"error"`
		}{rep.File, rep.Error})
		_, err := fmt.Fprintf(w, "%s\n", b)
		return err
	}
	b, err := json.Marshal(rep)
	if err != nil {
		return errors.New("backfill parse: " + err.Error())
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

func writeParseText(w io.Writer, rep *cilog.Report) {
	if rep.Error != "" && rep.CI == "" {
		fmt.Fprintf(w, "%s: error: %s\n", rep.File, rep.Error)
		return
	}
	failedSteps := 0
	for _, s := range rep.Steps {
		if s.Failed {
			failedSteps++
		}
	}
	byTool := map[string]int{}
	for _, d := range rep.Diagnostics {
		byTool[d.Tool]++
	}
	tools := make([]string, 0, len(byTool))
	for t, n := range byTool {
		tools = append(tools, fmt.Sprintf("%s %d", t, n))
	}
	sort.Strings(tools)
	fmt.Fprintf(w, "%s: %s, %d lines, cause %s, %d steps (%d failed), %d diagnostics (%s)\n",
		rep.File, rep.CI, rep.Lines, rep.Cause, len(rep.Steps), failedSteps, len(rep.Diagnostics), strings.Join(tools, ", "))
	for _, s := range rep.Steps {
		if s.Failed {
			fmt.Fprintf(w, "  failed step %q (lines %d-%d)\n", s.Name, s.LogLines[0], s.LogLines[1])
		}
	}
	for _, d := range rep.Diagnostics {
		loc := d.File
		if d.Line > 0 {
			loc = fmt.Sprintf("%s:%d", loc, d.Line)
			if d.Column > 0 {
				loc = fmt.Sprintf("%s:%d", loc, d.Column)
			}
		}
		if loc != "" {
			loc += ": "
		}
		msg, _, _ := strings.Cut(d.Message, "\n")
		if len(msg) > 160 {
			msg = msg[:160] + "…"
		}
		fmt.Fprintf(w, "  %d-%d %s %s: %s%s\n", d.LogLines[0], d.LogLines[1], d.Tool, d.Severity, loc, msg)
	}
	if rep.Truncated {
		fmt.Fprintf(w, "  (more than %d diagnostics; the rest were dropped)\n", cilog.MaxDiagnostics)
	}
	if rep.Error != "" {
		fmt.Fprintf(w, "  error: %s\n", rep.Error)
	}
}
