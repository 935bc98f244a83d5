package policy

import (
	"context"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/murphy-rl/murphy/topics"
)

func TestTokenize(t *testing.T) {
	cases := []struct {
		in     string
		pieces []string
	}{
		{"", nil},
		{"def f(x):", []string{"def", " ", "f", "(", "x", ")", ":"}},
		{"    return x_1 + 2\n", []string{"    ", "return", " ", "x_1", " ", "+", " ", "2", "\n"}},
		{"é→a", []string{"é", "→", "a"}},
	}
	for _, tc := range cases {
		ids, ends := TokenizeOffsets(tc.in)
		var got []string
		prev := 0
		for _, e := range ends {
			got = append(got, tc.in[prev:e])
			prev = e
		}
		if !reflect.DeepEqual(got, tc.pieces) || len(ids) != len(ends) {
			t.Errorf("pieces(%q) = %q, want %q", tc.in, got, tc.pieces)
		}
		if only := Tokenize(tc.in); !slices.Equal(only, ids) {
			t.Errorf("Tokenize(%q) = %v, TokenizeOffsets gives %v", tc.in, only, ids)
		}
		for i, p := range got {
			if len(p) == 1 && ids[i] != int32(p[0]) {
				t.Errorf("one-byte piece %q has id %d", p, ids[i])
			}
			if ids[i] < 0 || ids[i] >= VocabSize {
				t.Errorf("id %d out of range", ids[i])
			}
		}
	}
	if !reflect.DeepEqual(Tokenize("return x"), Tokenize("return x")) || Tokenize("return")[0] == Tokenize("retur")[0] {
		t.Fatal("tokenizer not deterministic or not discriminating")
	}
}

func TestExtractCode(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"bare text", "def f():\n    return 1\n\n", "def f():\n    return 1\n"},
		{"python fence", "Here:\n```python\ndef f():\n    return 1\n```\nDone.", "def f():\n    return 1\n"},
		{"prefers python over longer shell", "```bash\nrun this long command please now\n```\n```py\nx = 1\n```", "x = 1\n"},
		{"longest python block", "```python\nx = 1\n```\ntext\n```python\ndef f():\n    return 2\n```", "def f():\n    return 2\n"},
		{"untagged", "```\nprint(1)\n```", "print(1)\n"},
		{"other tag only", "```text\nhello\n```", "hello\n"},
		{"unterminated fence", "Sure.\n```python\ndef f():\n    return", "def f():\n    return\n"},
		{"tilde fence", "~~~python\nx = 2\n~~~\n", "x = 2\n"},
		{"think removed", "<think>```python\nwrong = 1\n```</think>```python\nright = 1\n```", "right = 1\n"},
		{"unclosed think", "x = 1\n<think>pondering", "x = 1\n"},
		{"empty", "  \n", ""},
		{"crlf", "```python\r\nx = 1\r\n```", "x = 1\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ExtractCode(tc.in); got != tc.want {
				t.Fatalf("ExtractCode = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestClassifyFeedback(t *testing.T) {
	cases := []struct {
		in   string
		want FeedbackKind
	}{
		{"", FeedbackNone},
		{"wrong_answer 2/5\ninput: f(3)\nexpected: 6\nactual: 5", FeedbackFailingCase},
		{"Test 2 failed. args: (1, 2) expected 3 got: 4", FeedbackFailingCase},
		{"runtime_error\nTraceback (most recent call last):\n  File ...\nNameError: name 'lenght' is not defined", FeedbackError},
		{"compile_error: SyntaxError: expected ':'", FeedbackError},
		{"timeout: the program did not finish within 2s", FeedbackUninformative},
		{"TimeoutError after 2s", FeedbackUninformative},
		{"wrong_answer: 0/3 tests passed", FeedbackUninformative},
		{"INPUT: f(3)\nEXPECTED: 6\nGOT: 5", FeedbackFailingCase},
		{"VALUEERROR raised", FeedbackError},
		{"Unhandled Exception in main", FeedbackError},
		{"AssertionError", FeedbackError},
		{"expected 6", FeedbackUninformative},
		{"input: 1 got: 2", FeedbackUninformative},
	}
	for _, tc := range cases {
		if got := ClassifyFeedback(tc.in); got != tc.want {
			t.Errorf("ClassifyFeedback(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

const refProgram = `from typing import List


def below_zero(operations: List[int]) -> bool:
    """ Detect if balance falls below zero. "a < b" stays.
    >>> below_zero([1, 2, -4, 5])
    True
    """
    if not operations:
        return False
    balance = 0
    for op in operations:
        balance += op
        if balance < 0:
            return True
    return False
`

func TestMutations(t *testing.T) {
	docstring := `""" Detect if balance falls below zero. "a < b" stays.`
	for _, m := range append(PlausibleMutations(), BrokenMutations()...) {
		t.Run(string(m), func(t *testing.T) {
			seen := map[string]bool{}
			shared := newMutator() // its remembered analysis gives what a fresh one does
			for seed := uint64(0); seed < 20; seed++ {
				out, ok := newMutator().mutate(refProgram, m, "below_zero", rand.New(rand.NewPCG(seed, 1)))
				if !ok {
					t.Fatalf("%s does not apply", m)
				}
				if again, _ := shared.mutate(refProgram, m, "below_zero", rand.New(rand.NewPCG(seed, 1))); again != out {
					t.Fatalf("seed %d: a mutator that analysed the source before gives another mutant", seed)
				}
				if out == refProgram {
					t.Fatal("mutant equals the reference")
				}
				if !strings.Contains(out, docstring) || !strings.Contains(out, ">>> below_zero([1, 2, -4, 5])") {
					t.Fatalf("mutation touched the docstring:\n%s", out)
				}
				seen[out] = true
			}
			// The reference has one guard, one operator and one call-free
			// body; the other mutations have several places to act.
			if want := map[Mutation]int{OffByOne: 3, WrongReturn: 2, SyntaxError: 3}[m]; len(seen) < want {
				t.Fatalf("%s gives %d distinct mutants, want >= %d", m, len(seen), want)
			}
		})
	}
	// A guard with an else branch is not a droppable edge case.
	if _, ok := newMutator().mutate("def f(x):\n    if x:\n        return 1\n    else:\n        return 2\n", MissingEdgeCase, "f", rand.New(rand.NewPCG(1, 1))); ok {
		t.Fatal("dropped an if with an else")
	}
	// Dropping the only statement of a body is not allowed.
	if _, ok := newMutator().mutate("def f(x):\n    if x: return 1\n", MissingEdgeCase, "f", rand.New(rand.NewPCG(1, 1))); ok {
		t.Fatal("emptied a function body")
	}
}

func rootPrompt(task *topics.Task, g int) *topics.Prompt {
	tree := topics.TreeID("run", task.TaskID, 0)
	return &topics.Prompt{
		SchemaVersion: topics.SchemaVersion,
		TreeSpec:      topics.TreeSpec{MaxTurns: 3, GroupSizes: []int{g}},
		TreeID:        tree, TaskID: task.TaskID, GroupID: topics.RootID(tree),
		Turn: 1, GroupSize: g, Text: task.Prompt,
	}
}

func nodeIDs(p *topics.Prompt) []string {
	ids := make([]string, p.GroupSize)
	for i := range ids {
		ids[i] = topics.NodeID(p.TreeID, p.GroupID, i)
	}
	return ids
}

func TestSimulatedDeterministic(t *testing.T) {
	task := &topics.Task{TaskID: "t/1", Kind: topics.KindPythonFunction, EntryPoint: "below_zero",
		Prompt: "def below_zero(operations):\n", Reference: refProgram}
	cfg := DefaultSimulatedConfig()
	cfg.Seed = 42
	pol, err := NewSimulated(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := rootPrompt(task, 16)
	ids := nodeIDs(p)
	a, err := pol.Generate(context.Background(), Request{Prompt: p, Task: task, NodeIDs: ids})
	if err != nil {
		t.Fatal(err)
	}
	// Same seed, node ids asked in another order and one by one: same samples.
	for _, i := range []int{15, 3, 0, 7} {
		b, err := pol.Generate(context.Background(), Request{Prompt: p, Task: task, NodeIDs: ids[i : i+1]})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a[i], b[0]) {
			t.Fatalf("sample %d differs when drawn alone", i)
		}
	}
	cfg.Seed = 43
	other, _ := NewSimulated(cfg)
	c, _ := other.Generate(context.Background(), Request{Prompt: p, Task: task, NodeIDs: ids})
	if reflect.DeepEqual(a, c) {
		t.Fatal("another seed gives the same group")
	}
	var refs, distinct = 0, map[string]bool{}
	for _, s := range a {
		if s.Code == refProgram {
			refs++
		}
		distinct[s.Code] = true
		if len(s.TokenIDs) == 0 || len(s.TokenIDs) != len(s.Logprobs) || s.FinishReason != "stop" || len(s.PromptTokenIDs) == 0 {
			t.Fatalf("sample columns: %d ids %d logprobs finish %q", len(s.TokenIDs), len(s.Logprobs), s.FinishReason)
		}
		if !reflect.DeepEqual(s.TokenIDs, Tokenize(s.Text)) {
			t.Fatal("token ids are not the simple tokenizer's")
		}
	}
	if refs == 0 || refs == len(a) || len(distinct) < 3 {
		t.Fatalf("group of 16 has %d references and %d distinct programs", refs, len(distinct))
	}
	if pol.Name() != SimulatedName || !strings.Contains(pol.Name(), "not a model") {
		t.Fatal("simulated policy must say it is not a model")
	}
	if _, err := pol.Generate(context.Background(), Request{Prompt: p, NodeIDs: ids}); err == nil {
		t.Fatal("no task accepted")
	}
}

func TestSimulatedTruncation(t *testing.T) {
	task := &topics.Task{TaskID: "t/1", Kind: topics.KindPythonFunction, EntryPoint: "below_zero", Prompt: "x", Reference: refProgram}
	cfg := DefaultSimulatedConfig()
	cfg.MaxTokens = 10
	pol, _ := NewSimulated(cfg)
	p := rootPrompt(task, 4)
	ss, err := pol.Generate(context.Background(), Request{Prompt: p, Task: task, NodeIDs: nodeIDs(p)})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ss {
		if s.FinishReason != "length" || len(s.TokenIDs) != 10 || !reflect.DeepEqual(Tokenize(s.Text), s.TokenIDs) {
			t.Fatalf("finish %q, %d tokens", s.FinishReason, len(s.TokenIDs))
		}
	}
}

func TestSimulatedConfigValidate(t *testing.T) {
	c := DefaultSimulatedConfig()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	c.PRepairError = 1.5
	if c.Validate() == nil {
		t.Fatal("p > 1 accepted")
	}
}
