package govern

import (
	"strings"
	"testing"

	"github.com/murphy-rl/murphy/topics"
)

// TestAlignStepsOwnOutput: a step's text is its action and its own tool
// output (the rendering of episode.RenderAction and RenderToolOutput), not
// the previous step's output; the recorded steps give the actions their
// roles and whether the tool refused them.
func TestAlignStepsOwnOutput(t *testing.T) {
	read := `<tool_call>{"name":"read_file","arguments":{"path":"a.c"}}</tool_call>`
	build := "I build.\n" + `<tool_call>{"name":"build","arguments":{}}</tool_call>`
	submit := `<tool_call>{"name":"submit","arguments":{}}</tool_call>`
	out1 := "\n<tool_response>\n1 int x;\n</tool_response>\n"
	out2 := "\n<tool_response>\nbuild failed:\na.c:1: expected ';'\n</tool_response>\n"
	text := read + out1 + build + out2 + submit
	c := &topics.Candidate{ResponseText: text, ResponseTokenIDs: make([]int32, 30), StepEnds: []int{10, 20, 30},
		ToolSteps: []topics.ToolStep{
			{Tool: "read_file", Role: topics.ToolRoleRead, ActionStart: 0, ActionEnd: 5, End: 10, Output: "1 int x;\n"},
			{Tool: "build", Role: topics.ToolRoleVerify, ActionStart: 10, ActionEnd: 15, End: 20, Output: "build failed:\na.c:1: expected ';'\n"},
			{Tool: "submit", Role: topics.ToolRoleSubmit, ActionStart: 20, ActionEnd: 30, End: 30},
		}}
	steps, aligned := alignSteps(c)
	if !aligned || len(steps) != 3 {
		t.Fatalf("aligned %v, %d steps", aligned, len(steps))
	}
	for i, want := range []string{read + out1, build + out2, submit} {
		if steps[i].Text != want {
			t.Errorf("step %d text %q, want %q", i, steps[i].Text, want)
		}
	}
	if !strings.Contains(steps[1].Text, "expected ';'") || strings.Contains(steps[2].Text, "expected") {
		t.Error("the build's output is not under the build")
	}
	if a := steps[1].Action; a == nil || a.Role != topics.ToolRoleVerify || a.Failed {
		t.Errorf("build action %+v", a)
	}
}
