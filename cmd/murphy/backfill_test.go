package main

import (
	"context"
	"encoding/json"
	"os"
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
