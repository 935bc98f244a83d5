package stages

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/murphy-rl/murphy/internal/dataset"
	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/pipeline/pipelinetest"
	"github.com/murphy-rl/murphy/sandbox"
	"github.com/murphy-rl/murphy/stages/emit"
	"github.com/murphy-rl/murphy/tasks"
	"github.com/murphy-rl/murphy/tasks/builtin"
	"github.com/murphy-rl/murphy/tasks/submit"
	"github.com/murphy-rl/murphy/topics"
)

// TestMain runs the stage process of the suite's restart cases
// (pipelinetest.StageMain) or the package's tests.
func TestMain(m *testing.M) { pipelinetest.StageMain(m, suiteRunner) }

// Reference-run shape: three python-function tasks, G=2, one turn.
const (
	suiteTasks = 3
	suiteG     = 2
)

// suiteConfigs are the stages' configurations in the suite, in the
// reference run and alone on cat: the defaults, with a small sandbox pool,
// no cap on trees in flight (a stage run alone has no credit stage to
// complete them) and emit flushing small batches quickly, to the topic and
// to IPC and Parquet files in emitDir(cat).
func suiteConfigs(cat topics.Catalog) Configs {
	c := DefaultConfigs()
	c.Generate.InstanceID = "suite"
	c.Generate.MaxTreesInFlight = 0
	c.Execute.Sandbox.Workers = 2
	c.Emit.Dir, c.Emit.Formats = emitDir(cat), []string{emit.FormatIPC, emit.FormatParquet}
	c.Emit.MaxRows, c.Emit.MaxAge, c.Emit.TickInterval = 3, 300*time.Millisecond, 100*time.Millisecond
	c.Emit.FileMaxAge = 500 * time.Millisecond
	return c
}

// emitDir is where emit writes its files on cat: the test process and the
// stage's own process agree on it.
func emitDir(cat topics.Catalog) string {
	return filepath.Join(os.TempDir(), "murphy-suite-"+strings.TrimSuffix(cat.Prefix, "."))
}

// suiteRunner runs the named stages (a comma-separated list) on the
// runtime, as `murphy stage` does, from the registry's descriptors.
func suiteRunner(names string) (pipelinetest.StageRunner, error) {
	list := strings.Split(names, ",")
	for _, n := range list {
		if _, err := Get(n); err != nil {
			return nil, err
		}
	}
	return func(ctx context.Context, kc pipeline.KafkaConfig, cat topics.Catalog) error {
		rt, err := pipeline.NewRuntime(pipeline.RuntimeConfig{Kafka: kc, Catalog: cat, Name: "suite-" + strings.Join(list, "-"),
			GroupPrefix: cat.Prefix, ShutdownTimeout: 20 * time.Second,
			Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
		if err != nil {
			return err
		}
		table := pipeline.NewTable(kc, cat.Topic(topics.Tasks), 64)
		defer table.Close()
		release, err := Add(ctx, Wiring{Runtime: rt, Kafka: kc, Catalog: cat,
			Lookup:  func() tasks.Lookup { return tasks.FromTable(table, pipeline.ErrNotFound) },
			Configs: suiteConfigs(cat)}, list)
		defer release()
		if err != nil {
			return err
		}
		if err := rt.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
		return nil
	}, nil
}

// TestStageSuite runs the shared stage suite (pipelinetest.RunStageSuite:
// delivery, DLQ, kill -9 and restart, duplicate inputs) for every stage of
// the registry, on the real broker. Each stage's inputs and expected output
// come from one reference run of all five stages on the broker.
func TestStageSuite(t *testing.T) {
	brokers := pipelinetest.Brokers(t)
	requireSandbox(t)
	ref := referenceRun(t, brokers)
	for _, d := range All() {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			pipelinetest.RunStageSuite(t, stageCase(t, d, ref))
		})
	}
}

// requireSandbox skips where execute's sandbox cannot run (not root, no
// bubblewrap); in CI it fails instead.
func requireSandbox(t *testing.T) {
	t.Helper()
	var why string
	if os.Geteuid() != 0 {
		why = "the sandbox pool needs root"
	} else if _, err := exec.LookPath(sandbox.DefaultConfig().Bwrap); err != nil {
		why = "bubblewrap not installed (apt-get install -y bubblewrap)"
	}
	switch {
	case why != "" && os.Getenv("CI") != "":
		t.Fatal(why)
	case why != "":
		t.Skip(why)
	}
}

// reference is what the reference run left on each topic.
type reference map[topics.Name][]pipeline.Record

// referenceRun publishes the tasks and root prompts and runs all five
// stages in this process until every tree is in a batch.
func referenceRun(t *testing.T, brokers []string) reference {
	t.Helper()
	all, err := builtin.Tasks()
	if err != nil {
		t.Fatal(err)
	}
	var ts []topics.Task
	for _, tk := range all {
		if tk.Kind == topics.KindPythonFunction && len(ts) < suiteTasks {
			ts = append(ts, tk)
		}
	}
	cat := pipelinetest.Catalog(t, brokers, 3)
	t.Cleanup(func() { _ = os.RemoveAll(emitDir(cat)) })
	kc := pipelinetest.Kafka(brokers)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	prod := pipeline.NewProducer(kc)
	defer prod.Close()
	sc := submit.DefaultConfig()
	sc.RunID, sc.GroupSize, sc.TreesPerTask, sc.MaxTurns = pipelinetest.Unique(t), suiteG, 1, 1
	if _, err := submit.Publish(ctx, prod, cat, sc, ts, 0); err != nil {
		t.Fatal(err)
	}
	run, err := suiteRunner(strings.Join(Names(), ","))
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- run(runCtx, kc, cat) }()
	rows := suiteTasks * suiteG
	deadline := time.Now().Add(2 * time.Minute)
	for {
		n := 0
		for _, r := range readTopic(t, kc, cat.Topic(topics.Batches)) {
			items, err := batchItems(r)
			if err != nil {
				t.Fatal(err)
			}
			n += len(items)
		}
		if n >= rows {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("reference run: %d of %d rows in batches after 2m", n, rows)
		}
		time.Sleep(300 * time.Millisecond)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("reference run: %v", err)
	}
	ref := reference{}
	for _, n := range []topics.Name{topics.Tasks, topics.Prompts, topics.Candidates, topics.Executions, topics.Samples, topics.Credited, topics.Batches} {
		ref[n] = readTopic(t, kc, cat.Topic(n))
	}
	if dl := readTopic(t, kc, cat.Topic(topics.DLQ)); len(dl) != 0 {
		t.Fatalf("reference run dead-lettered %d records", len(dl))
	}
	return ref
}

// readTopic reads every record of topic, partition by partition.
func readTopic(t *testing.T, kc pipeline.KafkaConfig, topic string) []pipeline.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := pipeline.Partitions(ctx, kc, topic)
	if err != nil {
		t.Fatal(err)
	}
	var out []pipeline.Record
	for q := range n {
		_, end, err := pipeline.PartitionBounds(ctx, kc, topic, q)
		if err != nil {
			t.Fatal(err)
		}
		if err := pipeline.ReadRange(ctx, kc, topic, q, 0, end, func(r pipeline.Record) error {
			out = append(out, r)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// stageCase is the suite's case for stage d: its inputs and main output
// from the reference run, its runner from the registry.
func stageCase(t *testing.T, d Descriptor, ref reference) pipelinetest.StageCase {
	t.Helper()
	run, err := suiteRunner(d.Name)
	if err != nil {
		t.Fatal(err)
	}
	c := pipelinetest.StageCase{Name: d.Name, Run: run, Output: d.Outputs[0], Identify: identify(d.Outputs[0])}
	if c.Identify == nil {
		t.Fatalf("stage %s: no items defined for its output %s", d.Name, d.Outputs[0])
	}
	if slices.Contains(d.Reads, topics.Tasks) {
		c.Setup = recs(topics.Tasks, ref[topics.Tasks])
	}
	for _, in := range d.Inputs {
		c.Inputs = append(c.Inputs, recs(in, ref[in])...)
	}
	// Inputs by key, so that the first half of them holds whole trees: the
	// restart case sees output before it kills the stage.
	sort.SliceStable(c.Inputs, func(i, j int) bool { return c.Inputs[i].Key < c.Inputs[j].Key })
	for _, r := range ref[d.Outputs[0]] {
		items, err := c.Identify(r)
		if err != nil {
			t.Fatal(err)
		}
		c.Want = append(c.Want, items...)
	}
	switch d.Name {
	case "credit":
		c.Stateful = true
	case "emit":
		c.Stateful = true
		c.Check = checkEmit
	}
	return c
}

func recs(name topics.Name, rs []pipeline.Record) []pipelinetest.Rec {
	out := make([]pipelinetest.Rec, len(rs))
	for i, r := range rs {
		out[i] = pipelinetest.Rec{Topic: name, Key: string(r.Key), Value: r.Value}
	}
	return out
}

// identify returns how the suite reads items from the records of topic:
// one item per node (candidates, executions, samples, rows of a batch) or
// per tree (credited trees), with the content that is the same in any run
// of the same inputs (no timestamps, durations or feedback text).
func identify(topic topics.Name) func(pipeline.Record) ([]pipelinetest.Item, error) {
	one := func(r pipeline.Record, id, digest string) []pipelinetest.Item {
		return []pipelinetest.Item{{ID: id, Key: string(r.Key), Digest: digest}}
	}
	switch topic {
	case topics.Candidates:
		return func(r pipeline.Record) ([]pipelinetest.Item, error) {
			var c topics.Candidate
			if err := topics.Decode(r.Value, &c); err != nil {
				return nil, err
			}
			return one(r, c.NodeID, fmt.Sprintf("tree=%s group=%s index=%d code=%q infra=%q", c.TreeID, c.GroupID, c.Index, c.Code, c.InfraCause)), nil
		}
	case topics.Executions:
		return func(r pipeline.Record) ([]pipelinetest.Item, error) {
			var e topics.Execution
			if err := topics.Decode(r.Value, &e); err != nil {
				return nil, err
			}
			return one(r, e.NodeID, fmt.Sprintf("tree=%s status=%s passed=%d/%d", e.TreeID, e.Status, e.TestsPassed, e.TestsTotal)), nil
		}
	case topics.Samples:
		return func(r pipeline.Record) ([]pipelinetest.Item, error) {
			var s topics.Sample
			if err := topics.Decode(r.Value, &s); err != nil {
				return nil, err
			}
			return one(r, s.NodeID, fmt.Sprintf("tree=%s status=%s route=%s cause=%s reward=%g children=%d",
				s.TreeID, s.Status, s.Route, s.FailureCause, s.Reward, s.ChildrenRequested)), nil
		}
	case topics.Credited:
		return func(r pipeline.Record) ([]pipelinetest.Item, error) {
			var ct topics.CreditedTree
			if err := topics.Decode(r.Value, &ct); err != nil {
				return nil, err
			}
			var b strings.Builder
			fmt.Fprintf(&b, "incomplete=%v pruned=%d", ct.Incomplete, ct.PrunedNodes)
			ss := slices.Clone(ct.Samples)
			sort.Slice(ss, func(i, j int) bool { return ss[i].NodeID < ss[j].NodeID })
			for _, s := range ss {
				fmt.Fprintf(&b, " %s:%g/%g", s.NodeID, s.CreditedReward, s.Advantage)
			}
			return one(r, ct.TreeID, b.String()), nil
		}
	case topics.Batches:
		return batchItems
	}
	return nil
}

// batchItems are the rows of one Arrow batch, by node id.
func batchItems(r pipeline.Record) ([]pipelinetest.Item, error) {
	rec, err := emit.DecodeStream(memory.DefaultAllocator, r.Value)
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	col := func(name string) (arrow.Array, error) {
		idx := rec.Schema().FieldIndices(name)
		if len(idx) != 1 {
			return nil, fmt.Errorf("batch without column %s", name)
		}
		return rec.Column(idx[0]), nil
	}
	str := func(name string, i int) (string, error) {
		a, err := col(name)
		if err != nil {
			return "", err
		}
		switch a := a.(type) {
		case *array.String:
			return a.Value(i), nil
		case *array.Dictionary:
			return a.Dictionary().(*array.String).Value(a.GetValueIndex(i)), nil
		}
		return "", fmt.Errorf("column %s is %T", name, a)
	}
	f64 := func(name string, i int) (float64, error) {
		a, err := col(name)
		if err != nil {
			return 0, err
		}
		f, ok := a.(*array.Float64)
		if !ok {
			return 0, fmt.Errorf("column %s is %T", name, a)
		}
		return f.Value(i), nil
	}
	items := make([]pipelinetest.Item, 0, rec.NumRows())
	for i := range int(rec.NumRows()) {
		var tree, node string
		var reward, adv float64
		for _, e := range []error{
			func() (err error) { tree, err = str("tree_id", i); return }(),
			func() (err error) { node, err = str("node_id", i); return }(),
			func() (err error) { reward, err = f64("credited_reward", i); return }(),
			func() (err error) { adv, err = f64("advantage", i); return }(),
		} {
			if e != nil {
				return nil, e
			}
		}
		items = append(items, pipelinetest.Item{ID: node, // the key names the batch's source partition, not the row
			Digest: "tree=" + tree + " credited=" + strconv.FormatFloat(reward, 'g', -1, 64) + " advantage=" + strconv.FormatFloat(adv, 'g', -1, 64)})
	}
	return items, nil
}

// checkEmit checks what emit promises beyond its topic: every batch once
// (no batch id twice), every row of the topic once in the complete files of
// each format, and, after the restart, trainers reading the topic (two
// consumer groups each see every batch; two ranks of a third see disjoint
// sets whose union is everything).
func checkEmit(t *testing.T, run pipelinetest.CaseRun) {
	t.Helper()
	dir := emitDir(run.Catalog)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	var ids []string
	rows := map[string]int{}
	for _, r := range run.Output {
		id := r.Headers[emit.HeaderBatchID]
		if id == "" || slices.Contains(ids, id) {
			t.Fatalf("batch id %q missing or produced twice", id)
		}
		ids = append(ids, id)
		items, err := batchItems(r)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			rows[it.ID]++
		}
	}
	for _, ext := range []string{".arrow", ".parquet"} {
		var got map[string]int
		deadline := time.Now().Add(time.Minute)
		for {
			got = fileRows(t, dir, ext)
			if len(got) >= len(rows) || time.Now().After(deadline) {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		for id := range rows {
			if got[id] != 1 {
				t.Errorf("%s files: row %s appears %d times, want once", ext, id, got[id])
			}
		}
		if len(got) != len(rows) {
			t.Errorf("%s files: %d distinct rows, the topic has %d", ext, len(got), len(rows))
		}
	}
	if run.Case == "restart" && !t.Failed() {
		checkTrainers(t, run.Kafka.Brokers, run.Catalog.Topic(topics.Batches), ids)
	}
}

// fileRows counts the rows of the complete files of dir with extension ext
// by node id.
func fileRows(t *testing.T, dir, ext string) map[string]int {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*"+ext))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, f := range files {
		rows, err := dataset.ReadFile(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, r := range rows {
			id, _ := r["node_id"].(string)
			got[id]++
		}
	}
	return got
}

// checkTrainers runs python/tests/check_trainers.py against the topic
// (skipped without python3, pyarrow and confluent-kafka, except in CI).
func checkTrainers(t *testing.T, brokers []string, topic string, ids []string) {
	t.Helper()
	required := os.Getenv("CI") != "" || os.Getenv("MURPHY_REQUIRE_PYTHON") == "1"
	py, err := exec.LookPath("python3")
	if err == nil {
		err = exec.Command(py, "-c", "import pyarrow, numpy, confluent_kafka").Run()
	}
	if err != nil {
		if required {
			t.Fatalf("python3 with pyarrow and confluent-kafka is required here (run python/install-test-deps.sh): %v", err)
		}
		t.Skipf("python3 with pyarrow and confluent-kafka not available: %v", err)
	}
	f := filepath.Join(t.TempDir(), "ids.json")
	b, _ := json.Marshal(ids)
	if err := os.WriteFile(f, b, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, py, filepath.Join("..", "python", "tests", "check_trainers.py"),
		strings.Join(brokers, ","), topic, f).CombinedOutput()
	t.Logf("trainers:\n%s", out)
	if err != nil || !strings.Contains(string(out), "OK") {
		t.Fatalf("trainer check failed: %v", err)
	}
}
