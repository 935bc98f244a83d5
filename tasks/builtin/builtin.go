// Package builtin holds murphy's own task set: original python-function and
// stdio problems, each with a reference solution and visible and hidden
// tests, and compile-fix tasks (small C, Go, Java and Python projects with
// one injected compile error and its reference patch), used by `murphy run`
// when no task file is given.
//
// The python-function and stdio set is stored in the native task format
// (tasks.jsonl, one topics.Task JSON object per line), generated from
// tasks_gen.py; the compile-fix set is one directory per task under
// compilefix/ (compilefix/README.md).
package builtin

//go:generate sh -c "python3 tasks_gen.py > tasks.jsonl"

import (
	"bytes"
	_ "embed"
	"fmt"

	"github.com/murphy-rl/murphy/topics"
)

//go:embed tasks.jsonl
var tasksJSONL []byte

// Tasks decodes and validates the built-in task set. Every call returns a
// fresh slice that the caller may modify.
func Tasks() ([]topics.Task, error) {
	return decodeLines(tasksJSONL)
}

// decodeLines decodes one topics.Task per non-blank line and rejects
// duplicate task ids.
func decodeLines(data []byte) ([]topics.Task, error) {
	var tasks []topics.Task
	seen := make(map[string]int)
	for i, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var t topics.Task
		if err := topics.Decode(line, &t); err != nil {
			return nil, fmt.Errorf("builtin tasks line %d: %w", i+1, err)
		}
		if first, dup := seen[t.TaskID]; dup {
			return nil, fmt.Errorf("builtin tasks line %d: task_id %q already defined on line %d", i+1, t.TaskID, first)
		}
		seen[t.TaskID] = i + 1
		tasks = append(tasks, t)
	}
	if len(tasks) == 0 {
		return nil, fmt.Errorf("builtin tasks: no tasks")
	}
	return tasks, nil
}
