package sandbox

import (
	"bytes"

	json "github.com/goccy/go-json"
)

// event is one report line of the harness after its nonce.
type event struct {
	Ev    string          `json:"ev"`
	I     *int            `json:"i"`
	V     json.RawMessage `json:"v"`
	R     string          `json:"r"`
	Bad   *string         `json:"bad"`
	OK    *bool           `json:"ok"`
	Kind  string          `json:"kind"`
	Type  string          `json:"type"`
	TB    string          `json:"tb"`
	Error string          `json:"error"`
	Code  int             `json:"code"`
}

// reportState turns report lines into a Result. Only lines carrying the
// run's nonce count, each event is accepted once, and in the order the
// harness writes them: hello first, expectations before the value they
// judge, test results only after the program loaded.
type reportState struct {
	nonce     []byte
	mode      string
	tests     []Test
	res       *Result
	expect    []json.RawMessage
	expectBad []string
	values    []json.RawMessage
	hello     bool
	finished  bool
}

func newReportState(nonce string, job *Job, res *Result) *reportState {
	n := len(job.Tests)
	res.Tests = make([]TestReport, n)
	return &reportState{
		nonce: []byte(nonce + " "), mode: job.Mode, tests: job.Tests, res: res,
		expect: make([]json.RawMessage, n), expectBad: make([]string, n), values: make([]json.RawMessage, n),
	}
}

func (st *reportState) reject() { st.res.Rejected++ }

func (st *reportState) line(b []byte) {
	if !bytes.HasPrefix(b, st.nonce) {
		st.reject()
		return
	}
	var e event
	if err := json.Unmarshal(b[len(st.nonce):], &e); err != nil {
		st.reject()
		return
	}
	r := st.res
	if !st.hello {
		if e.Ev != "hello" {
			st.reject()
			return
		}
		st.hello, r.Hello = true, true
		return
	}
	if st.finished {
		st.reject()
		return
	}
	idx := -1
	if e.I != nil {
		idx = *e.I
		if idx < 0 || idx >= len(st.tests) {
			st.reject()
			return
		}
	}
	switch e.Ev {
	case "compile_error":
		if r.Loaded || r.CompileError != "" {
			st.reject()
			return
		}
		r.CompileError = e.Error
		st.finished = true
	case "load_error":
		if r.Loaded {
			st.reject()
			return
		}
		r.LoadError = &Failure{Kind: e.Kind, Type: e.Type, Traceback: e.TB}
		st.finished = true
	case "loaded", "start":
		if r.Loaded {
			st.reject()
			return
		}
		r.Loaded = true
	case "expect":
		if idx < 0 || st.expect[idx] != nil || st.expectBad[idx] != "" || r.Tests[idx].Reported {
			st.reject()
			return
		}
		if e.Bad != nil {
			st.expectBad[idx] = "expected value is not plain data: " + *e.Bad
			return
		}
		st.expect[idx] = append(json.RawMessage(nil), e.V...)
	case "value", "assert":
		if st.mode != ModeFunction || !r.Loaded || idx < 0 || r.Tests[idx].Reported {
			st.reject()
			return
		}
		t := &r.Tests[idx]
		t.Reported = true
		switch {
		case e.Ev == "assert" && e.OK != nil:
			t.Passed = *e.OK
			t.AssertFailed = !*e.OK
			if !*e.OK && e.TB != "" {
				t.Err = &Failure{Kind: "assert", Type: "AssertionError", Traceback: e.TB}
			}
		case e.Bad != nil:
			t.NotPlain = *e.Bad
		case e.Ev == "value":
			st.values[idx] = append(json.RawMessage(nil), e.V...)
			t.Actual = e.R
			t.Passed = st.judge(idx)
		}
	case "error":
		f := &Failure{Kind: e.Kind, Type: e.Type, Traceback: e.TB}
		if st.mode == ModeProgram {
			if !r.Loaded || r.LoadError != nil {
				st.reject()
				return
			}
			r.LoadError = f
			st.finished = true
			return
		}
		if !r.Loaded || idx < 0 || r.Tests[idx].Reported {
			st.reject()
			return
		}
		r.Tests[idx].Reported = true
		r.Tests[idx].Err = f
	case "done":
		if st.mode != ModeFunction || !r.Loaded {
			st.reject()
			return
		}
		r.Done = true
		st.finished = true
	case "end":
		if st.mode != ModeProgram || !r.Loaded {
			st.reject()
			return
		}
		r.Done, r.EndCode = true, e.Code
		st.finished = true
	default:
		st.reject()
	}
}

// judge compares the reported value of test idx with its expectation.
func (st *reportState) judge(idx int) bool {
	t := &st.res.Tests[idx]
	if st.expectBad[idx] != "" {
		t.Err = &Failure{Kind: "task", Type: "TaskError", Traceback: st.expectBad[idx]}
		return false
	}
	if st.expect[idx] == nil {
		t.Err = &Failure{Kind: "task", Type: "TaskError", Traceback: "the expected value could not be evaluated"}
		return false
	}
	ok, err := ValuesEqual(st.expect[idx], st.values[idx])
	if err != nil {
		t.Err = &Failure{Kind: "task", Type: "ProtocolError", Traceback: err.Error()}
		return false
	}
	return ok
}

// feed splits data into lines and hands complete ones to line.
func (st *reportState) feed(data []byte) {
	for len(data) > 0 {
		n := bytes.IndexByte(data, '\n')
		if n < 0 {
			// A trailing partial line means the writer died mid-line.
			st.reject()
			return
		}
		st.line(data[:n])
		data = data[n+1:]
	}
}
