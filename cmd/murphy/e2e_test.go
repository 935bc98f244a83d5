package main

import (
	"context"
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

	"github.com/murphy-rl/murphy/internal/dataset"
	"github.com/murphy-rl/murphy/pipeline/pipelinetest"
	"github.com/murphy-rl/murphy/tasks/builtin"
)

// End-to-end tests of the whole system as separate processes: the dataset
// must not depend on the deployment shape, and must survive kill -9 of every
// stage and broker failures with every tree exactly once (TestClusterChaos,
// on a three-broker cluster).

const (
	e2eSeed   = "7"
	e2eRunID  = "e2e-7"
	e2eGroups = "2"
	e2eTurns  = "2"
	// e2eMemoryMB is the runs' memory budget: a candidate that allocates
	// without end reaches it in a fraction of its CPU limit, so that its
	// verdict (memory) does not depend on how fast the machine allocates:
	// at 1 GB a list-growing mutant needs most of the 10 s CPU limit and
	// either limit may end it first, which differs between two runs.
	e2eMemoryMB = "256"
)

func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "murphy")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("build murphy: %v\n%s", err, out)
	}
	return bin
}

func repoRoot(t *testing.T) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(filepath.Dir(wd))
}

// referenceRun runs `murphy run` (one process, embedded broker).
func referenceRun(t *testing.T, bin, out string, treesPerTask int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run", "--out", out, "--seed", e2eSeed, "--run-id", e2eRunID,
		"--group-sizes", e2eGroups, "--turns", e2eTurns, "--trees-per-task", strconv.Itoa(treesPerTask),
		"--progress", "10s", "--log_level", "warn", "--execute.sandbox.workers", "2", "--execute.sandbox.limits.memory-mb", e2eMemoryMB,
		// Both shapes read the same tasks (the deployment submits
		// tasks.jsonl): calibration measures the machine at the time, so
		// these runs keep the tasks' fixed limits.
		"--calibrate=false", "--kinds", "python-function,stdio")
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("murphy run: %v\n%s", err, b)
	}
	t.Logf("reference run:\n%s", lastLines(string(b), 14))
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// deployment is the pipeline as one process per stage on the real broker.
type deployment struct {
	t       *testing.T
	bin     string
	brokers string
	prefix  string
	out     string
	logs    string
	mu      sync.Mutex
	procs   map[string]*proc
	// extra holds more flags per stage name (after the defaults: they win),
	// replicaExtra per replica ("generate#2"), after those.
	extra        map[string][]string
	replicaExtra map[string][]string
}

// proc is one running stage process; done closes when it has exited.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
	code int
}

// replicas of each stage: two of execute and of generate.
var replicas = []string{"generate#1", "generate#2", "execute#1", "execute#2", "govern#1", "credit#1", "emit#1"}

func newDeployment(t *testing.T, bin string, brokers []string) *deployment {
	d := &deployment{t: t, bin: bin, brokers: strings.Join(brokers, ","), prefix: pipelinetest.Unique(t) + ".",
		out: filepath.Join(t.TempDir(), "out"), logs: t.TempDir(), procs: map[string]*proc{}}
	t.Cleanup(func() { d.stopAll() })
	return d
}

func (d *deployment) args(replica string) []string {
	name := strings.Split(replica, "#")[0]
	a := []string{"stage", name, "--kafka.brokers", d.brokers, "--topics.prefix", d.prefix,
		"--topics.partitions", "4", "--log_level", "warn"}
	switch name {
	case "generate":
		a = append(a, "--generate.policy.simulated.seed", e2eSeed)
	case "execute":
		a = append(a, "--execute.sandbox.seed", e2eSeed, "--execute.sandbox.workers", "1", "--execute.sandbox.limits.memory-mb", e2eMemoryMB)
	case "credit":
		// Kills and a broker restart delay children; no tree may be closed
		// as stuck because of that.
		a = append(a, "--credit.deadline", "30m")
	case "emit":
		a = append(a, "--emit.dir", d.out, "--emit.file_max_age", "2s")
	}
	return append(append(a, d.extra[name]...), d.replicaExtra[replica]...)
}

func (d *deployment) start(replica string) {
	f, err := os.OpenFile(filepath.Join(d.logs, strings.ReplaceAll(replica, "#", "-")+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		d.t.Fatal(err)
	}
	cmd := exec.Command(d.bin, d.args(replica)...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		p.code = cmd.ProcessState.ExitCode()
		f.Close()
		close(p.done)
	}()
	d.mu.Lock()
	d.procs[replica] = p
	d.mu.Unlock()
}

func (d *deployment) kill9(replica string) {
	d.mu.Lock()
	p := d.procs[replica]
	d.mu.Unlock()
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		d.t.Fatalf("%s did not die on SIGKILL", replica)
	}
}

// stopAll asks every stage to shut down gracefully (SIGTERM), then kills
// what is left. It returns the replicas that did not exit 0 in time.
func (d *deployment) stopAll() []string {
	d.mu.Lock()
	procs := d.procs
	d.procs = map[string]*proc{}
	d.mu.Unlock()
	for _, p := range procs {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	var unclean []string
	deadline := time.Now().Add(60 * time.Second)
	for name, p := range procs {
		select {
		case <-p.done:
			if p.code != 0 {
				unclean = append(unclean, fmt.Sprintf("%s (exit %d)", name, p.code))
			}
		case <-time.After(time.Until(deadline)):
			unclean = append(unclean, name+" (still running)")
			_ = p.cmd.Process.Kill()
		}
	}
	return unclean
}

func (d *deployment) submit(treesPerTask int) {
	tasksFile := filepath.Join(repoRoot(d.t), "tasks", "builtin", "tasks.jsonl")
	out, err := exec.Command(d.bin, "submit", "--tasks", tasksFile, "--brokers", d.brokers, "--topic-prefix", d.prefix,
		"--partitions", "4", "--run-id", e2eRunID, "--seed", e2eSeed, "--group-sizes", e2eGroups,
		"--max-turns", e2eTurns, "--trees-per-task", strconv.Itoa(treesPerTask), "--calibrate=false").CombinedOutput()
	if err != nil {
		d.t.Fatalf("submit: %v\n%s", err, out)
	}
}

// waitTrees polls the output files until they hold want trees.
func (d *deployment) waitTrees(want int, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for {
		rows, err := dataset.ReadDir(d.out)
		if err == nil && dataset.Trees(rows) >= want {
			return
		}
		d.checkAlive()
		if time.Now().After(deadline) {
			d.t.Fatalf("output holds %d of %d trees after %s (err %v); logs in %s:\n%s", dataset.Trees(rows), want, timeout, err, d.logs, d.tail())
		}
		time.Sleep(2 * time.Second)
	}
}

// checkAlive fails the test at once when a stage process exited without
// being told to: a stage must ride out kills of its peers and broker
// restarts, not give up.
func (d *deployment) checkAlive() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for name, p := range d.procs {
		select {
		case <-p.done:
			d.t.Fatalf("%s exited on its own (exit %d); logs in %s:\n%s", name, p.code, d.logs, d.tail())
		default:
		}
	}
}

func (d *deployment) tail() string {
	var b strings.Builder
	files, _ := filepath.Glob(filepath.Join(d.logs, "*.log"))
	for _, f := range files {
		data, _ := os.ReadFile(f)
		fmt.Fprintf(&b, "== %s\n%s\n", filepath.Base(f), lastLines(string(data), 8))
	}
	return b.String()
}

func compareDirs(t *testing.T, a, b string) {
	t.Helper()
	ra, err := dataset.ReadDir(a)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := dataset.ReadDir(b)
	if err != nil {
		t.Fatal(err)
	}
	diffs, err := dataset.Compare(ra, rb)
	if err != nil {
		t.Fatal(err)
	}
	byID := func(rows []dataset.Row) map[any]dataset.Row {
		m := map[any]dataset.Row{}
		for _, r := range rows {
			m[r["node_id"]] = r
		}
		return m
	}
	ia, ib := byID(ra), byID(rb)
	for i, df := range diffs {
		if i == 20 {
			t.Errorf("... %d more differences", len(diffs)-20)
			break
		}
		t.Error(df)
		if x, y := ia[df.NodeID], ib[df.NodeID]; x != nil && y != nil && df.Column != "" {
			t.Logf("  task %v turn %v: status %v/%v, cause %v/%v, tests %v/%v", x["task_id"], x["turn"],
				x["status"], y["status"], x["failure_cause"], y["failure_cause"], x["tests_passed"], y["tests_passed"])
		}
	}
	if len(ra) == 0 || len(ra) != len(rb) {
		t.Errorf("rows: %d vs %d", len(ra), len(rb))
	}
}

func e2eTrees(t *testing.T, treesPerTask int) int {
	ts, err := builtin.Tasks()
	if err != nil {
		t.Fatal(err)
	}
	return len(ts) * treesPerTask
}

// TestDeploymentShapeIndependence: the same seed gives the same dataset in
// one process on the embedded broker and as one process per stage, with two
// replicas of execute and generate, on the real broker.
func TestDeploymentShapeIndependence(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: long")
	}
	brokers := pipelinetest.Brokers(t)
	bin := buildBinary(t)
	const k = 2
	ref := filepath.Join(t.TempDir(), "ref")
	referenceRun(t, bin, ref, k)

	d := newDeployment(t, bin, brokers)
	for _, r := range replicas {
		d.start(r)
	}
	d.submit(k)
	d.waitTrees(e2eTrees(t, k), 10*time.Minute)
	if unclean := d.stopAll(); len(unclean) > 0 {
		t.Errorf("SIGTERM: %v did not finish and exit 0", unclean)
	}
	compareDirs(t, ref, d.out)
	pythonReaderLoads(t, ref, e2eTrees(t, k))
}

// pythonReaderLoads checks that the trainer-side reader loads a run's files.
func pythonReaderLoads(t *testing.T, dir string, trees int) {
	t.Helper()
	script := `import sys
from murphy_reader import FileBatchReader, to_numpy
rows, trees = 0, set()
for b in FileBatchReader(sys.argv[1]):
    rows += b.num_rows
    trees.update(b.record_batch.column("tree_id").to_pylist())
    t = to_numpy(b)
    assert t["input_ids"].shape[0] == b.num_rows
print(rows, len(trees))`
	out, err := exec.Command("python3", "-c", script, dir).CombinedOutput()
	if err != nil {
		if os.Getenv("CI") == "" && strings.Contains(string(out), "ModuleNotFoundError") {
			t.Skipf("murphy_reader not installed: %s", out)
		}
		t.Fatalf("python reader: %v\n%s", err, out)
	}
	var rows, got int
	if _, err := fmt.Sscan(string(out), &rows, &got); err != nil || got != trees || rows == 0 {
		t.Fatalf("python reader saw %q, want %d trees", out, trees)
	}
}
