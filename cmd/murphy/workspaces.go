package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/murphy-rl/murphy/compilefix/workspace"
	"github.com/murphy-rl/murphy/tasks/builtin"
	"github.com/murphy-rl/murphy/topics"
)

// builtinTaskSet names the built-in tasks in --tasks.
const builtinTaskSet = "builtin"

// taskKinds lists the task kinds, in the order --kinds documents them.
func taskKinds() []string {
	return []string{topics.KindPythonFunction, topics.KindStdio, topics.KindCompileFix}
}

// quickStart is murphy run's default set: the python-function and stdio
// tasks of ts and one compile-fix task of each language, the first without
// a tests command where there is one (its builds alone decide it, the
// quickest to warm), so that a first run shows every kind and language in
// about a minute (--tasks builtin runs all of them).
func quickStart(ts []topics.Task) []topics.Task {
	pick := map[string]int{}
	for i, t := range ts {
		if t.Kind != topics.KindCompileFix {
			continue
		}
		lang := t.TaskLanguage()
		j, ok := pick[lang]
		if !ok || (len(ts[j].CompileFix.Tests) > 0 && len(t.CompileFix.Tests) == 0) {
			pick[lang] = i
		}
	}
	out := ts[:0:0]
	for i, t := range ts {
		if t.Kind != topics.KindCompileFix || pick[t.TaskLanguage()] == i {
			out = append(out, t)
		}
	}
	return out
}

// allBuiltinTasks is the built-in set: python-function and stdio tasks,
// then the compile-fix tasks.
func allBuiltinTasks() ([]topics.Task, error) {
	ts, err := builtin.Tasks()
	if err != nil {
		return nil, err
	}
	cf, err := builtin.CompileFixTasks()
	if err != nil {
		return nil, err
	}
	return append(ts, cf...), nil
}

// selectKinds keeps the tasks of the given kinds (all of them when kinds
// is empty); an unknown kind is an error.
func selectKinds(ts []topics.Task, kinds []string) ([]topics.Task, error) {
	if len(kinds) == 0 {
		return ts, nil
	}
	for _, k := range kinds {
		if !slices.Contains(taskKinds(), k) {
			return nil, fmt.Errorf("unknown task kind %q (want %s)", k, strings.Join(taskKinds(), ", "))
		}
	}
	out := ts[:0:0]
	for _, t := range ts {
		if slices.Contains(kinds, t.Kind) {
			out = append(out, t)
		}
	}
	return out, nil
}

func hasKind(ts []topics.Task, kind string) bool {
	return slices.ContainsFunc(ts, func(t topics.Task) bool { return t.Kind == kind })
}

// builtinStore makes sure the built-in compile-fix snapshots are in the
// workspace store at url; with url empty it makes a temporary directory
// store (removed by cleanup) and returns its path.
func builtinStore(ctx context.Context, url string) (string, func(), error) {
	cleanup := func() {}
	if url == "" {
		dir, err := os.MkdirTemp("", "murphy-store-")
		if err != nil {
			return "", nil, err
		}
		url, cleanup = dir, func() { _ = os.RemoveAll(dir) }
	}
	snaps, err := builtin.CompileFixSnapshots()
	if err != nil {
		cleanup()
		return "", nil, err
	}
	store, err := workspace.OpenStore(ctx, url)
	if err != nil {
		cleanup()
		return "", nil, err
	}
	defer store.Close()
	for digest, tarball := range snaps {
		if err := store.Put(ctx, digest, tarball); err != nil {
			cleanup()
			return "", nil, fmt.Errorf("workspace store %s: %w", url, err)
		}
	}
	return url, cleanup, nil
}
