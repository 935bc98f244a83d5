package emit

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/pipeline/pipelinetest"
	"github.com/murphy-rl/murphy/topics"
)

// python3 with pyarrow, or a skip. In CI (CI or MURPHY_REQUIRE_PYTHON=1
// set) a missing pyarrow fails the test instead.
func requirePyarrow(t *testing.T) string {
	t.Helper()
	required := os.Getenv("CI") != "" || os.Getenv("MURPHY_REQUIRE_PYTHON") == "1"
	py, err := exec.LookPath("python3")
	if err == nil {
		err = exec.Command(py, "-c", "import pyarrow, numpy").Run()
	}
	if err != nil {
		if required {
			t.Fatalf("python3 with pyarrow is required here (run python/install-test-deps.sh): %v", err)
		}
		t.Skipf("python3 with pyarrow not available: %v", err)
	}
	return py
}

// The Go writer's streams (as produced to Kafka) and files (IPC and
// Parquet), uncompressed, zstd and lz4, are read by pyarrow and the Python
// reader, and every value matches what was written.
func TestPyarrowReadsGoOutput(t *testing.T) {
	py := requirePyarrow(t)
	root := t.TempDir()
	brokers := pipelinetest.Embedded(t)
	const partitions = 2
	trees := map[int][]topics.CreditedTree{}
	var rows []row
	for p := 0; p < partitions; p++ {
		trees[p] = genTrees(uint64(100+p), 60, testCreditConfig())
		for _, r := range expectedRows(Range{Partition: p}, treesAt(0, trees[p])) {
			r.BatchID = ""
			rows = append(rows, r)
		}
	}
	type caseSpec struct {
		Dir         string `json:"dir"`
		Compression string `json:"compression"`
	}
	var cases []caseSpec
	for _, codec := range []string{CompressionNone, CompressionZstd, CompressionLZ4} {
		dir := filepath.Join(root, codec)
		cat := pipelinetest.Catalog(t, brokers, partitions)
		s, _ := topicStage(t, brokers, cat, filepath.Join(dir, "files"), func(c *Config) {
			c.Compression, c.MaxRows, c.FileMaxBytes = codec, 13, 40_000
			c.Formats = []string{FormatIPC, FormatParquet}
		})
		for p := 0; p < partitions; p++ {
			proc := assign(t, s, p, -1)
			for i := range trees[p] {
				if err := proc.Process(t.Context(), record(t, cat.Topic(topics.Credited), p, int64(i), &trees[p][i])); err != nil {
					t.Fatal(err)
				}
			}
			if err := proc.Close(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		n := int(s.metrics.testBatches("topic"))
		msgs := pipelinetest.ReadN(t, brokers, cat.Topic(topics.Batches), n, 30*time.Second)
		if err := os.MkdirAll(filepath.Join(dir, "streams"), 0o755); err != nil {
			t.Fatal(err)
		}
		for i, m := range msgs {
			base := filepath.Join(dir, "streams", fmt.Sprintf("%04d", i))
			h, _ := json.Marshal(m.Headers)
			if err := os.WriteFile(base+".arrows", m.Value, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(base+".json", h, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		cases = append(cases, caseSpec{Dir: codec, Compression: codec})
	}
	spec, err := json.Marshal(map[string]any{"credit_config": testCreditConfig(), "rows": rows, "cases": cases})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "expected.json"), spec, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, filepath.Join("..", "..", "python", "tests", "check_go_output.py"), root)
	out, err := cmd.CombinedOutput()
	t.Logf("pyarrow check:\n%s", out)
	if err != nil {
		t.Fatalf("pyarrow check failed: %v", err)
	}
	if !strings.Contains(string(out), "OK pyarrow") {
		t.Fatal("pyarrow check did not report OK")
	}
}

// The trainer example takes real steps on batches the Go stage wrote.
func TestTrainerStepOnGoFiles(t *testing.T) {
	py := requirePyarrow(t)
	if err := exec.Command(py, "-c", "import torch").Run(); err != nil {
		if os.Getenv("CI") != "" || os.Getenv("MURPHY_REQUIRE_PYTHON") == "1" {
			t.Fatalf("torch is required here (run python/install-test-deps.sh): %v", err)
		}
		t.Skipf("torch not installed: %v", err)
	}
	dir := t.TempDir()
	s := fileStage(t, dir, func(c *Config) { c.MaxRows = 16; c.Formats = []string{FormatParquet} })
	proc := assign(t, s, 0, -1)
	trees := genTrees(30, 40, testCreditConfig())
	for i := range trees {
		if err := proc.Process(t.Context(), record(t, "t.credited", 0, int64(i), &trees[i])); err != nil {
			t.Fatal(err)
		}
	}
	if err := proc.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, py, filepath.Join("..", "..", "python", "examples", "grpo_step.py"),
		"--dir", dir, "--format", "parquet", "--steps", "3", "--max-length", "128", "--device", "cpu").CombinedOutput()
	t.Logf("trainer:\n%s", out)
	if err != nil {
		t.Fatalf("trainer step failed: %v", err)
	}
	if got := strings.Count(string(out), "loss="); got != 3 {
		t.Fatalf("%d steps reported, want 3", got)
	}
}
