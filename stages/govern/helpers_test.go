package govern

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/topics"
)

var fixedNow = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func clock() time.Time { return fixedNow }

// memTasks is an in-memory TaskLookup.
type memTasks struct {
	mu    sync.Mutex
	tasks map[string]*topics.Task
	err   error // returned for every lookup when set
	calls int
}

func (m *memTasks) Task(_ context.Context, id string) (*topics.Task, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	if m.err != nil {
		return nil, m.err
	}
	t, ok := m.tasks[id]
	if !ok {
		return nil, fmt.Errorf("lookup %q: %w", id, ErrTaskNotFound)
	}
	return t, nil
}

func testTask() *topics.Task {
	return &topics.Task{
		SchemaVersion: topics.SchemaVersion,
		TaskID:        "t1",
		Kind:          topics.KindPythonFunction,
		Prompt:        "def add(a, b):\n    \"\"\"Return the sum of a and b.\"\"\"\n",
		EntryPoint:    "add",
		Reference:     "def add(a, b):\n    return a + b\n",
		Tests: []topics.TestCase{
			{Args: "1, 2", Expected: "3"}, {Args: "0, 0", Expected: "0"},
			{Args: "-1, 1", Expected: "0"}, {Args: "5, 5", Expected: "10", Hidden: true},
		},
	}
}

func tasksWith(ts ...*topics.Task) *memTasks {
	m := &memTasks{tasks: map[string]*topics.Task{}}
	for _, t := range ts {
		m.tasks[t.TaskID] = t
	}
	return m
}

func treeSpec() topics.TreeSpec {
	return topics.TreeSpec{MaxTurns: 3, GroupSizes: []int{4, 2}, RunID: "run", Seed: 1}
}

// execution is a valid passing turn-1 execution of task t1; muts adjust it.
func execution(muts ...func(*topics.Execution)) *topics.Execution {
	tree := topics.TreeID("run", "t1", 0)
	ex := &topics.Execution{
		Candidate: topics.Candidate{
			SchemaVersion: topics.SchemaVersion,
			TreeSpec:      treeSpec(),
			TreeID:        tree, TaskID: "t1",
			GroupID: topics.RootID(tree), Turn: 1, Index: 1, GroupSize: 4,
			PromptText:   "def add(a, b):",
			ResponseText: "```python\ndef add(a, b):\n    return a + b\n```",
			Code:         "def add(a, b):\n    return a + b\n",
			FinishReason: "stop", Policy: "simulated", PolicyVersion: 1,
			GeneratedAt: fixedNow,
		},
		Status: topics.StatusPassed, TestsPassed: 4, TestsTotal: 4, PassRate: 1,
		Feedback: "passed 4/4", ExecutedAt: fixedNow,
	}
	ex.ResponseTokenIDs = seq(20)
	ex.ResponseLogprobs = make([]float32, 20)
	for _, m := range muts {
		m(ex)
	}
	ex.NodeID = topics.NodeID(ex.TreeID, ex.GroupID, ex.Index)
	return ex
}

// failing makes ex a wrong answer passing passed of 4 tests.
func failing(passed int) func(*topics.Execution) {
	return func(ex *topics.Execution) {
		ex.Status = topics.StatusWrongAnswer
		ex.TestsPassed = passed
		ex.PassRate = float64(passed) / 4
		ex.Code = "def add(a, b):\n    return a - b\n"
		ex.Feedback = "wrong_answer: 1/4 passed\nadd(1, 2): expected 3, got -1"
	}
}

func status(s string) func(*topics.Execution) {
	return func(ex *topics.Execution) { ex.Status = s; ex.TestsPassed = 0; ex.PassRate = 0 }
}

func atTurn(turn int, parent string) func(*topics.Execution) {
	return func(ex *topics.Execution) {
		ex.Turn = turn
		ex.ParentID = parent
		ex.GroupID = parent
		ex.GroupSize = ex.GroupSizeAt(turn)
		ex.Index = 0
	}
}

func seq(n int) []int32 {
	s := make([]int32, n)
	for i := range s {
		s[i] = int32(100 + i)
	}
	return s
}

func newGovernor(t *testing.T, cfg Config, opts ...Option) *Governor {
	t.Helper()
	g, err := NewGovernor(cfg, nil, append([]Option{WithClock(clock)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// jsonMarshal encodes without validation, to build bad records.
func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }
