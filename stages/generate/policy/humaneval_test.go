package policy

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/murphy-rl/murphy/topics"
)

// humanEvalPath is the reference data set, used by path (DESIGN §6).
const humanEvalPath = "../../../../shared/data/humaneval/HumanEval.jsonl.gz"

type heTask struct {
	task topics.Task
	test string
}

func loadHumanEval(t *testing.T) []heTask {
	t.Helper()
	path := humanEvalPath
	if p := os.Getenv("MURPHY_HUMANEVAL"); p != "" {
		path = p
	}
	f, err := os.Open(path)
	if err != nil {
		t.Skipf("HumanEval not available: %v", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var out []heTask
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var r struct {
			TaskID    string `json:"task_id"`
			Prompt    string `json:"prompt"`
			Test      string `json:"test"`
			Canonical string `json:"canonical_solution"`
			Entry     string `json:"entry_point"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, heTask{
			task: topics.Task{TaskID: r.TaskID, Kind: topics.KindPythonFunction, Prompt: r.Prompt,
				EntryPoint: r.Entry, Reference: r.Prompt + r.Canonical, Check: r.Test},
			test: r.Test,
		})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

type judgeJob struct {
	ID    string `json:"id"`
	Code  string `json:"code"`
	Test  string `json:"test"`
	Entry string `json:"entry"`
}

type verdict struct {
	ID     string `json:"id"`
	Passed bool   `json:"passed"`
	Kind   string `json:"kind"`
	Error  string `json:"error"`
	Line   string `json:"line"`
}

// judge runs programs against HumanEval's canonical tests with plain python3
// (testdata/judge_humaneval.py): a measurement aid, not the executor.
func judge(t *testing.T, jobs []judgeJob) map[string]verdict {
	t.Helper()
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	for _, j := range jobs {
		if err := enc.Encode(j); err != nil {
			t.Fatal(err)
		}
	}
	script, err := filepath.Abs(filepath.Join("testdata", "judge_humaneval.py"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("python3", script)
	cmd.Stdin = &in
	cmd.Dir = t.TempDir()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("judge: %v\n%s", err, stderr.String())
	}
	res := map[string]verdict{}
	for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		var v verdict
		if err := json.Unmarshal(line, &v); err != nil {
			t.Fatalf("judge output %q: %v", line, err)
		}
		res[v.ID] = v
	}
	if len(res) != len(jobs) {
		t.Fatalf("judge answered %d of %d", len(res), len(jobs))
	}
	return res
}

func rate(num, den int) float64 {
	if den == 0 {
		return 0
	}
	return float64(num) / float64(den)
}

// TestSimulatedPolicyHumanEval measures the simulated policy over HumanEval:
// its turn-1 pass rate, and how often a refinement repairs a failed program
// after feedback that names the failing case, names only the error, or says
// nothing useful (a timeout). The informative-failure effect the method
// relies on must show: failing-case feedback repairs far more often.
func TestSimulatedPolicyHumanEval(t *testing.T) {
	if testing.Short() {
		t.Skip("measurement over HumanEval")
	}
	tasks := loadHumanEval(t)
	pol, err := NewSimulated(DefaultSimulatedConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const g = 4

	// Turn 1.
	type node struct {
		he     *heTask
		prompt *topics.Prompt
		id     string
		sample Sample
	}
	var roots []node
	var jobs []judgeJob
	for i := range tasks {
		he := &tasks[i]
		p := rootPrompt(&he.task, g)
		ids := nodeIDs(p)
		ss, err := pol.Generate(ctx, Request{Prompt: p, Task: &he.task, NodeIDs: ids})
		if err != nil {
			t.Fatal(err)
		}
		for k, s := range ss {
			roots = append(roots, node{he: he, prompt: p, id: ids[k], sample: s})
			jobs = append(jobs, judgeJob{ID: ids[k], Code: s.Code, Test: he.test, Entry: he.task.EntryPoint})
		}
	}
	v1 := judge(t, jobs)
	passed1, refPassed, refs := 0, 0, 0
	mutantFailed, mutants := 0, 0
	for _, n := range roots {
		ok := v1[n.id].Passed
		if ok {
			passed1++
		}
		o, _ := pol.Choose(n.prompt, &n.he.task, n.id)
		if o.Reference {
			refs++
			if ok {
				refPassed++
			}
		} else {
			mutants++
			if !ok {
				mutantFailed++
			}
		}
	}
	if refPassed != refs {
		t.Fatalf("%d of %d reference samples failed the canonical tests: the judge or extraction is wrong", refs-refPassed, refs)
	}

	// Turn 2: each failed program refined once per kind of feedback.
	feedbacks := map[string]func(v verdict) (string, bool){
		"failing_case": func(v verdict) (string, bool) {
			if v.Kind != "wrong_answer" {
				return "", false
			}
			return fmt.Sprintf("wrong_answer\ninput: %s\nexpected: the assertion holds\nactual: it does not", strings.TrimSpace(v.Line)), true
		},
		"error": func(v verdict) (string, bool) {
			if v.Kind != "runtime_error" && v.Kind != "compile_error" {
				return "", false
			}
			return v.Kind + "\nTraceback (most recent call last):\n" + v.Error, true
		},
		"uninformative": func(verdict) (string, bool) {
			return "timeout: the program did not finish within the time limit", true
		},
	}
	type child struct {
		kind string
		id   string
	}
	var children []child
	jobs = jobs[:0]
	for _, n := range roots {
		v := v1[n.id]
		if v.Passed {
			continue
		}
		for kind, fb := range feedbacks {
			text, ok := fb(v)
			if !ok {
				continue
			}
			p := &topics.Prompt{
				SchemaVersion: topics.SchemaVersion, TreeSpec: n.prompt.TreeSpec,
				TreeID: n.prompt.TreeID + "/" + kind, TaskID: n.prompt.TaskID,
				ParentID: n.id, GroupID: n.id, Turn: 2, GroupSize: g,
				Text: n.he.task.Prompt + "\n# feedback\n" + text, Feedback: text, ParentCode: n.sample.Code,
			}
			ids := nodeIDs(p)
			ss, err := pol.Generate(ctx, Request{Prompt: p, Task: &n.he.task, NodeIDs: ids})
			if err != nil {
				t.Fatal(err)
			}
			for k, s := range ss {
				children = append(children, child{kind: kind, id: ids[k]})
				jobs = append(jobs, judgeJob{ID: ids[k], Code: s.Code, Test: n.he.test, Entry: n.he.task.EntryPoint})
			}
		}
	}
	v2 := judge(t, jobs)
	repaired, total := map[string]int{}, map[string]int{}
	for _, c := range children {
		total[c.kind]++
		if v2[c.id].Passed {
			repaired[c.kind]++
		}
	}
	pass1 := rate(passed1, len(roots))
	rc := rate(repaired["failing_case"], total["failing_case"])
	re := rate(repaired["error"], total["error"])
	ru := rate(repaired["uninformative"], total["uninformative"])
	t.Logf("simulated policy (not a model) over HumanEval, %d tasks x G=%d, seed %d:", len(tasks), g, DefaultSimulatedConfig().Seed)
	t.Logf("  turn-1 pass rate           %.3f (%d/%d); mutants that fail the tests %.3f (%d/%d)",
		pass1, passed1, len(roots), rate(mutantFailed, mutants), mutantFailed, mutants)
	t.Logf("  repair rate, failing case  %.3f (%d/%d)", rc, repaired["failing_case"], total["failing_case"])
	t.Logf("  repair rate, error only    %.3f (%d/%d)", re, repaired["error"], total["error"])
	t.Logf("  repair rate, uninformative %.3f (%d/%d)", ru, repaired["uninformative"], total["uninformative"])

	if pass1 < 0.25 || pass1 > 0.6 {
		t.Errorf("turn-1 pass rate %.3f outside [0.25, 0.6]", pass1)
	}
	if rate(mutantFailed, mutants) < 0.7 {
		t.Errorf("only %.3f of mutants fail: mutations are too often harmless", rate(mutantFailed, mutants))
	}
	if total["failing_case"] < 100 || total["uninformative"] < 100 {
		t.Fatalf("too few refinements measured: %v", total)
	}
	if rc < ru+0.3 {
		t.Errorf("failing-case repair rate %.3f is not clearly above uninformative %.3f", rc, ru)
	}
	if re <= ru || re >= rc {
		t.Errorf("error-only repair rate %.3f should sit between %.3f and %.3f", re, ru, rc)
	}
}
