package bench

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/pipeline/pipelinetest"
	"github.com/murphy-rl/murphy/sandbox"
	"github.com/murphy-rl/murphy/stages"
	"github.com/murphy-rl/murphy/stages/execute"
	"github.com/murphy-rl/murphy/tasks/builtin"
	"github.com/murphy-rl/murphy/topics"
)

func builtinTasks(t *testing.T) []topics.Task {
	t.Helper()
	ts, err := builtin.Tasks()
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// TestVerdictJudgesByReference: the benchmark verdict passes exactly the
// reference solutions, for both task kinds, through the real Evaluator.
func TestVerdictJudgesByReference(t *testing.T) {
	ts := builtinTasks(t)
	v := NewVerdict(ts)
	eval := &execute.Evaluator{Runner: v}
	kinds := map[string]bool{}
	for i := range ts {
		task := &ts[i]
		kinds[task.Kind] = true
		for _, tc := range []struct {
			name, code, want string
		}{
			{"reference", task.Reference, topics.StatusPassed},
			{"reference with blank lines", "\n" + task.Reference + "\n\n", topics.StatusPassed},
			{"other program", task.Reference + "\nx = 1\n", topics.StatusWrongAnswer},
		} {
			o, err := eval.Evaluate(context.Background(), task, tc.code)
			if err != nil {
				t.Fatalf("%s %s: %v", task.TaskID, tc.name, err)
			}
			if o.Status != tc.want {
				t.Errorf("%s %s: status %s, want %s\n%s", task.TaskID, tc.name, o.Status, tc.want, o.Feedback)
			}
			if tc.want == topics.StatusPassed && o.TestsPassed != o.TestsTotal {
				t.Errorf("%s %s: %d of %d tests passed", task.TaskID, tc.name, o.TestsPassed, o.TestsTotal)
			}
			if tc.want != topics.StatusPassed && (o.TestsPassed != 0 || !strings.Contains(o.Feedback, "wrong_answer")) {
				t.Errorf("%s %s: %d tests passed, feedback:\n%s", task.TaskID, tc.name, o.TestsPassed, o.Feedback)
			}
		}
	}
	if !kinds[topics.KindPythonFunction] || !kinds[topics.KindStdio] {
		t.Fatalf("built-in tasks cover kinds %v, want both", kinds)
	}
	if v.Jobs() == 0 {
		t.Fatal("no job reached the verdict")
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		mut  func(*Config)
		ok   bool
	}{
		{"defaults", func(*Config) {}, true},
		{"no partitions", func(c *Config) { c.Partitions = 0 }, false},
		{"no group sizes", func(c *Config) { c.GroupSizes = nil }, false},
		{"zero group", func(c *Config) { c.GroupSizes = []int{2, 0} }, false},
		{"no turns", func(c *Config) { c.Turns = 0 }, false},
		{"zero memory bound", func(c *Config) { c.Memory.BoundsMB = map[string]int{"emit": 0} }, false},
		{"bound of no stage", func(c *Config) { c.Memory.BoundsMB = map[string]int{"router": 64} }, false},
		{"bound override", func(c *Config) { c.Memory.BoundsMB = map[string]int{"emit": 512} }, true},
		{"bad stage config", func(c *Config) { c.Emit.MaxRows = 0 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.mut(&c)
			if err := c.Validate(); (err == nil) != tc.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

// testBroker is the real broker when MURPHY_KAFKA_BROKERS is set, else the
// embedded one; long tests are skipped under -short.
func testBroker(t *testing.T) *Broker {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the whole pipeline")
	}
	var brokers []string
	if v := os.Getenv(pipelinetest.EnvBrokers); v != "" {
		brokers = strings.Split(v, ",")
	}
	b, err := OpenBroker(brokers, 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// tiny is a configuration small enough for a test.
func tiny() Config {
	c := DefaultConfig()
	c.TreesPerTask, c.BottleneckTreesPerTask = 1, 1
	c.RunTimeout = 5 * time.Minute
	c.Execute.Sandbox.Workers = 1
	return c
}

// TestOverheadTiny runs the overhead measurement on one tree per task: both
// sides must move every tree and sample, and the ratio must be a number.
func TestOverheadTiny(t *testing.T) {
	b := testBroker(t)
	ts := builtinTasks(t)
	res, err := Overhead(context.Background(), b, tiny(), ts, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + res.String())
	if res.Pipeline.Trees != len(ts) || res.Raw.Trees != len(ts) {
		t.Fatalf("trees: pipeline %d, raw %d, want %d", res.Pipeline.Trees, res.Raw.Trees, len(ts))
	}
	if res.Raw.Samples != res.Pipeline.Samples || res.Pipeline.Samples < 2*len(ts) {
		t.Fatalf("samples: pipeline %d, raw %d (at least %d expected)", res.Pipeline.Samples, res.Raw.Samples, 2*len(ts))
	}
	if res.Jobs == 0 || res.Records <= res.Pipeline.Samples || res.Ratio() <= 0 {
		t.Fatalf("jobs %d, records %d, ratio %v", res.Jobs, res.Records, res.Ratio())
	}
}

// TestBottleneckTiny runs the bottleneck measurement with one sandbox.
func TestBottleneckTiny(t *testing.T) {
	b := testBroker(t)
	if _, err := os.Stat(sandbox.DefaultConfig().Bwrap); err != nil {
		t.Skip("bubblewrap is not installed (sandbox/install-test-deps.sh)")
	}
	ts := builtinTasks(t)
	res, err := Bottleneck(context.Background(), b, tiny(), ts, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + res.String())
	if res.Pipeline.Trees != len(ts) || res.Executions != res.Pipeline.Samples {
		t.Fatalf("trees %d (want %d), standalone executions %d, pipeline samples %d", res.Pipeline.Trees, len(ts), res.Executions, res.Pipeline.Samples)
	}
	// Timeouts may differ between two runs of a program; nothing else.
	if res.Agree < res.Executions*9/10 {
		t.Fatalf("only %d of %d standalone verdicts equal the pipeline's", res.Agree, res.Executions)
	}
	if res.Ratio() <= 0 {
		t.Fatalf("ratio %v", res.Ratio())
	}
}

// buildMurphy builds the murphy command, whose `stage NAME` runs
// one stage per process for the memory benchmark.
func buildMurphy(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "murphy")
	out, err := exec.Command("go", "build", "-o", bin, "../../cmd/murphy").CombinedOutput()
	if err != nil {
		t.Fatalf("build murphy: %v\n%s", err, out)
	}
	return bin
}

// TestMemoryTiny measures every stage as its own process over a backlog of
// two trees per task: each stage but execute (real sandbox, time-bounded)
// must drain it, and every peak RSS must be read.
func TestMemoryTiny(t *testing.T) {
	b := testBroker(t)
	if _, err := os.Stat(sandbox.DefaultConfig().Bwrap); err != nil {
		t.Skip("bubblewrap is not installed (sandbox/install-test-deps.sh)")
	}
	bin := buildMurphy(t)
	ts := builtinTasks(t)
	c := tiny()
	c.Memory.Trees = 2 * len(ts)
	c.Memory.StageTimeout = 45 * time.Second
	launch := func(ctx context.Context, stage string, args []string) *exec.Cmd {
		return exec.CommandContext(ctx, bin, append([]string{"stage", stage}, args...)...)
	}
	res, err := Memory(context.Background(), b, c, ts, launch, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + res.String())
	if res.Trees != c.Memory.Trees || len(res.Stages) != len(stages.All()) {
		t.Fatalf("backlog %d trees (want %d), %d stages measured", res.Trees, c.Memory.Trees, len(res.Stages))
	}
	// The backlog is consistent: one candidate, execution and sample per
	// node, one credited tree per tree, fewer prompts than nodes.
	gen, exe, gov, cre, emi := res.Stages[0], res.Stages[1], res.Stages[2], res.Stages[3], res.Stages[4]
	if gen.Want != res.Samples || exe.Backlog != res.Samples || gov.Backlog != res.Samples || cre.Backlog != res.Samples ||
		cre.Want != res.Trees || emi.Backlog != res.Trees || emi.Want != res.Trees || gen.Backlog <= res.Trees || gen.Backlog >= res.Samples {
		t.Errorf("backlog of %d trees, %d samples is inconsistent: %+v", res.Trees, res.Samples, res.Stages)
	}
	for _, s := range res.Stages {
		if s.PeakRSS < 4*mib || s.Backlog == 0 || s.Want == 0 {
			t.Errorf("%s: peak RSS %d bytes, backlog %d, want %d outputs", s.Stage, s.PeakRSS, s.Backlog, s.Want)
		}
		if s.Stage != "execute" && !s.Drained() {
			t.Errorf("%s: %d of %d outputs in %s", s.Stage, s.Done, s.Want, s.Elapsed)
		}
	}
	if res.Stages[1].SandboxPeakRSS == 0 {
		t.Error("execute: no sandbox process was seen")
	}
}

func TestBounds(t *testing.T) {
	c := DefaultConfig()
	for _, tc := range []struct {
		stage string
		mut   func(*Config)
		want  int
	}{
		{"generate", func(*Config) {}, 128},
		{"govern", func(*Config) {}, 128},
		{"credit", func(*Config) {}, 256},
		// 64 + 16 x 8 MiB x 4 partitions.
		{"emit", func(*Config) {}, 576},
		{"emit", func(c *Config) { c.Partitions = 8 }, 1088},
		{"emit", func(c *Config) { c.Memory.BoundsMB = map[string]int{"emit": 500} }, 500},
	} {
		cc := c
		tc.mut(&cc)
		if got := cc.Bound(tc.stage); got != tc.want {
			t.Errorf("Bound(%s) = %d, want %d", tc.stage, got, tc.want)
		}
	}
	c.Execute.Sandbox.Workers = 3
	if got := c.SandboxBound(); got != 3*c.Execute.Sandbox.SlotMemoryMB {
		t.Errorf("SandboxBound() = %d with 3 workers", got)
	}
}

func TestOverheadSeriesMedian(t *testing.T) {
	run := func(pipeline, raw int) OverheadResult {
		return OverheadResult{Pipeline: Run{Samples: pipeline, Active: time.Second}, Raw: Run{Samples: raw, Active: time.Second}}
	}
	odd := OverheadSeries{run(60, 100), run(40, 100), run(50, 100)}
	if got := odd.Ratio(); got != 0.5 {
		t.Fatalf("median of 0.6, 0.4, 0.5 = %v", got)
	}
	even := OverheadSeries{run(30, 100), run(70, 100), run(45, 100), run(50, 100)}
	if got := even.Ratio(); math.Abs(got-0.475) > 1e-12 {
		t.Fatalf("median of 0.3, 0.7, 0.45, 0.5 = %v", got)
	}
	if s := odd.String(); !strings.Contains(s, "ratios 0.60 0.40 0.50; median 0.50 (target >= 0.5: meets)") {
		t.Fatalf("summary %q", s)
	}
	if (OverheadSeries{}).Ratio() != 0 {
		t.Fatal("empty series")
	}
}
