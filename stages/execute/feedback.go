package execute

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/murphy-rl/murphy/topics"
)

// DefaultFeedbackBytes is the default cap of the feedback text.
const DefaultFeedbackBytes = 2048

// renderFeedback writes the feedback for the next turn from the templates
// documented in FEEDBACK.md. Only visible tests are ever described; hidden
// ones are counted.
func renderFeedback(task *topics.Task, out *Outcome, rep *report, limit int) string {
	var b strings.Builder
	field := max(limit/4, 64)
	fmt.Fprintf(&b, "Status: %s\n", out.Status)
	if out.Status == topics.StatusSandboxError {
		b.WriteString("The sandbox failed while running the program; this is not a verdict on the program.\n")
		return truncate(b.String(), limit)
	}
	fmt.Fprintf(&b, "Tests passed: %d/%d\n", out.TestsPassed, out.TestsTotal)
	if rep == nil || out.Status == topics.StatusPassed {
		return truncate(b.String(), limit)
	}
	switch {
	case rep.compileError != "":
		b.WriteString("The program does not compile:\n")
		b.WriteString(truncate(strings.TrimRight(rep.compileError, "\n"), 2*field) + "\n")
		return truncate(b.String(), limit)
	case rep.loadError != nil && rep.loadError.Kind == "import":
		b.WriteString("The program fails to import a module:\n")
		b.WriteString(truncate(strings.TrimRight(rep.loadError.Traceback, "\n"), 2*field) + "\n")
		return truncate(b.String(), limit)
	case rep.loadError != nil && task.Kind == topics.KindPythonFunction:
		b.WriteString("The program failed while loading, before any test ran:\n")
		b.WriteString(truncate(strings.TrimRight(rep.loadError.Traceback, "\n"), 2*field) + "\n")
		return truncate(b.String(), limit)
	}
	switch out.Status {
	case topics.StatusTimeout:
		fmt.Fprintf(&b, "The program exceeded the time limit of %s.\n", rep.limits.CPU)
	case topics.StatusMemory:
		fmt.Fprintf(&b, "The program exceeded the memory limit of %d MB.\n", rep.limits.MemoryMB)
	case topics.StatusOutputLimit:
		fmt.Fprintf(&b, "The program wrote more than %s of output.\n", byteSize(rep.limits.OutputBytes))
	}
	var first *detail
	hiddenFail := 0
	for i := range rep.details {
		d := &rep.details[i]
		if d.kind == topics.StatusPassed {
			continue
		}
		if d.c.hidden {
			hiddenFail++
		} else if first == nil {
			first = d
		}
	}
	if first != nil {
		name := "test " + fmt.Sprint(first.c.index+1)
		if first.c.tc != nil && first.c.tc.Name != "" {
			name = first.c.tc.Name
		}
		fmt.Fprintf(&b, "First failing visible test (%s):\n", name)
		writeCase(&b, task, first, field)
	}
	switch {
	case first == nil && hiddenFail > 0:
		fmt.Fprintf(&b, "All visible tests pass; %d hidden test(s) fail.\n", hiddenFail)
	case hiddenFail > 0:
		fmt.Fprintf(&b, "Hidden tests failing: %d.\n", hiddenFail)
	}
	return truncate(b.String(), limit)
}

func writeCase(b *strings.Builder, task *topics.Task, d *detail, field int) {
	tc := d.c.tc
	if task.Kind == topics.KindStdio {
		b.WriteString("Input:\n" + block(tc.Stdin, field))
		b.WriteString("Expected output:\n" + block(tc.Expected, field))
		if d.kind == topics.StatusWrongAnswer || d.stdout != "" {
			b.WriteString("Actual output:\n" + block(d.stdout, field))
		}
		if d.kind != topics.StatusWrongAnswer && d.err != "" {
			b.WriteString("Error:\n" + block(d.err, field))
		}
		return
	}
	if tc.Assert != "" {
		b.WriteString("Test: assert " + truncate(tc.Assert, field) + "\n")
	} else {
		fmt.Fprintf(b, "Input: %s(%s)\n", task.EntryPoint, truncate(tc.Args, field))
		b.WriteString("Expected: " + truncate(tc.Expected, field) + "\n")
	}
	switch {
	case d.notPlain != "":
		b.WriteString("Actual: " + notPlainText(d.notPlain) + "\n")
	case d.kind == topics.StatusWrongAnswer && tc.Assert == "":
		b.WriteString("Actual: " + truncate(d.actual, field) + "\n")
	case d.kind == topics.StatusWrongAnswer:
		b.WriteString("Result: the assertion is false\n")
	case d.err != "":
		b.WriteString("Error:\n" + block(d.err, field))
	}
}

func block(s string, n int) string {
	s = truncate(strings.TrimRight(s, "\n"), n)
	return s + "\n"
}

// truncate keeps the head and the tail of s within n bytes, marking what
// was cut, on UTF-8 boundaries.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// Sized for the largest count it can show, so the result fits in n.
	marker := fmt.Sprintf("\n... [%d bytes omitted] ...\n", len(s))
	if n <= len(marker)+8 {
		return validPrefix(s, n)
	}
	room := n - len(marker)
	head := validPrefix(s, room/2)
	tail := validSuffix(s, room-len(head))
	marker = fmt.Sprintf("\n... [%d bytes omitted] ...\n", len(s)-len(head)-len(tail))
	return head + marker + tail
}

func validPrefix(s string, n int) string {
	if n >= len(s) {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func validSuffix(s string, n int) string {
	if n >= len(s) {
		return s
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return s[i:]
}

// byteSize writes n bytes as people read sizes: 4 MiB, 64 KiB, 100 bytes.
func byteSize(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
