package diag

import (
	"encoding/json"
	"path"
	"strings"

	"github.com/murphy-rl/murphy/topics"
)

// rustc --error-format=json and cargo --message-format=json, decoded by
// hand (no errorformat reads JSON): one object per line, either rustc's
// diagnostic or cargo's {"reason":"compiler-message","message":{...}}.

type rustSpan struct {
	FileName    string `json:"file_name"`
	LineStart   int    `json:"line_start"`
	ColumnStart int    `json:"column_start"`
	IsPrimary   bool   `json:"is_primary"`
	Expansion   *struct {
		Span rustSpan `json:"span"`
	} `json:"expansion"`
}

type rustDiag struct {
	Type    string `json:"$message_type"`
	Message string `json:"message"`
	Code    *struct {
		Code string `json:"code"`
	} `json:"code"`
	Level string     `json:"level"`
	Spans []rustSpan `json:"spans"`
}

type cargoMessage struct {
	Reason  string          `json:"reason"`
	Message json.RawMessage `json:"message"`
}

func isRustJSONLine(l string) bool {
	return strings.HasPrefix(l, "{") &&
		(strings.Contains(l, `"$message_type":"diagnostic"`) ||
			strings.Contains(l, `"reason":"compiler-message"`) ||
			strings.Contains(l, `"spans":`) && strings.Contains(l, `"level":`))
}

func detectRustJSON(in *input) bool {
	for _, l := range in.raw {
		if isRustJSONLine(l) {
			return true
		}
	}
	return false
}

func parseRustJSON(in *input, tool string) []item {
	var out []item
	for i, l := range in.raw {
		if !isRustJSONLine(l) {
			continue
		}
		var cm cargoMessage
		if json.Unmarshal([]byte(l), &cm) != nil {
			continue
		}
		body := []byte(l)
		if cm.Reason != "" {
			if cm.Reason != "compiler-message" || len(cm.Message) == 0 {
				continue
			}
			body = cm.Message
		}
		rd := new(rustDiag)
		if json.Unmarshal(body, rd) != nil {
			continue
		}
		if rd.Type != "" && rd.Type != "diagnostic" {
			continue
		}
		d, ok := rustJSONDiag(in, rd, tool)
		if ok {
			out = append(out, item{d: d, pos: i})
		}
	}
	return out
}

func rustJSONDiag(in *input, rd *rustDiag, tool string) (topics.Diagnostic, bool) {
	d := topics.Diagnostic{Tool: tool, Message: rd.Message}
	switch {
	case strings.HasPrefix(rd.Level, "error"):
		d.Severity = SeverityError
	case rd.Level == "warning":
		d.Severity = SeverityWarning
	case rd.Level == "note" || rd.Level == "help":
		d.Severity = SeverityNote
	default: // failure-note: "Some errors have detailed explanations"
		return d, false
	}
	if strings.HasPrefix(rd.Message, "aborting due to") ||
		strings.HasSuffix(rd.Message, "warning emitted") || strings.HasSuffix(rd.Message, "warnings emitted") {
		return d, false
	}
	if rd.Code != nil {
		d.Code = rd.Code.Code
	}
	var sp *rustSpan
	for k := range rd.Spans {
		if rd.Spans[k].IsPrimary {
			sp = &rd.Spans[k]
			break
		}
	}
	if sp == nil && len(rd.Spans) > 0 {
		sp = &rd.Spans[0]
	}
	// A span inside a macro defined elsewhere (the standard library,
	// "<println macros>") is reported where the macro was called.
	for sp != nil && sp.Expansion != nil && !inWorkspace(in.root, sp.FileName) {
		sp = &sp.Expansion.Span
	}
	if sp != nil {
		d.File, d.Line, d.Column = sp.FileName, sp.LineStart, sp.ColumnStart
	}
	return d, true
}

// inWorkspace reports whether a file name is relative (and not "../")
// or under root.
func inWorkspace(root, f string) bool {
	r := RelPath(root, f)
	return r != "" && !strings.HasPrefix(r, "<") && !path.IsAbs(r) && !strings.HasPrefix(r, "../")
}
