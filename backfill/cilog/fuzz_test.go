package cilog

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzParse: no input makes the parser panic, report a line outside the
// log, or a range that ends before it starts.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"2024-01-01T10:00:00.0Z ##[group]Run make\n2024-01-01T10:00:01.0Z a.c:1:1: error: x\n##[error]Process completed with exit code 2.\n",
		"job\tstep\t2024-01-01T10:00:00.0Z [ERROR] Failed to execute goal x (y) on project z\n[ERROR] -> [Help 1]\r\n",
		"section_start:1:build\r\x1b[0K\nTraceback (most recent call last):\n  File \"a.py\", line 1\nValueError: v\n",
		"travis_fold:start:x\r$ go test\n--- FAIL: TestX\n    x_test.go:3: no\nThe command \"go test\" exited with 1.\n",
		"<?xml version=\"1.0\"?><testsuite name=\"s\"><testcase name=\"t\"><failure message=\"m\">x</failure></testcase></testsuite>",
		"[Pipeline] { (Build)\nERROR: boom\n\tat a.b(C.java:1)\n[Pipeline] }\n",
		"FAILURE: Build failed with an exception.\n\n* What went wrong:\nExecution failed for task ':compileJava'.\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		rep, err := Parse(bytes.NewReader(b), "fuzz")
		if err != nil {
			return
		}
		n := rep.Lines
		if strings.HasPrefix(strings.TrimSpace(string(b)), "<") {
			n = 1 << 30 // JUnit positions are the XML decoder's
		}
		check := func(what string, r [2]int) {
			if r[0] < 1 || r[1] < r[0] || r[1] > n {
				t.Fatalf("%s lines %v of a %d-line log", what, r, rep.Lines)
			}
		}
		for _, d := range rep.Diagnostics {
			check("diagnostic", d.LogLines)
			for _, r := range d.Ranges {
				check("range", r)
			}
		}
		for _, s := range rep.Steps {
			check("step "+s.Name, s.LogLines)
		}
	})
}
