package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// creditFixture is two trees of records not produced by murphy: opaque or
// empty root group ids, no statuses (success is reward 1).
//
//	a: a1 (0) → {a1x (1), a1y (0)},  a2 (0)        root group "prompt-a"
//	b: b1 (0) → {b1x (0), b1y (0)},  b2 (1)        root group ""
const creditFixture = `{"tree_id":"a","node_id":"a1","parent_id":"","group_id":"prompt-a","group_size":2,"turn":1,"max_turns":2,"reward":0,"route":"train","in_group_stats":true,"children_requested":2}
{"tree_id":"a","node_id":"a2","parent_id":"","group_id":"prompt-a","group_size":2,"turn":1,"max_turns":2,"reward":0,"route":"train","in_group_stats":true,"children_requested":0}
{"tree_id":"a","node_id":"a1x","parent_id":"a1","group_id":"a1","group_size":2,"turn":2,"max_turns":2,"reward":1,"route":"train","in_group_stats":true,"children_requested":0}
{"tree_id":"a","node_id":"a1y","parent_id":"a1","group_id":"a1","group_size":2,"turn":2,"max_turns":2,"reward":0,"route":"train","in_group_stats":true,"children_requested":0}
{"tree_id":"b","node_id":"b1","parent_id":"","group_id":"","group_size":2,"turn":1,"max_turns":2,"reward":0,"route":"train","in_group_stats":true,"children_requested":2}
{"tree_id":"b","node_id":"b2","parent_id":"","group_id":"","group_size":2,"turn":1,"max_turns":2,"reward":1,"route":"train","in_group_stats":true,"children_requested":0}
{"tree_id":"b","node_id":"b1x","parent_id":"b1","group_id":"b1","group_size":2,"turn":2,"max_turns":2,"reward":0,"route":"train","in_group_stats":true,"children_requested":0}
{"tree_id":"b","node_id":"b1y","parent_id":"b1","group_id":"b1","group_size":2,"turn":2,"max_turns":2,"reward":0,"route":"train","in_group_stats":true,"children_requested":0}
`

func runMurphy(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	root := newRootCmd()
	var o, e bytes.Buffer
	root.SetOut(&o)
	root.SetErr(&e)
	root.SetArgs(args)
	err = root.ExecuteContext(context.Background())
	return o.String(), e.String(), err
}

// cells returns the cells of the summary row starting with label.
func cells(t *testing.T, table, label string) []string {
	t.Helper()
	for line := range strings.SplitSeq(table, "\n") {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, label); ok {
			return regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(rest), -1)
		}
	}
	t.Fatalf("no row %q in\n%s", label, table)
	return nil
}

func TestCreditSummaryComparesStrategies(t *testing.T) {
	in := filepath.Join(t.TempDir(), "samples.jsonl")
	if err := os.WriteFile(in, []byte(creditFixture), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := runMurphy(t, "credit", "--in", in, "--summary", "--strategy", "mars,mers,grpo-mt")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	t.Logf("\n%s", out)
	if got := cells(t, out, "failed nodes"); strings.Join(got, " ") != "6 6 6" {
		t.Errorf("failed nodes %v, want 6 in every column", got)
	}
	// MARS and MERS lift a1 (its child a1x succeeded) to +1; GRPO-MT gives
	// a1 the mean of its chains: (√2 − 1/√2)/2.
	if got := cells(t, out, "mean adv, informative failures"); len(got) != 3 || got[0] != "+1.000 (n=1)" || got[1] != "+1.000 (n=1)" || got[2] != "+0.354 (n=1)" {
		t.Errorf("informative failures %v", got)
	}
	// MARS: a1y −1, a2 −1, b1 −1, b1x 0, b1y 0.
	if got := cells(t, out, "mean adv, uninformative failures"); len(got) != 3 || got[0] != "-0.600 (n=5)" {
		t.Errorf("uninformative failures %v", got)
	}
	if got := cells(t, out, "samples kept by pruning"); got[0] != "8/8 (100%)" {
		t.Errorf("kept %v", got)
	}

	// One strategy with --out: the samples go to the file, the table to
	// stdout; root members carry the opaque or derived root group id.
	credited := filepath.Join(t.TempDir(), "credited.jsonl")
	out, errOut, err = runMurphy(t, "credit", "--in", in, "--out", credited, "--summary", "--interp", "1")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	if got := cells(t, out, "samples kept by pruning"); got[0] != "8/8 (100%)" {
		t.Errorf("interp 1 with one refinement group per tree kept %v, want every sample", got)
	}
	f, err := os.Open(credited)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		var line struct {
			TreeID   string `json:"tree_id"`
			ParentID string `json:"parent_id"`
			GroupID  string `json:"group_id"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		n++
		if line.ParentID == "" && line.TreeID == "a" && line.GroupID != "prompt-a" {
			t.Errorf("tree a root member has group_id %q, want prompt-a", line.GroupID)
		}
		if line.ParentID == "" && line.TreeID == "b" && line.GroupID == "" {
			t.Errorf("tree b root member has no derived group_id")
		}
	}
	if n != 8 {
		t.Errorf("%d credited lines, want 8", n)
	}

	for _, args := range [][]string{
		{"--strategy", "mars,mers"},                                       // several strategies need --summary
		{"--strategy", "mars,mers", "--summary", "--out", credited},       // --out holds one strategy
		{"--strategy", "mars,bogus", "--summary"},                         // unknown strategy
		{"--strategy", "mars", "--advantage", "no_std", "--unbiased-std"}, // unbiased std needs std
	} {
		_, _, err := runMurphy(t, append([]string{"credit", "--in", in}, args...)...)
		if exitCode(err) != 2 {
			t.Errorf("%v: err %v (exit %d), want a usage error", args, err, exitCode(err))
		}
	}
}

// TestRunSummaryMatchesOfflineCredit runs the quick start's command on a
// few built-in tasks and checks that the samples it keeps re-credit
// offline to exactly the run's own summary column, beside the baselines.
func TestRunSummaryMatchesOfflineCredit(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the pipeline")
	}
	dir := t.TempDir()
	samples := filepath.Join(dir, "samples.jsonl")
	out, errOut, err := runMurphy(t, "run", "--out", filepath.Join(dir, "out"), "--samples-out", samples,
		"--turns", "2", "--group-sizes", "3", "--calibrate=false", "--progress", "0", "--kinds", "python-function,stdio")
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, errOut)
	}
	t.Logf("\n%s", out)
	if !strings.Contains(out, "the run's own configuration (mars) beside the baselines") {
		t.Fatalf("no credit table in the run summary")
	}
	own := cells(t, out, "failed with advantage > 0")
	if len(own) != 3 {
		t.Fatalf("run summary columns %v, want mars, mers, grpo-mt", own)
	}
	offline, errOut, err := runMurphy(t, "credit", "--in", samples, "--summary", "--strategy", "mars,mers,grpo-mt")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	for _, row := range []string{"samples kept by pruning", "failed nodes", "failed with advantage > 0",
		"mean adv, informative failures", "mean adv, uninformative failures", "adv std [min, max], turn 2"} {
		if a, b := cells(t, out, row), cells(t, offline, row); strings.Join(a, "|") != strings.Join(b, "|") {
			t.Errorf("%s: run %v, offline %v", row, a, b)
		}
	}
}

// TestRunWithDropZeroSignalEnds: a tree whose every group is zero-signal
// leaves no sample with drop_zero_signal, so it never reaches a batch; the
// run still ends, and counts it.
func TestRunWithDropZeroSignalEnds(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the pipeline")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	root := newRootCmd()
	var o, e bytes.Buffer
	root.SetOut(&o)
	root.SetErr(&e)
	root.SetArgs([]string{"run", "--out", t.TempDir(), "--calibrate=false", "--progress", "0", "--credit.drop-zero-signal",
		"--kinds", "python-function,stdio"})
	if err := root.ExecuteContext(ctx); err != nil {
		t.Fatalf("%v\n%s\n%s", err, o.String(), e.String())
	}
	if !strings.Contains(o.String(), "26 of 26 credited") || !strings.Contains(o.String(), "with no sample left") {
		t.Fatalf("summary:\n%s", o.String())
	}
}
