package sandbox

import (
	"errors"
	"syscall"

	json "github.com/goccy/go-json"
)

// judgeMsg is one event of the judge's report. The judge is trusted: it
// runs the task's tests in its own process, under its own uid, and only
// ever sees the candidate's answers as decoded values.
type judgeMsg struct {
	Ev           string   `json:"ev"`
	ID           int64    `json:"id"`
	I            *int     `json:"i"`
	Status       string   `json:"status"`
	R            string   `json:"r"`
	Bad          string   `json:"bad"`
	Kind         string   `json:"kind"`
	Type         string   `json:"type"`
	TB           string   `json:"tb"`
	Loaded       bool     `json:"loaded"`
	Gone         bool     `json:"gone"`
	CompileError string   `json:"compile_error"`
	LoadError    *Failure `json:"load_error"`
	Error        string   `json:"error"`
	// Report holds events of the report ("report" and "judged" messages).
	Report []judgeMsg `json:"report"`
}

// readReport folds the judge's report events into res. An event that does
// not fit is the judge's failure: the slot is replaced.
func readReport(res *Result, report []judgeMsg) error {
	done := false
	for i := range report {
		m := &report[i]
		if err := event(res, m); err != nil {
			return err
		}
		if m.Ev == "done" {
			done = true
		}
	}
	if !done {
		return errors.New("judge: the report has no end")
	}
	return nil
}

func event(r *Result, m *judgeMsg) error {
	switch m.Ev {
	case "load":
		switch {
		case m.Loaded:
			r.Loaded = true
		case m.CompileError != "":
			r.CompileError = m.CompileError
		case m.LoadError != nil:
			r.LoadError = m.LoadError
		}
	case "test":
		if m.I == nil || *m.I < 0 || *m.I >= len(r.Tests) || r.Tests[*m.I].Reported {
			return errors.New("judge: bad test report")
		}
		t := &r.Tests[*m.I]
		t.Reported = true
		switch m.Status {
		case "passed":
			t.Passed = true
		case "wrong":
			t.Actual = m.R
			if m.TB != "" {
				t.AssertFailed = true
				t.Err = &Failure{Kind: "assert", Type: "AssertionError", Traceback: m.TB}
			}
		case "notplain":
			t.NotPlain, t.Actual = m.Bad, m.R
		case "error":
			t.Err = &Failure{Kind: m.Kind, Type: m.Type, Traceback: m.TB}
		case "task":
			t.Err = &Failure{Kind: "task", Type: "TaskError", Traceback: m.TB}
		default:
			return errors.New("judge: unknown test status " + m.Status)
		}
	case "gone":
	case "done":
		r.Done = !m.Gone && r.Loaded
	case "error":
		return errors.New(m.Error)
	default:
		return errors.New("judge: unknown event " + m.Ev)
	}
	return nil
}

// hints are what a stdio program's harness said about how it ended, on a
// pipe the program itself can write to: they only ever explain a failure
// (a compile error, the exception that ended it), never make one pass.
type hints struct {
	CompileError string   `json:"compile_error"`
	Error        *Failure `json:"error"`
}

// parseHints reads length-prefixed frames; anything malformed is ignored.
func parseHints(b []byte) hints {
	var h hints
	for len(b) >= 4 {
		n := int(b[0])<<24 | int(b[1])<<16 | int(b[2])<<8 | int(b[3])
		if n < 0 || n > len(b)-4 {
			break
		}
		var f hints
		if json.Unmarshal(b[4:4+n], &f) == nil {
			if f.CompileError != "" && h.CompileError == "" {
				h.CompileError = f.CompileError
			}
			if f.Error != nil && h.Error == nil {
				h.Error = f.Error
			}
		}
		b = b[4+n:]
	}
	return h
}

// programResult fills a stdio run's Result from the real exit status.
func programResult(res *Result, status int, hintBytes []byte) {
	ws := syscall.WaitStatus(status)
	switch {
	case ws.Exited():
		res.Exited, res.ExitCode = true, ws.ExitStatus()
	case ws.Signaled():
		res.Signal = ws.Signal().String()
	}
	res.Loaded = true
	if res.Exited && res.ExitCode == 0 {
		res.Done = true
		return
	}
	h := parseHints(hintBytes)
	if h.CompileError != "" {
		res.CompileError, res.Loaded = h.CompileError, false
	} else if h.Error != nil {
		res.LoadError = h.Error
	}
}
