package backfill

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/backfill/inject"
	"github.com/murphy-rl/murphy/compilefix/diag"
	"github.com/murphy-rl/murphy/tasks"
	"github.com/murphy-rl/murphy/topics"
)

type injectRepo struct {
	name, file, lang string
	build            []string
	count            int
}

func injectRepos() []injectRepo {
	return []injectRepo{
		{name: "cJSON", file: "cJSON.tar.gz", lang: "c", build: []string{"make"}, count: 4},
		{name: "google-uuid", file: "google-uuid.bundle", lang: "go", build: []string{"go", "build", "./..."}, count: 4},
		{name: "more-itertools", file: "more-itertools.tar.gz", lang: "python", build: []string{"python3", "-m", "compileall", "-q", "more_itertools"}, count: 3},
	}
}

// TestInjectRealRepos plants errors in the three reference repositories
// (an archive, a bundle at HEAD, an archive; the language detected from
// the files) and checks every kept task the way execute will grade it:
// its snapshot's build fails at the mutated file, the reference patch
// passes with every target fixed, a patch elsewhere does not; the tasks
// are distinct operators' and survive tasks.Load.
func TestInjectRealRepos(t *testing.T) {
	b := sandboxBuilder(t)
	for _, r := range injectRepos() {
		t.Run(r.name, func(t *testing.T) {
			start := time.Now()
			it := Item{Kind: KindInject, Repo: repoPath(t, r.file), Build: r.build, Count: r.count, Seed: 7}
			res, err := b.BuildItem(context.Background(), it)
			if err != nil {
				t.Fatal(err)
			}
			for _, rj := range res.Rejected {
				t.Logf("rejected %s: %s", rj.Reason, rj.Detail)
			}
			if len(res.Tasks) != r.count {
				t.Fatalf("%d tasks, want %d", len(res.Tasks), r.count)
			}
			if len(res.Provenance) != len(res.Tasks) {
				t.Fatalf("%d provenance records for %d tasks", len(res.Provenance), len(res.Tasks))
			}
			ops := map[string]bool{}
			for i, task := range res.Tasks {
				p := res.Provenance[i]
				ops[p.Operator] = true
				checkInjected(t, b, &task, p, r.lang)
			}
			if len(ops) < min(r.count, 3) {
				t.Errorf("operators %v: want distinct ones (round robin)", ops)
			}
			roundTrip(t, res.Tasks)
			t.Logf("%s: %d tasks, %d rejected, operators %v, %s", r.name, len(res.Tasks), len(res.Rejected), keys(ops), time.Since(start).Round(time.Millisecond))
		})
	}
}

func checkInjected(t *testing.T, b *Builder, task *topics.Task, p Provenance, lang string) {
	t.Helper()
	if err := task.Validate(); err != nil {
		t.Fatal(err)
	}
	cf := task.CompileFix
	if task.Kind != topics.KindCompileFix || task.Language != lang || task.Source != SourceInject || task.ReferencePatch == "" || len(cf.Targets) == 0 {
		t.Fatalf("task %s: kind %s language %s source %s, %d targets", task.TaskID, task.Kind, task.Language, task.Source, len(cf.Targets))
	}
	if !strings.HasPrefix(task.TaskID, "backfill/") || !strings.Contains(task.TaskID, p.Operator+"-") {
		t.Errorf("task id %q does not name its operator %s", task.TaskID, p.Operator)
	}
	if !strings.Contains(task.ReferencePatch, "diff --git a/"+p.File+" b/"+p.File) {
		t.Errorf("reference patch of %s does not repair %s:\n%s", task.TaskID, p.File, task.ReferencePatch)
	}
	atFile := false
	for _, d := range cf.Targets {
		atFile = atFile || d.File == p.File
	}
	if !atFile {
		t.Errorf("%s: no target at the mutated file %s: %v", task.TaskID, p.File, cf.Targets)
	}
	if !strings.Contains(task.Prompt, p.File) {
		t.Errorf("%s: the prompt does not name %s:\n%s", task.TaskID, p.File, task.Prompt)
	}
	ctx := context.Background()
	base, err := b.Verify.Baseline(ctx, task)
	if err != nil {
		t.Fatal(err)
	}
	if base.OK {
		t.Errorf("%s: the snapshot builds", task.TaskID)
	}
	out, err := b.Verify.Evaluate(ctx, task, task.ReferencePatch, topics.DefaultFeedbackBytes)
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != topics.StatusPassed || out.TargetsFixed != out.TargetsTotal {
		t.Errorf("%s: reference %s, %d/%d targets fixed:\n%s", task.TaskID, out.Status, out.TargetsFixed, out.TargetsTotal, out.Feedback)
	}
	// Something that is not the repair does not pass.
	if out, err := b.Verify.Evaluate(ctx, task, "not a diff\n", topics.DefaultFeedbackBytes); err != nil || out.Status == topics.StatusPassed {
		t.Errorf("%s: a non-patch passes (%s, %v)", task.TaskID, out.Status, err)
	}
	if len(near(diag.Errors(base.Diagnostics), &inject.Mutation{File: p.File})) == 0 {
		t.Errorf("%s: the baseline has no error at %s", task.TaskID, p.File)
	}
}

// roundTrip writes tasks as the native JSONL and loads them back.
func roundTrip(t *testing.T, ts []topics.Task) {
	t.Helper()
	var buf bytes.Buffer
	for _, task := range ts {
		line, err := json.Marshal(task)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(append(line, '\n'))
	}
	p := filepath.Join(t.TempDir(), "tasks.jsonl")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	back, lerrs, err := tasks.Load(p, "")
	if err != nil || len(lerrs) > 0 || len(back) != len(ts) {
		t.Fatalf("tasks.Load: %d of %d tasks, line errors %v, %v", len(back), len(ts), lerrs, err)
	}
	for i := range back {
		if back[i].TaskID != ts[i].TaskID || back[i].ReferencePatch != ts[i].ReferencePatch || back[i].CompileFix.Workspace != ts[i].CompileFix.Workspace {
			t.Errorf("task %d changed on the way back", i)
		}
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestInjectDeterministic builds the same item twice: the same seed gives
// the same tasks (ids, patches, snapshots) in the same order; identical
// patches are never kept twice.
func TestInjectDeterministic(t *testing.T) {
	b := sandboxBuilder(t)
	it := Item{Kind: KindInject, Repo: repoPath(t, "more-itertools.tar.gz"), Language: "python",
		Build: []string{"python3", "-m", "compileall", "-q", "more_itertools"}, Count: 3, Seed: 42}
	var runs [2]*Result
	for i := range runs {
		res, err := b.BuildItem(context.Background(), it)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Tasks) == 0 {
			t.Fatalf("run %d: no task (rejected: %+v)", i, res.Rejected)
		}
		runs[i] = res
	}
	if len(runs[0].Tasks) != len(runs[1].Tasks) {
		t.Fatalf("%d tasks, then %d", len(runs[0].Tasks), len(runs[1].Tasks))
	}
	seen := map[string]bool{}
	for i := range runs[0].Tasks {
		a, c := runs[0].Tasks[i], runs[1].Tasks[i]
		if a.TaskID != c.TaskID || a.ReferencePatch != c.ReferencePatch || a.CompileFix.Workspace != c.CompileFix.Workspace {
			t.Errorf("task %d: %s then %s", i, a.TaskID, c.TaskID)
		}
		if seen[a.ReferencePatch] {
			t.Errorf("task %d repeats a kept patch", i)
		}
		seen[a.ReferencePatch] = true
	}
}
