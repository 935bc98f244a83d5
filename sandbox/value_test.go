package sandbox

import (
	"strings"
	"testing"
)

func TestValuesEqualPythonSemantics(t *testing.T) {
	cases := []struct {
		name string
		a, b string
		want bool
	}{
		{"int", `{"i":"3"}`, `{"i":"3"}`, true},
		{"int differs", `{"i":"3"}`, `{"i":"4"}`, false},
		{"negative hex", `{"i":"-ff"}`, `{"i":"-ff"}`, true},
		{"huge int", `{"i":"` + strings.Repeat("f", 5000) + `"}`, `{"i":"` + strings.Repeat("f", 5000) + `"}`, true},
		{"int equals float", `{"i":"1"}`, `{"f":"0x1.0000000000000p+0"}`, true},
		{"true equals 1", `true`, `{"i":"1"}`, true},
		{"false equals 0.0", `false`, `{"f":"0x0.0p+0"}`, true},
		{"float close is not equal", `{"f":"0x1.0000000000001p+0"}`, `{"i":"1"}`, false},
		{"nan never equal", `{"f":"nan"}`, `{"f":"nan"}`, false},
		{"inf equal", `{"f":"inf"}`, `{"f":"inf"}`, true},
		{"inf vs int", `{"f":"inf"}`, `{"i":"1"}`, false},
		{"complex with zero imag equals int", `{"c":["0x1.0p+1","0x0.0p+0"]}`, `{"i":"2"}`, true},
		{"none", `null`, `null`, true},
		{"none vs false", `null`, `false`, false},
		{"str", `"abc"`, `"abc"`, true},
		{"str vs bytes", `"abc"`, `{"b":"YWJj"}`, false},
		{"bytes", `{"b":"YWJj"}`, `{"b":"YWJj"}`, true},
		{"list", `[{"i":"1"},"x"]`, `[{"i":"1"},"x"]`, true},
		{"list order", `[{"i":"1"},{"i":"2"}]`, `[{"i":"2"},{"i":"1"}]`, false},
		{"list vs tuple", `[{"i":"1"}]`, `{"t":[{"i":"1"}]}`, false},
		{"tuple", `{"t":[{"i":"1"}]}`, `{"t":[{"f":"0x1.0p+0"}]}`, true},
		{"set order free", `{"s":[{"i":"1"},{"i":"2"}]}`, `{"s":[{"i":"2"},{"f":"0x1.0p+0"}]}`, true},
		{"set differs", `{"s":[{"i":"1"}]}`, `{"s":[{"i":"2"}]}`, false},
		{"dict order free", `{"d":[["a",{"i":"1"}],["b",{"i":"2"}]]}`, `{"d":[["b",{"i":"2"}],["a",{"i":"1"}]]}`, true},
		{"dict numeric keys", `{"d":[[{"i":"1"},"x"]]}`, `{"d":[[true,"x"]]}`, true},
		{"dict value differs", `{"d":[["a",{"i":"1"}]]}`, `{"d":[["a",{"i":"2"}]]}`, false},
		{"dict tuple keys", `{"d":[[{"t":[{"i":"1"},"a"]},null]]}`, `{"d":[[{"t":[{"i":"1"},"a"]},null]]}`, true},
		{"nested", `[[[{"s":["a"]}]]]`, `[[[{"s":["a"]}]]]`, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ValuesEqual([]byte(tc.a), []byte(tc.b))
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("equal(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.want)
			}
			back, _ := ValuesEqual([]byte(tc.b), []byte(tc.a))
			if back != got {
				t.Fatal("equality is not symmetric")
			}
		})
	}
}

func TestValuesEqualRejectsMalformed(t *testing.T) {
	for _, in := range []string{`{"x":1}`, `{"i":"zz"}`, `1`, `{"i":"1","f":"2"}`, `{"d":[[1]]}`, `not json`,
		strings.Repeat("[", 300) + strings.Repeat("]", 300)} {
		if _, err := ValuesEqual([]byte(in), []byte(`null`)); err == nil {
			t.Errorf("%s: want an error", in)
		}
	}
}

// TestReportNonceAndOrder feeds the report parser forged, duplicate and
// out-of-order lines: none of them may count.
func TestReportNonceAndOrder(t *testing.T) {
	job := &Job{Mode: ModeFunction, Tests: []Test{{Kind: TestValue, Args: "1", Expected: "2"}, {Kind: TestAssert, Code: "candidate(1)"}}}
	const n = "abc"
	lines := strings.Join([]string{
		`xyz {"ev":"hello"}`,                             // wrong nonce
		`abc {"ev":"value","i":0,"v":{"i":"2"}}`,         // before hello
		`abc {"ev":"hello"}`,                             // accepted
		`abc {"ev":"expect","i":0,"v":{"i":"2"}}`,        // accepted
		`abc {"ev":"value","i":0,"v":{"i":"2"},"r":"2"}`, // before loaded
		`abc {"ev":"loaded"}`,                            // accepted
		`abc {"ev":"expect","i":0,"v":{"i":"9"}}`,        // second expectation
		`abc {"ev":"assert","i":1,"ok":true}`,            // accepted
		`abc {"ev":"value","i":0,"v":{"i":"3"},"r":"3"}`, // accepted: wrong value
		`abc {"ev":"value","i":0,"v":{"i":"2"},"r":"2"}`, // duplicate
		`abc {"ev":"assert","i":7,"ok":true}`,            // no such test
		`PASSED`,                                         // no nonce
	}, "\n") + "\n"
	res := &Result{}
	st := newReportState(n, job, res)
	st.feed([]byte(lines))
	if !res.Hello || !res.Loaded || res.Done {
		t.Fatalf("hello=%v loaded=%v done=%v", res.Hello, res.Loaded, res.Done)
	}
	if res.Tests[0].Passed || res.Tests[0].Actual != "3" || !res.Tests[1].Passed {
		t.Fatalf("tests = %+v", res.Tests)
	}
	if res.Rejected != 7 {
		t.Fatalf("rejected %d lines, want 7", res.Rejected)
	}
	// A partial last line (the writer died mid-line) is rejected too.
	st.feed([]byte(`abc {"ev":"done"}`))
	if res.Done {
		t.Fatal("a line without its newline must not count")
	}
}
