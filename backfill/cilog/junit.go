package cilog

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
)

// isJUnit reports whether a stream starts like a JUnit XML report.
func isJUnit(start []byte) bool {
	s := bytes.TrimLeft(start, "\xef\xbb\xbf \t\r\n")
	if bytes.HasPrefix(s, []byte("<?xml")) {
		if i := bytes.Index(s, []byte("?>")); i > 0 {
			s = bytes.TrimLeft(s[i+2:], " \t\r\n")
		}
		for bytes.HasPrefix(s, []byte("<!--")) {
			i := bytes.Index(s, []byte("-->"))
			if i < 0 {
				break
			}
			s = bytes.TrimLeft(s[i+3:], " \t\r\n")
		}
	}
	return bytes.HasPrefix(s, []byte("<testsuite"))
}

// parseJUnit reads a JUnit XML report (Surefire, Gradle, pytest
// --junitxml, go-junit-report): each failed or errored test case is a
// diagnostic whose lines are its <failure>/<error> element's. It is read
// with encoding/xml's streaming decoder, which gives element positions.
func parseJUnit(r io.Reader, name string) (*Report, error) {
	rep := &Report{File: name, CI: CIJUnit, Steps: []Step{}, Diagnostics: []Diagnostic{}}
	dec := xml.NewDecoder(r)
	dec.Strict = false
	type open struct {
		name, class, file string
		line              int
	}
	var suite string
	var suiteStart int
	var tc *open
	total, bad := 0, 0
	for {
		line, _ := dec.InputPos()
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			rep.Lines = line
			return rep, fmt.Errorf("junit xml: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "testsuite":
				suite, suiteStart = attr(t, "name"), line
			case "testcase":
				total++
				tc = &open{name: attr(t, "name"), class: attr(t, "classname"), file: attr(t, "file"), line: atoi(attr(t, "line"))}
			case "failure", "error":
				if tc == nil {
					continue
				}
				var body struct {
					Message string `xml:"message,attr"`
					Type    string `xml:"type,attr"`
					Text    string `xml:",chardata"`
				}
				if err := dec.DecodeElement(&body, &t); err != nil {
					return rep, fmt.Errorf("junit xml: %w", err)
				}
				end, _ := dec.InputPos()
				bad++
				d := Diagnostic{LogLines: [2]int{line, end}, Step: suite}
				d.Tool, d.Severity, d.File, d.Line = "junit", "error", tc.file, tc.line
				d.Code = strings.TrimSpace(tc.class + "." + tc.name)
				msg := body.Message
				if msg == "" {
					msg, _, _ = strings.Cut(strings.TrimSpace(body.Text), "\n")
				}
				if body.Type != "" && !strings.HasPrefix(msg, body.Type) {
					msg = body.Type + ": " + msg
				}
				d.Message = clip(t.Name.Local + " " + d.Code + ": " + msg)
				if d.File == "" && tc.class != "" {
					d.File, d.Line = firstFrame(strings.Split(body.Text, "\n"), 0, 1<<30)
				}
				if len(rep.Diagnostics) < MaxDiagnostics {
					rep.Diagnostics = append(rep.Diagnostics, d)
				} else {
					rep.Truncated = true
				}
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "testcase":
				tc = nil
			case "testsuite":
				end, _ := dec.InputPos()
				if len(rep.Steps) < MaxSteps {
					rep.Steps = append(rep.Steps, Step{Name: suite, LogLines: [2]int{suiteStart, end}, Failed: false})
				}
			}
		}
		rep.Lines, _ = dec.InputPos()
	}
	for i := range rep.Steps {
		for _, d := range rep.Diagnostics {
			if d.LogLines[0] >= rep.Steps[i].LogLines[0] && d.LogLines[1] <= rep.Steps[i].LogLines[1] {
				rep.Steps[i].Failed = true
			}
		}
	}
	rep.Cause = CauseNone
	if bad > 0 {
		rep.Cause = CauseTest
	}
	_ = total
	return rep, nil
}

func attr(t xml.StartElement, name string) string {
	for _, a := range t.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}
