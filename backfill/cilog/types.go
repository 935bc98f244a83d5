package cilog

import (
	"encoding/json"

	"github.com/murphy-rl/murphy/topics"
)

// Causes of a failed CI log.
const (
	CauseCompile     = "compile"
	CauseTest        = "test"
	CauseLint        = "lint"
	CauseDependency  = "dependency"
	CauseEnvironment = "environment"
	CauseInfra       = "infra"
	CauseUnknown     = "unknown"
	// CauseNone is a log whose build passed.
	CauseNone = "none"
)

// CI services a log is recognised as.
const (
	CIGitHubActions = "github-actions" // raw job log
	CIGitHubCLI     = "github-cli"     // gh run view --log: job<TAB>step<TAB>line
	CIGitLab        = "gitlab"
	CITravis        = "travis"
	CIJenkins       = "jenkins"
	CIBuildkite     = "buildkite"
	CIJUnit         = "junit" // a JUnit XML report given as input
	CIPlain         = "plain"
)

// Report is what one CI log says: the contract of `murphy backfill parse
// --json` (DESIGN §4).
type Report struct {
	File        string       `json:"file"`
	CI          string       `json:"ci"`
	Cause       string       `json:"cause"`
	Steps       []Step       `json:"steps"`
	Diagnostics []Diagnostic `json:"diagnostics"`
	// Lines is the number of raw lines read.
	Lines int `json:"lines"`
	// Truncated is set when the per-log diagnostic cap was reached.
	Truncated bool `json:"truncated,omitempty"`
	// Error says why the log could not be read (whole or in part).
	Error string `json:"error,omitempty"`
}

// Step is a step or section of the job with its raw line range.
type Step struct {
	Name     string `json:"name"`
	LogLines [2]int `json:"log_lines"`
	Failed   bool   `json:"failed"`
}

// Diagnostic is a diagnostic found in the log with the raw lines it spans
// (1-based, inclusive). Ranges lists every range folded into it (a
// compiler's error and Maven's echo of it), LogLines being the first.
type Diagnostic struct {
	topics.Diagnostic
	LogLines [2]int   `json:"log_lines"`
	Ranges   [][2]int `json:"log_ranges,omitempty"`
	// Step is the name of the step the diagnostic is in ("" = none).
	Step string `json:"step,omitempty"`
}

// MarshalJSON writes every field of the contract, empty ones included.
func (d Diagnostic) MarshalJSON() ([]byte, error) {
	type out struct {
		Tool     string   `json:"tool"`
		Severity string   `json:"severity"`
		File     string   `json:"file"`
		Line     int      `json:"line"`
		Column   int      `json:"column"`
		Code     string   `json:"code"`
		Message  string   `json:"message"`
		LogLines [2]int   `json:"log_lines"`
		Ranges   [][2]int `json:"log_ranges,omitempty"`
		Step     string   `json:"step,omitempty"`
	}
	return json.Marshal(out{d.Tool, d.Severity, d.File, d.Line, d.Column, d.Code, d.Message, d.LogLines, d.Ranges, d.Step})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (d *Diagnostic) UnmarshalJSON(b []byte) error {
	var in struct {
		topics.Diagnostic
		LogLines [2]int   `json:"log_lines"`
		Ranges   [][2]int `json:"log_ranges"`
		Step     string   `json:"step"`
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	*d = Diagnostic{Diagnostic: in.Diagnostic, LogLines: in.LogLines, Ranges: in.Ranges, Step: in.Step}
	return nil
}
