package backfill

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/pipeline/pipelinetest"
	"github.com/murphy-rl/murphy/tasks/submit"
	"github.com/murphy-rl/murphy/topics"
)

// fakeBuilder makes Count python-function tasks per item (ids
// bf/<name>/<i>), one rejection and a diagnostic per item; an item named
// "broken*" fails, one named "dup*" makes the tasks of item "a".
type fakeBuilder struct {
	mu    sync.Mutex
	calls map[string]int
}

func (f *fakeBuilder) BuildItem(_ context.Context, it Item) (*Result, error) {
	f.mu.Lock()
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[it.Name]++
	f.mu.Unlock()
	if strings.HasPrefix(it.Name, "broken") {
		return nil, fmt.Errorf("%s: no such file or directory", it.Log)
	}
	name := it.Name
	if strings.HasPrefix(name, "dup") {
		name = "a"
	}
	res := &Result{Diagnostics: map[string]int{"gcc": 2}, Cause: "compile",
		Rejected: []Rejection{{Item: it.Name, Reason: RejectFlaky, Detail: "two builds disagree"}}}
	for i := range it.Count {
		res.Tasks = append(res.Tasks, topics.Task{SchemaVersion: topics.SchemaVersion, TaskID: fmt.Sprintf("bf/%s/%d", name, i),
			Kind: topics.KindPythonFunction, EntryPoint: "add", Prompt: "def add(a, b):\n", Reference: "def add(a, b):\n    return a + b\n",
			Tests: []topics.TestCase{{Args: "1, 2", Expected: "3"}}})
	}
	return res, nil
}

func (f *fakeBuilder) calledFor(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[name]
}

func testManifest() *Manifest {
	it := func(name string, n int) Item {
		return Item{Kind: KindHistory, Name: name, Repo: "repo-" + name, Fail: "f", Fix: "x", Log: name + ".log", Count: n}
	}
	return &Manifest{Items: []Item{it("a", 2), it("broken", 1), it("b", 3), it("c", 1), it("dup", 2), it("a", 2)}}
}

// treesOn reads every record of topic and counts them by key.
func treesOn(t *testing.T, kc pipeline.KafkaConfig, topic string) map[string]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ends, err := endOffsets(ctx, kc, topic)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]int{}
	for p, end := range ends {
		if err := pipeline.ReadRange(ctx, kc, topic, p, 0, end, func(r pipeline.Record) error {
			var pr topics.Prompt
			if topic != "" && strings.HasSuffix(topic, string(topics.BackfillPrompts)) {
				if err := topics.Decode(r.Value, &pr); err != nil || pr.TreeID != string(r.Key) || pr.ParentID != "" {
					return fmt.Errorf("prompt %q: %v", r.Key, err)
				}
			}
			keys[string(r.Key)]++
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// wantTrees are the trees of testManifest with K trees per task: items a
// (2 tasks), b (3), c (1); dup's tasks are a's.
func wantTrees(run string, k int) []string {
	var out []string
	for name, n := range map[string]int{"a": 2, "b": 3, "c": 1} {
		for i := range n {
			for j := range k {
				out = append(out, topics.TreeID(run, fmt.Sprintf("bf/%s/%d", name, i), j))
			}
		}
	}
	return out
}

func checkOnce(t *testing.T, kc pipeline.KafkaConfig, cat topics.Catalog, run string, k int) {
	t.Helper()
	got := treesOn(t, kc, cat.Topic(topics.BackfillPrompts))
	want := wantTrees(run, k)
	for _, tr := range want {
		if got[tr] != 1 {
			t.Errorf("tree %s published %d times, want once", tr, got[tr])
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d trees on the topic, want %d: %v", len(got), len(want), got)
	}
	tasks := treesOn(t, kc, cat.Topic(topics.Tasks))
	if len(tasks) != 6 {
		t.Errorf("%d tasks on the tasks topic, want 6: %v", len(tasks), tasks)
	}
	for id, n := range tasks {
		if n != 1 {
			t.Errorf("task %s published %d times", id, n)
		}
	}
	if p := treesOn(t, kc, cat.Topic(topics.Prompts)); len(p) != 0 {
		t.Errorf("%d records on the live prompts topic", len(p))
	}
}

func jobConfig(t *testing.T, brokers []string, cat topics.Catalog, state string) JobConfig {
	sc := submit.DefaultConfig()
	sc.RunID, sc.GroupSize, sc.TreesPerTask, sc.MaxTurns = "", 4, 2, 2
	return JobConfig{Kafka: pipelinetest.Kafka(brokers), Catalog: cat, Submit: sc, StateDir: state, Concurrency: 2}
}

// Running the job twice publishes every tree once: the second run builds
// nothing and publishes nothing. A failing item is reported, the others go
// on; a task two items build is published once; a duplicate item is built
// once.
func TestJobRunTwiceOnBroker(t *testing.T) {
	brokers := pipelinetest.Brokers(t)
	cat := pipelinetest.Catalog(t, brokers, 3)
	cfg := jobConfig(t, brokers, cat, t.TempDir())
	prod := pipeline.NewProducer(cfg.Kafka)
	defer prod.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := &fakeBuilder{}
	m := testManifest()
	rep, err := Run(ctx, cfg, m, b, prod)
	if err != nil {
		t.Fatal(err)
	}
	logReport(t, rep)
	run := DefaultRunID(m.Items)
	if rep.RunID != run || rep.Items != 5 || rep.DuplicateItems != 1 || rep.Built != 4 || rep.Failed != 1 || len(rep.Errors) != 1 ||
		!strings.Contains(rep.Errors[0].Error, "broken.log") || rep.TasksBuilt != 8 || rep.DuplicateTasks != 2 ||
		rep.TreesPublished != 12 || rep.Rejected[RejectFlaky] != 4 || rep.Diagnostics["gcc"] != 8 || rep.Causes["compile"] != 4 || rep.LogsRead != 4 {
		t.Fatalf("first run: %+v", rep)
	}
	checkOnce(t, cfg.Kafka, cat, run, 2)

	rep, err = Run(ctx, cfg, m, b, prod)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Built != 0 || rep.Resumed != 4 || rep.ItemsDone != 4 || rep.TreesPublished != 0 || rep.TreesDone != 12 || rep.Failed != 1 {
		t.Fatalf("second run: %+v", rep)
	}
	if b.calledFor("a") != 1 || b.calledFor("broken") != 2 {
		t.Fatalf("builder calls %v: a built once, the failed item retried", b.calls)
	}
	checkOnce(t, cfg.Kafka, cat, run, 2)

	// Another shape on the same state is refused.
	cfg.Submit.TreesPerTask = 3
	if _, err := Run(ctx, cfg, m, b, prod); err == nil || !strings.Contains(err.Error(), "K=3") {
		t.Fatalf("changed K on the same state: %v", err)
	}
}

// A job stopped after its records were acknowledged but before it marked
// the item published (a crash) publishes nothing of that item again when
// resumed; one stopped after a partial publication publishes the rest.
func TestJobCrashResumeOnBroker(t *testing.T) {
	brokers := pipelinetest.Brokers(t)
	for _, tc := range []struct {
		name    string
		point   string
		partial bool
	}{{"after-produce", HookProduced, false}, {"partial", HookIntent, true}, {"before-produce", HookIntent, false}} {
		t.Run(tc.name, func(t *testing.T) {
			cat := pipelinetest.Catalog(t, brokers, 3)
			cfg := jobConfig(t, brokers, cat, t.TempDir())
			cfg.Concurrency = 1
			prod := pipeline.NewProducer(cfg.Kafka)
			defer prod.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			m := testManifest()
			run := DefaultRunID(m.Items)
			bKey := m.Items[2].Key()
			crash := errors.New("crash")
			cfg.hook = func(point, key string) error {
				if point != tc.point || key != bKey {
					return nil
				}
				if tc.partial {
					// Half of b's prompts reach the broker, then the crash.
					st, err := openState(cfg.StateDir)
					if err != nil {
						return err
					}
					is, err := st.readItem(key)
					if err != nil {
						return err
					}
					var outs []pipeline.Out
					for _, tr := range is.Trees[:len(is.Trees)/2] {
						// tr is <run>/<task id>/<k>.
						i := strings.LastIndex(tr, "/")
						task := topics.Task{TaskID: strings.TrimPrefix(tr[:i], run+"/")}
						k, _ := strconv.Atoi(tr[i+1:])
						sc := cfg.Submit
						sc.RunID, sc.TreesPerTask = run, k+1
						p := submit.RootPrompts(sc, &task, time.Now())[k]
						if p.TreeID != tr {
							return fmt.Errorf("tree %s, want %s", p.TreeID, tr)
						}
						v, err := topics.Encode(p)
						if err != nil {
							return err
						}
						outs = append(outs, pipeline.Out{Topic: cat.Topic(topics.BackfillPrompts), Key: tr, Value: v})
					}
					if err := prod.Produce(ctx, outs...); err != nil {
						return err
					}
				}
				return crash
			}
			rep, err := Run(ctx, cfg, m, &fakeBuilder{}, prod)
			if !errors.Is(err, crash) {
				t.Fatalf("first run: %v", err)
			}
			if rep.ItemsPublished != 1 {
				t.Fatalf("first run published %d items before the crash, want a's", rep.ItemsPublished)
			}
			cfg.hook = nil
			b := &fakeBuilder{}
			rep, err = Run(ctx, cfg, m, b, prod)
			if err != nil {
				t.Fatal(err)
			}
			logReport(t, rep)
			wantFound := map[string]int{HookProduced: 6, HookIntent: 0}[tc.point]
			if tc.partial {
				wantFound = 3
			}
			if rep.TreesFoundPublished != wantFound || rep.TreesPublished+rep.TreesFoundPublished+rep.TreesDone != 12 || b.calledFor("b") != 0 {
				t.Fatalf("resumed: found %d trees (want %d), %+v, builds %v", rep.TreesFoundPublished, wantFound, rep, b.calls)
			}
			checkOnce(t, cfg.Kafka, cat, run, 2)
		})
	}
}

// The job killed with SIGKILL (in a child process) right after the brokers
// acknowledged an item's records, before it recorded them: the resumed job
// publishes every tree exactly once.
func TestJobKilledOnBroker(t *testing.T) {
	brokers := pipelinetest.Brokers(t)
	cat := pipelinetest.Catalog(t, brokers, 3)
	state := t.TempDir()
	for _, point := range []string{HookProduced, HookIntent} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestJobHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), "BACKFILL_HELPER=1", "BACKFILL_HELPER_PREFIX="+cat.Prefix,
			"BACKFILL_HELPER_STATE="+state, "BACKFILL_HELPER_POINT="+point)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("helper (kill at %s): %v\n%s", point, err, out)
		}
	}
	// Two kills: after b's records were acknowledged, then, resumed, after
	// the read-back of b's records and before producing what was missing.
	cfg := jobConfig(t, brokers, cat, state)
	prod := pipeline.NewProducer(cfg.Kafka)
	defer prod.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m := testManifest()
	rep, err := Run(ctx, cfg, m, &fakeBuilder{}, prod)
	if err != nil {
		t.Fatal(err)
	}
	logReport(t, rep)
	if rep.Trees() != 12 || rep.TreesDone == 0 {
		t.Fatalf("after the kills: %+v", rep)
	}
	checkOnce(t, cfg.Kafka, cat, DefaultRunID(m.Items), 2)
	// Every state file is whole JSON.
	files, _ := filepath.Glob(filepath.Join(state, "items", "*"))
	for _, f := range files {
		if strings.Contains(filepath.Base(f), ".tmp-") {
			continue // a temporary file the kill left: never read
		}
		if _, err := readJSON(f, &itemState{}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestJobHelperProcess is the child of TestJobKilledOnBroker: it runs the
// job and kills itself with SIGKILL at BACKFILL_HELPER_POINT of the first
// item other than a that reaches it.
func TestJobHelperProcess(t *testing.T) {
	if os.Getenv("BACKFILL_HELPER") != "1" {
		t.Skip("helper process")
	}
	brokers := pipelinetest.Brokers(t)
	cat := topics.Catalog{Prefix: os.Getenv("BACKFILL_HELPER_PREFIX"), Partitions: 3}
	cfg := jobConfig(t, brokers, cat, os.Getenv("BACKFILL_HELPER_STATE"))
	cfg.Concurrency = 1
	point := os.Getenv("BACKFILL_HELPER_POINT")
	m := testManifest()
	aKey := m.Items[0].Key()
	cfg.hook = func(p, key string) error {
		if p == point && key != aKey {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			time.Sleep(time.Minute)
		}
		return nil
	}
	prod := pipeline.NewProducer(cfg.Kafka)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := Run(ctx, cfg, m, &fakeBuilder{}, prod)
	t.Fatalf("the job finished without reaching %s: %v", point, err)
}

func logReport(t *testing.T, rep *Report) {
	var sb strings.Builder
	rep.WriteText(&sb)
	t.Log("\n" + sb.String())
}
