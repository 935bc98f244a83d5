package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/tasks"
	"github.com/murphy-rl/murphy/topics"
)

const sharedData = "../../../shared/data"

// TestBackfillParseJSON checks the contract of `murphy backfill parse
// --json` (DESIGN §4) on real logs, and that a file it cannot read gives an
// error object while the others are still parsed.
func TestBackfillParseJSON(t *testing.T) {
	logs := []string{
		filepath.Join(sharedData, "cilogs/cidiff/astor_1260/fail.log"),
		filepath.Join(sharedData, "cilogs/cidiff/cidiff_11/fail.log"),
	}
	for _, l := range logs {
		if _, err := os.Stat(l); err != nil {
			t.Skip("no CI logs at " + sharedData)
		}
	}
	garbage := filepath.Join(t.TempDir(), "garbage.bin")
	if err := os.WriteFile(garbage, []byte("\x00\x01\x02\x03binary\x00\xff"), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, _, err := runMurphy(t, "backfill", "parse", "--json", logs[0], garbage, logs[1])
	if err == nil {
		t.Fatal("an unreadable file must give a non-zero exit")
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d objects for 3 files:\n%s", len(lines), stdout)
	}
	var objs []map[string]any
	for _, l := range lines {
		var o map[string]any
		if err := json.Unmarshal([]byte(l), &o); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		objs = append(objs, o)
	}
	if objs[1]["file"] != garbage || objs[1]["error"] == nil {
		t.Errorf("garbage: %v", objs[1])
	}
	for i, o := range []map[string]any{objs[0], objs[2]} {
		if o["file"] != logs[i] {
			t.Errorf("file %v, want %s", o["file"], logs[i])
		}
		for _, k := range []string{"ci", "cause", "steps", "diagnostics"} {
			if _, ok := o[k]; !ok {
				t.Errorf("%s: no %q", logs[i], k)
			}
		}
		diags := o["diagnostics"].([]any)
		if len(diags) == 0 {
			t.Fatalf("%s: no diagnostics", logs[i])
		}
		for _, d := range diags {
			dm := d.(map[string]any)
			for _, k := range []string{"tool", "severity", "file", "line", "column", "code", "message", "log_lines"} {
				if _, ok := dm[k]; !ok {
					t.Errorf("%s: diagnostic without %q: %v", logs[i], k, dm)
				}
			}
			ll := dm["log_lines"].([]any)
			if len(ll) != 2 || ll[0].(float64) < 1 || ll[1].(float64) < ll[0].(float64) {
				t.Errorf("log_lines %v", ll)
			}
		}
	}
	if objs[0]["cause"] != "compile" || objs[2]["cause"] != "test" || objs[2]["ci"] != "github-cli" {
		t.Errorf("causes %v %v, ci %v", objs[0]["cause"], objs[2]["cause"], objs[2]["ci"])
	}
}

// TestBackfillTasksSubmitExec runs the commands a user runs: build tasks
// by injection into cJSON, grade their references with murphy exec, then
// publish them twice with backfill submit on the real broker: each tree
// once.
func TestBackfillTasksSubmitExec(t *testing.T) {
	if testing.Short() {
		t.Skip("builds in the sandbox")
	}
	if os.Geteuid() != 0 {
		t.Skip("the build sandbox needs root")
	}
	repo := filepath.Join(sharedData, "repos/cJSON.tar.gz")
	if _, err := os.Stat(repo); err != nil {
		t.Skip("no repositories at " + sharedData)
	}
	dir := t.TempDir()
	store, out := filepath.Join(dir, "ws"), filepath.Join(dir, "tasks.jsonl")
	stdout, stderr, err := runMurphy(t, "backfill", "tasks", "--repo", repo, "--build", "make", "--inject", "2", "--seed", "7",
		"--workspace-store", store, "--out", out, "--build-workers", "2")
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, stdout, stderr)
	}
	ts, lineErrs, err := tasks.Load(out, "")
	if err != nil || len(lineErrs) > 0 || len(ts) != 2 {
		t.Fatalf("tasks: %v %v %d\n%s", err, lineErrs, len(ts), stderr)
	}
	stdout, stderr, err = runMurphy(t, "exec", "--tasks", out, "--reference", "--workspace-store", store)
	if err != nil || strings.Count(stdout, "passed") < 2 {
		t.Fatalf("exec: %v\n%s\n%s", err, stdout, stderr)
	}

	brokers := os.Getenv("MURPHY_KAFKA_BROKERS")
	if brokers == "" {
		t.Skip("MURPHY_KAFKA_BROKERS unset: publishing not tested")
	}
	manifest := filepath.Join(dir, "backfill.yaml")
	abs, _ := filepath.Abs(repo)
	if err := os.WriteFile(manifest, []byte("- kind: inject\n  repo: "+abs+"\n  build: [make]\n  count: 2\n  seed: 7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	prefix := "bfcli" + time.Now().Format("150405.000000") + "."
	state := filepath.Join(dir, "state")
	args := []string{"backfill", "submit", "--manifest", manifest, "--state", state, "--brokers", brokers, "--topic-prefix", prefix,
		"--workspace-store", store, "-g", "2", "-k", "2", "--no-progress", "--json"}
	for run := 0; run < 2; run++ {
		stdout, stderr, err = runMurphy(t, args...)
		if err != nil {
			t.Fatalf("submit run %d: %v\n%s\n%s", run, err, stdout, stderr)
		}
		t.Logf("run %d: %s", run, strings.TrimSpace(stdout))
	}
	cat := topics.Catalog{Prefix: prefix}
	kc := pipeline.DefaultKafkaConfig()
	kc.Brokers = strings.Split(brokers, ",")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	topic := cat.Topic(topics.BackfillPrompts)
	n, err := pipeline.Partitions(ctx, kc, topic)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for p := 0; p < n; p++ {
		_, end, err := pipeline.PartitionBounds(ctx, kc, topic, p)
		if err != nil {
			t.Fatal(err)
		}
		if err := pipeline.ReadRange(ctx, kc, topic, p, 0, end, func(r pipeline.Record) error {
			seen[string(r.Key)]++
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if len(seen) != 4 {
		t.Errorf("%d trees on %s, want 2 tasks × K=2: %v", len(seen), topic, seen)
	}
	for k, c := range seen {
		if c != 1 {
			t.Errorf("tree %s published %d times", k, c)
		}
	}
}

// TestBackfillTasksWithoutBubblewrap: a host without bubblewrap gets a
// clear error from backfill tasks, not a panic.
func TestBackfillTasksWithoutBubblewrap(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, stderr, err := runMurphy(t, "backfill", "tasks", "--repo", dir, "--build", "make", "--inject", "1",
		"--workspace-store", filepath.Join(dir, "ws"), "--bwrap", filepath.Join(dir, "no-bwrap"), "--out", filepath.Join(dir, "t.jsonl"))
	if err == nil {
		t.Fatal("backfill tasks ran without bubblewrap")
	}
	msg := err.Error() + stderr
	if strings.Contains(msg, "panic") || os.Geteuid() == 0 && !strings.Contains(msg, "no-bwrap") {
		t.Fatalf("unclear error: %v\n%s", err, stderr)
	}
}

// TestBackfillRealPairs runs backfill tasks as a user backfilling real CI
// history would, on the shared BugSwarm pairs: rxjava-jdbc (javac "cannot
// find symbol": the failing commit forgot ResultSetMapper.java) becomes a
// verified task whose dependencies (parent POM, plugins, dependencies) were
// resolved from Maven Central into a cache the task names, and whose
// reference murphy exec passes offline; f90nml (a SyntaxError inside
// coverage, fixed by pinning test/requirements_test.txt) is rejected with
// its reason. The yield report accounts for both.
func TestBackfillRealPairs(t *testing.T) {
	if testing.Short() {
		t.Skip("resolves from Maven Central and builds in the sandbox")
	}
	if os.Geteuid() != 0 {
		t.Skip("the build sandbox needs root")
	}
	if _, err := exec.LookPath("mvn"); err != nil {
		t.Skip("maven is not installed")
	}
	if c, err := net.DialTimeout("tcp", "repo.maven.apache.org:443", 5*time.Second); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("Maven Central is not reachable: %v", err)
		}
		t.Skipf("Maven Central is not reachable: %v", err)
	} else {
		c.Close()
	}
	repos, pairs := filepath.Join(sharedData, "repos"), filepath.Join(sharedData, "cilogs/bugswarm-pairs")
	if _, err := os.Stat(filepath.Join(repos, "rxjava-jdbc.bundle")); err != nil {
		t.Skip("no repositories at " + sharedData)
	}
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	dir := t.TempDir()
	manifest := filepath.Join(dir, "pairs.yaml")
	m := fmt.Sprintf(`- kind: history
  name: rxjava-jdbc
  repo: %s
  fail: fail
  fix: fix
  log: %s
  build: [mvn, -B, -o, -q, compile]
  timeout_ms: 240000
- kind: history
  name: f90nml
  repo: %s
  fail: fail
  fix: fix
  log: %s
  build: [python3, -m, pytest, -q, test]
`, abs(filepath.Join(repos, "rxjava-jdbc.bundle")), abs(filepath.Join(pairs, "davidmoten-rxjava-jdbc-65230625/failing.log")),
		abs(filepath.Join(repos, "f90nml.bundle")), abs(filepath.Join(pairs, "marshallward-f90nml-81508928/failing.log")))
	if err := os.WriteFile(manifest, []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
	store, out, report, yield := filepath.Join(dir, "ws"), filepath.Join(dir, "tasks.jsonl"), filepath.Join(dir, "report.jsonl"), filepath.Join(dir, "yield.json")
	args := []string{"backfill", "tasks", "--manifest", manifest, "--workspace-store", store, "--out", out, "--report", report, "--yield", yield, "--build-workers", "2"}
	if c := os.Getenv("MURPHY_DEPS_CACHE"); c != "" {
		args = append(args, "--deps-cache", c)
	}
	start := time.Now()
	stdout, stderr, err := runMurphy(t, args...)
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, stdout, stderr)
	}
	t.Logf("backfill tasks in %s:\n%s", time.Since(start).Round(time.Second), stderr)
	ts, lineErrs, err := tasks.Load(out, "")
	if err != nil || len(lineErrs) > 0 || len(ts) != 1 {
		t.Fatalf("tasks: %v %v %d", err, lineErrs, len(ts))
	}
	task := ts[0]
	cf := task.CompileFix
	if cf.Dependencies == "" || !strings.Contains(task.ReferencePatch, "ResultSetMapper.java") || len(cf.Targets) < 2 {
		t.Fatalf("task %s: dependencies %q, %d targets, reference:\n%s", task.TaskID, cf.Dependencies, len(cf.Targets), task.ReferencePatch)
	}
	for _, d := range cf.Targets {
		if !strings.HasPrefix(d.File, "src/main/java/com/github/davidmoten/rx/jdbc/") || d.Line == 0 || !strings.Contains(d.Message, "cannot find symbol") {
			t.Errorf("target %+v", d)
		}
	}
	var reps []map[string]any
	raw, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var r map[string]any
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		reps = append(reps, r)
	}
	if len(reps) != 2 {
		t.Fatalf("%d report lines", len(reps))
	}
	prov := reps[0]["provenance"].([]any)[0].(map[string]any)
	tm := prov["target_map"].([]any)
	if len(tm) < len(cf.Targets) || prov["dependencies"].(map[string]any)["digest"] != cf.Dependencies {
		t.Errorf("provenance %v", prov)
	}
	for _, e := range tm {
		if e := e.(map[string]any); e["sandbox"] != nil && e["by"] == nil {
			t.Errorf("a mapping without its kind: %v", e)
		}
	}
	rj := reps[1]["rejected"].([]any)[0].(map[string]any)
	if rj["reason"] != "no_source_change" || !strings.Contains(rj["detail"].(string), "coverage") || reps[1]["cause"] != "dependency" {
		t.Errorf("f90nml: %v", reps[1])
	}
	var y struct {
		Items, Reproduced int
		Rejected          map[string]int             `json:"rejected_by_reason"`
		Deps              struct{ Hits, Misses int } `json:"dependencies"`
	}
	yb, err := os.ReadFile(yield)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(yb, &y); err != nil || y.Items != 2 || y.Reproduced != 1 || y.Rejected["no_source_change"] != 1 || y.Deps.Hits+y.Deps.Misses != 1 {
		t.Errorf("yield %v %s", err, yb)
	}
	stdout, stderr, err = runMurphy(t, "exec", "--tasks", out, "--reference", "--workspace-store", store)
	if err != nil || !strings.Contains(stdout, "passed") {
		t.Fatalf("exec: %v\n%s\n%s", err, stdout, stderr)
	}
	t.Logf("exec: %s", strings.TrimSpace(stdout))
}
