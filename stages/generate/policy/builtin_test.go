package policy

import (
	"fmt"
	"testing"

	"github.com/murphy-rl/murphy/tasks/builtin"
)

// TestSimulatedCoversBuiltinTasks: every built-in task (python-function and
// stdio) has a reference the simulated policy can sample and mutate in
// several ways, so `murphy run` trees show both passing and failing nodes.
func TestSimulatedCoversBuiltinTasks(t *testing.T) {
	ts, err := builtin.Tasks()
	if err != nil {
		t.Fatal(err)
	}
	pol, err := NewSimulated(DefaultSimulatedConfig())
	if err != nil {
		t.Fatal(err)
	}
	for i := range ts {
		task := &ts[i]
		if task.Reference == "" {
			t.Errorf("%s: no reference", task.TaskID)
			continue
		}
		p := rootPrompt(task, 1)
		kinds := map[string]bool{}
		for k := 0; k < 200; k++ {
			o, code := pol.Choose(p, task, fmt.Sprint("n", k))
			switch {
			case o.Reference:
				kinds["reference"] = true
			case code == stub(task):
				t.Errorf("%s: fell back to a stub", task.TaskID)
			default:
				kinds[string(o.Mutation)] = true
			}
		}
		if len(kinds) < 4 {
			t.Errorf("%s (%s): only %v", task.TaskID, task.Kind, kinds)
		}
	}
}
