package execute

import (
	"fmt"
	"strings"

	"github.com/murphy-rl/murphy/topics"
)

// renderFeedback writes the feedback for the next turn from the templates
// documented in FEEDBACK.md. Only visible tests are ever described; hidden
// ones are counted.
func renderFeedback(task *topics.Task, out *Outcome, rep *report, limit int) string {
	var b strings.Builder
	field := max(limit/4, 64)
	fmt.Fprintf(&b, "Status: %s\n", out.Status)
	if out.Status == topics.StatusSandboxError {
		b.WriteString("The sandbox failed while running the program; this is not a verdict on the program.\n")
		return topics.Truncate(b.String(), limit)
	}
	fmt.Fprintf(&b, "Tests passed: %d/%d\n", out.TestsPassed, out.TestsTotal)
	if rep == nil || out.Status == topics.StatusPassed {
		return topics.Truncate(b.String(), limit)
	}
	switch {
	case rep.compileError != "":
		b.WriteString("The program does not compile:\n")
		b.WriteString(topics.Truncate(strings.TrimRight(rep.compileError, "\n"), 2*field) + "\n")
		return topics.Truncate(b.String(), limit)
	case rep.loadError != nil && rep.loadError.Kind == "import":
		b.WriteString("The program fails to import a module:\n")
		b.WriteString(topics.Truncate(strings.TrimRight(rep.loadError.Traceback, "\n"), 2*field) + "\n")
		return topics.Truncate(b.String(), limit)
	case rep.loadError != nil && task.Kind == topics.KindPythonFunction:
		b.WriteString("The program failed while loading, before any test ran:\n")
		b.WriteString(topics.Truncate(strings.TrimRight(rep.loadError.Traceback, "\n"), 2*field) + "\n")
		return topics.Truncate(b.String(), limit)
	}
	switch out.Status {
	case topics.StatusTimeout:
		fmt.Fprintf(&b, "The program exceeded the time limit of %s.\n", rep.limits.CPU)
	case topics.StatusMemory:
		fmt.Fprintf(&b, "The program exceeded the memory limit of %d MB.\n", rep.limits.MemoryMB)
	case topics.StatusOutputLimit:
		fmt.Fprintf(&b, "The program wrote more than %s of output.\n", topics.ByteSize(rep.limits.OutputBytes))
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
	return topics.Truncate(b.String(), limit)
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
		b.WriteString("Test: assert " + topics.Truncate(tc.Assert, field) + "\n")
	} else {
		fmt.Fprintf(b, "Input: %s(%s)\n", task.EntryPoint, topics.Truncate(tc.Args, field))
		b.WriteString("Expected: " + topics.Truncate(tc.Expected, field) + "\n")
	}
	switch {
	case d.notPlain != "":
		b.WriteString("Actual: " + notPlainText(d.notPlain) + "\n")
	case d.kind == topics.StatusWrongAnswer && tc.Assert == "":
		b.WriteString("Actual: " + topics.Truncate(d.actual, field) + "\n")
	case d.kind == topics.StatusWrongAnswer:
		b.WriteString("Result: the assertion is false\n")
	case d.err != "":
		b.WriteString("Error:\n" + block(d.err, field))
	}
}

func block(s string, n int) string {
	s = topics.Truncate(strings.TrimRight(s, "\n"), n)
	return s + "\n"
}
