package govern

import (
	"bytes"
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/murphy-rl/murphy/topics"
)

func TestRefinementPrompt(t *testing.T) {
	ex := execution(failing(1))
	res, err := newGovernor(t, DefaultConfig()).Govern(context.Background(), ex, tasksWith(testTask()))
	if err != nil {
		t.Fatal(err)
	}
	p := res.Refinement
	if p == nil {
		t.Fatal("no refinement prompt")
	}
	checks := []struct {
		name string
		ok   bool
	}{
		{"parent is the node", p.ParentID == ex.NodeID},
		{"group is the node", p.GroupID == ex.NodeID},
		{"next turn", p.Turn == ex.Turn+1},
		{"group size of the next turn", p.GroupSize == ex.GroupSizeAt(2) && p.GroupSize == 2},
		{"tree and task", p.TreeID == ex.TreeID && p.TaskID == ex.TaskID},
		{"tree spec copied", p.MaxTurns == ex.MaxTurns && slices.Equal(p.GroupSizes, ex.GroupSizes) && p.RunID == ex.RunID && p.Seed == ex.Seed},
		{"feedback field", p.Feedback == ex.Feedback},
		{"parent code field", p.ParentCode == ex.Code},
		{"text has the task", strings.Contains(p.Text, strings.TrimSpace(testTask().Prompt))},
		{"text has the failed program", strings.Contains(p.Text, strings.TrimSpace(ex.Code))},
		{"text has the feedback", strings.Contains(p.Text, ex.Feedback)},
		{"text has the test count", strings.Contains(p.Text, "1 of 4 tests passed")},
		{"sample requests the children", res.Sample.ChildrenRequested == p.GroupSize},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s", c.name)
		}
	}
	if _, err := topics.Encode(p); err != nil {
		t.Fatalf("prompt does not encode: %v", err)
	}
	// The spec is a copy: changing the prompt's sizes leaves the sample alone.
	p.GroupSizes[0] = 99
	if res.Sample.GroupSizes[0] == 99 {
		t.Fatal("prompt shares the group sizes slice with the sample")
	}
}

// TestRefinementDeterministic: a replayed execution yields the same bytes,
// so the children it asks for get the same node ids.
func TestRefinementDeterministic(t *testing.T) {
	g := newGovernor(t, DefaultConfig())
	var first []byte
	for i := range 3 {
		res, err := g.Govern(context.Background(), execution(failing(2)), tasksWith(testTask()))
		if err != nil {
			t.Fatal(err)
		}
		b, err := topics.Encode(res.Refinement)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = b
		} else if !bytes.Equal(first, b) {
			t.Fatalf("replay %d produced a different prompt", i)
		}
	}
}

func TestRefinementTemplateConfigurable(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Expansion.Template = "TASK {{.TaskID}} turn {{.NextTurn}}/{{.MaxTurns}} [{{.Cause}}]\n{{.Task}}\nCODE\n{{.Code}}\nFEEDBACK\n{{.Feedback}}"
	res, err := newGovernor(t, cfg).Govern(context.Background(), execution(failing(0)), tasksWith(testTask()))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Refinement.Text, "TASK t1 turn 2/3 [wrong_answer]\n") {
		t.Fatalf("template not used:\n%s", res.Refinement.Text)
	}
}

// TestRefinementLengthCap: the prompt fits the cap, keeps the whole task,
// the head of the feedback (status and failing case) and its tail (the last
// traceback line), and the head and tail of the program.
func TestRefinementLengthCap(t *testing.T) {
	task := testTask()
	task.Prompt = strings.Repeat("Task statement line.\n", 60) // 1,260 bytes
	feedback := "runtime_error: 0/4 passed\nadd(1, 2) raised:\nTraceback (most recent call last):\n" +
		strings.Repeat("  File \"x.py\", line 3, in add\n", 400) + "RecursionError: maximum recursion depth exceeded\n"
	code := "def add(a, b):\n" + strings.Repeat("    x = 1  # filler\n", 800) + "    return add(a, b)\n"
	ex := execution(func(e *topics.Execution) {
		e.Status, e.TestsPassed, e.Feedback, e.Code = topics.StatusRuntimeError, 0, feedback, code
	})
	for _, capBytes := range []int{3000, 4096, 8192} {
		cfg := DefaultConfig()
		cfg.Expansion.MaxPromptBytes = capBytes
		res, err := newGovernor(t, cfg).Govern(context.Background(), ex, tasksWith(task))
		if err != nil {
			t.Fatal(err)
		}
		text := res.Refinement.Text
		for _, want := range []string{strings.TrimSpace(task.Prompt), "runtime_error: 0/4 passed", "RecursionError: maximum recursion depth exceeded",
			"def add(a, b):", "return add(a, b)", "bytes omitted"} {
			if !strings.Contains(text, want) {
				t.Errorf("cap %d: prompt lost %q", capBytes, want)
			}
		}
		if len(text) > capBytes || len(text) < capBytes*9/10 {
			t.Errorf("cap %d: prompt is %d bytes", capBytes, len(text))
		}
		// The fields keep the originals; only the text is shortened.
		if res.Refinement.Feedback != feedback || res.Refinement.ParentCode != code {
			t.Error("prompt fields were shortened")
		}
	}
	// Short feedback is kept whole and the program gets the rest.
	ex2 := execution(func(e *topics.Execution) { e.Status, e.TestsPassed, e.Code = topics.StatusRuntimeError, 0, code })
	cfg := DefaultConfig()
	cfg.Expansion.MaxPromptBytes = 4096
	res, err := newGovernor(t, cfg).Govern(context.Background(), ex2, tasksWith(task))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Refinement.Text, ex2.Feedback) || len(res.Refinement.Text) < 4000 {
		t.Errorf("short feedback not kept or budget unused (%d bytes)", len(res.Refinement.Text))
	}
	// A task longer than the cap is kept; feedback and program are dropped.
	task.Prompt = strings.Repeat("Very long task.\n", 400)
	res, err = newGovernor(t, cfg).Govern(context.Background(), ex, tasksWith(task))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Refinement.Text, strings.TrimSpace(task.Prompt)) || strings.Contains(res.Refinement.Text, "RecursionError") {
		t.Error("oversized task: want the task alone")
	}
}

func TestHeadTailUTF8(t *testing.T) {
	s := strings.Repeat("héllo wörld ", 200)
	for n := 40; n < 400; n += 7 {
		out := headTail(s, n)
		if len(out) > n || !strings.Contains(out, "omitted") {
			t.Fatalf("n=%d: %d bytes", n, len(out))
		}
		if !utf8ValidString(out) {
			t.Fatalf("n=%d: invalid UTF-8", n)
		}
	}
}

func TestEffectiveGroupSizes(t *testing.T) {
	cases := []struct {
		spec topics.TreeSpec
		want []int
	}{
		{topics.TreeSpec{MaxTurns: 3, GroupSizes: []int{8, 4}}, []int{8, 4, 4}},
		{topics.TreeSpec{MaxTurns: 3, GroupSizes: []int{4, 2}, MaxNodes: 10}, []int{4, 1, 0}},
		{topics.TreeSpec{MaxTurns: 3, GroupSizes: []int{4, 2}, MaxNodes: 12}, []int{4, 2, 0}},
		{topics.TreeSpec{MaxTurns: 3, GroupSizes: []int{4, 2}, MaxNodes: 28}, []int{4, 2, 2}},
		{topics.TreeSpec{MaxTurns: 3, GroupSizes: []int{4, 2}, MaxNodes: 27}, []int{4, 2, 1}},
		{topics.TreeSpec{MaxTurns: 2, GroupSizes: []int{8}, MaxNodes: 8}, []int{8, 0}},
		{topics.TreeSpec{MaxTurns: 1, GroupSizes: []int{8}}, []int{8}},
	}
	for _, tc := range cases {
		if got := EffectiveGroupSizes(tc.spec); !slices.Equal(got, tc.want) {
			t.Errorf("%+v: %v, want %v", tc.spec, got, tc.want)
		}
	}
	// Property: the worst-case tree never exceeds the cap (when the root
	// group fits it), and no turn could take one more child.
	r := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		s := topics.TreeSpec{MaxTurns: 1 + r.IntN(5), MaxNodes: r.IntN(300)}
		for range 1 + r.IntN(4) {
			s.GroupSizes = append(s.GroupSizes, 1+r.IntN(8))
		}
		if s.MaxNodes > 0 && s.MaxNodes < s.GroupSizes[0] {
			s.MaxNodes = s.GroupSizes[0]
		}
		g := EffectiveGroupSizes(s)
		total, level := 0, 1
		for ti, gt := range g {
			if gt > s.GroupSizeAt(ti+1) {
				t.Fatalf("%+v: turn %d size %d above the spec", s, ti+1, gt)
			}
			prev := level
			if s.MaxNodes > 0 && ti > 0 && prev > 0 && gt < s.GroupSizeAt(ti+1) && total+prev*(gt+1) <= s.MaxNodes {
				t.Fatalf("%+v: turn %d could take one more child (%v)", s, ti+1, g)
			}
			level *= gt
			total += level
		}
		if s.MaxNodes > 0 && total > s.MaxNodes {
			t.Fatalf("%+v: worst case %d nodes > cap (%v)", s, total, g)
		}
	}
}

// TestMaxNodesWorstCase grows a whole tree where every node fails, the way
// the pipeline would, and counts its nodes.
func TestMaxNodesWorstCase(t *testing.T) {
	for _, capNodes := range []int{0, 5, 9, 20, 27, 100} {
		g := newGovernor(t, DefaultConfig())
		spec := treeSpec()
		spec.MaxNodes = capNodes
		tree := topics.TreeID("run", "t1", 0)
		type node struct {
			parent string
			turn   int
			size   int
		}
		queue := []node{{"", 1, spec.GroupSizeAt(1)}}
		count := 0
		for len(queue) > 0 {
			n := queue[0]
			queue = queue[1:]
			for i := range n.size {
				count++
				ex := execution(failing(0), func(e *topics.Execution) {
					e.TreeSpec = spec
					e.Turn, e.ParentID, e.GroupID, e.Index, e.GroupSize = n.turn, n.parent, topics.ParentNode(tree, n.parent), i, n.size
				})
				res, err := g.Govern(context.Background(), ex, tasksWith(testTask()))
				if err != nil {
					t.Fatal(err)
				}
				if p := res.Refinement; p != nil {
					queue = append(queue, node{p.ParentID, p.Turn, p.GroupSize})
				}
			}
		}
		want := 4 + 8 + 16 // turns of 4, 4·2, 4·2·2
		if capNodes > 0 {
			want = min(want, capNodes)
		}
		if capNodes > 0 && count > capNodes {
			t.Fatalf("cap %d: tree grew to %d nodes", capNodes, count)
		}
		if capNodes == 0 && count != want {
			t.Fatalf("uncapped tree has %d nodes, want %d", count, want)
		}
	}
}

func utf8ValidString(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }
