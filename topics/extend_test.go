package topics

import (
	"bytes"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"
)

// The mirrors of Execution's and Sample's own fields have their names,
// types and tags in their order: a field added to a record and not to its
// mirror would be lost on the reusing path.
func TestExtensionFieldsMatchRecords(t *testing.T) {
	for _, c := range []struct {
		record, own reflect.Type
	}{
		{reflect.TypeFor[Execution](), reflect.TypeFor[executionOwn]()},
		{reflect.TypeFor[Sample](), reflect.TypeFor[sampleOwn]()},
		{reflect.TypeFor[CreditedSample](), reflect.TypeFor[creditedOwn]()},
	} {
		var declared []reflect.StructField
		for f := range c.record.Fields() {
			if !f.Anonymous {
				declared = append(declared, f)
			}
		}
		if len(declared) != c.own.NumField() {
			t.Fatalf("%s declares %d fields, its mirror %d", c.record, len(declared), c.own.NumField())
		}
		for i, f := range declared {
			m := c.own.Field(i)
			if f.Name != m.Name || f.Type != m.Type || f.Tag != m.Tag {
				t.Errorf("%s field %d: %s %s %q, mirror %s %s %q", c.record, i, f.Name, f.Type, f.Tag, m.Name, m.Type, m.Tag)
			}
		}
	}
}

func executionOf(t *testing.T, candidate []byte) *Execution {
	t.Helper()
	var c Candidate
	if err := Decode(candidate, &c); err != nil {
		t.Fatal(err)
	}
	return &Execution{Candidate: c, Status: StatusWrongAnswer, TestsPassed: 1, TestsTotal: 3, PassRate: 1.0 / 3,
		Feedback: "expected 2\ngot \"3\"", DurationMS: 12,
		Results:    []TestResult{{Index: 0, Status: "passed"}, {Index: 1, Status: "wrong_answer", Actual: "3"}},
		ExecutedAt: time.Unix(1700000100, 5).UTC()}
}

// reusedLikeEncode checks that got, the reusing encoding of r, starts with
// the bytes of base (the record r extends) and decodes to what Encode(r)
// decodes to.
func reusedLikeEncode[R any, P interface {
	*R
	Record
}](t *testing.T, base, got []byte, r P) {
	t.Helper()
	if !bytes.HasPrefix(got, base[:len(base)-1]) {
		t.Fatalf("%s: the bytes of the record it extends were not reused", r.recordName())
	}
	want, err := Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	var g, w R
	if err := Decode(got, P(&g)); err != nil {
		t.Fatalf("reused encoding does not decode: %v\n%.300s", err, got)
	}
	if err := Decode(want, P(&w)); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("reused encoding decodes to\n%+v\nwant\n%+v", g, w)
	}
}

func TestEncodeExecutionReusesTheCandidate(t *testing.T) {
	cb, err := Encode(sampleCandidate(50))
	if err != nil {
		t.Fatal(err)
	}
	ex := executionOf(t, cb)
	got, err := EncodeExecution(ex, cb)
	if err != nil {
		t.Fatal(err)
	}
	reusedLikeEncode[Execution](t, cb, got, ex)

	// And on to a sample.
	var back Execution
	if err := Decode(got, &back); err != nil {
		t.Fatal(err)
	}
	s := &Sample{Execution: back, Route: RouteTrain, FailureCause: "wrong_answer", Reward: 0.25, InGroupStats: true,
		ChildrenRequested: 2, StepScores: Float32s{0.5}, LossWeights: make(Float32s, 50), GovernedAt: time.Unix(1700000200, 0).UTC()}
	gotS, err := EncodeSample(s, got)
	if err != nil {
		t.Fatal(err)
	}
	reusedLikeEncode[Sample](t, got, gotS, s)
}

// A candidate in any other form (version 1, indented, fields in another
// order) is not reused: the execution is encoded whole, byte for byte as
// Encode writes it.
func TestEncodeExecutionEncodesOtherFormsWhole(t *testing.T) {
	c := sampleCandidate(8)
	cb, err := Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	var indented bytes.Buffer
	if err := json.Indent(&indented, cb, "", "  "); err != nil {
		t.Fatal(err)
	}
	v1 := strings.Replace(string(cb), `"schema_version":2`, `"schema_version":1`, 1)
	// schema_version last instead of first
	reordered := "{" + strings.TrimSuffix(string(cb[len(canonicalPrefix):]), "}") + `,"schema_version":2}`
	if !json.Valid([]byte(reordered)) {
		t.Fatal("reordered candidate is not JSON")
	}
	for name, in := range map[string][]byte{"indented": indented.Bytes(), "version 1": []byte(v1), "reordered": []byte(reordered)} {
		ex := executionOf(t, cb)
		got, err := EncodeExecution(ex, in)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want, _ := Encode(ex)
		if !bytes.Equal(got, want) {
			t.Errorf("%s: not encoded whole", name)
		}
	}
}

// The record is validated as Encode validates it; an input field that is
// also one of the stage's own fields is overridden by the stage's value;
// an unknown input field is passed on.
func TestEncodeExecutionValidatesAndOverrides(t *testing.T) {
	cb, _ := Encode(sampleCandidate(4))
	ex := executionOf(t, cb)
	ex.Status = "exploded"
	if _, err := EncodeExecution(ex, cb); err == nil {
		t.Fatal("an execution with an unknown status was encoded")
	}
	ex.Status = StatusPassed
	ex.TestsPassed = 3
	eb, err := EncodeExecution(ex, cb)
	if err != nil {
		t.Fatal(err)
	}
	s := &Sample{Execution: *ex, Route: RouteTrain, LossWeights: make(Float32s, 3)} // 4 response tokens
	if _, err := EncodeSample(s, eb); err == nil {
		t.Fatal("a sample with 3 loss weights for 4 tokens was encoded")
	}
	s.LossWeights, s.Route = make(Float32s, 4), "sideways"
	if _, err := EncodeSample(s, eb); err == nil {
		t.Fatal("a sample with an unknown route was encoded")
	}
	withExtra := append(bytes.TrimSuffix(cb, []byte("}")), []byte(`,"status":"timeout","x_trace":"abc"}`)...)
	got, err := EncodeExecution(ex, withExtra)
	if err != nil {
		t.Fatal(err)
	}
	var back Execution
	if err := Decode(got, &back); err != nil || back.Status != StatusPassed {
		t.Fatalf("status %q (%v), want the stage's own", back.Status, err)
	}
	var generic map[string]any
	if err := json.Unmarshal(got, &generic); err != nil || generic["x_trace"] != "abc" || generic["status"] != StatusPassed {
		t.Fatalf("unknown field not passed on or status not overridden: %v %v", err, generic["status"])
	}
}

// creditedTreeOf returns a tree of n samples of one group and each
// sample's encoding.
func creditedTreeOf(t *testing.T, n int) (*CreditedTree, [][]byte) {
	t.Helper()
	tree := &CreditedTree{SchemaVersion: SchemaVersion, Config: CreditConfig{Strategy: "mars", Gamma: 0.9, Z: "1",
		Advantage: "grpo", Epsilon: 1e-6, PruneOrder: []string{"intrap"}, IntrapK: 2}, PrunedNodes: 1,
		CreditedAt: time.Unix(1700000300, 7).UTC()}
	var raws [][]byte
	for i := range n {
		c := sampleCandidate(6 + i)
		c.Index = i
		c.NodeID = NodeID(c.TreeID, c.GroupID, i)
		cb, err := Encode(c)
		if err != nil {
			t.Fatal(err)
		}
		ex := executionOf(t, cb)
		s := Sample{Execution: *ex, Route: RouteTrain, FailureCause: "wrong_answer", Reward: float64(i) / 3,
			InGroupStats: true, LossWeights: make(Float32s, 6+i), GovernedAt: time.Unix(1700000200, 0).UTC()}
		sb, err := Encode(&s)
		if err != nil {
			t.Fatal(err)
		}
		var back Sample
		if err := Decode(sb, &back); err != nil {
			t.Fatal(err)
		}
		tree.TreeID, tree.TaskID = back.TreeID, back.TaskID
		tree.Samples = append(tree.Samples, CreditedSample{Sample: back, CreditedReward: 0.1 * float64(i+1), Advantage: float64(i) - 1.5})
		raws = append(raws, sb)
	}
	return tree, raws
}

// The tree reuses each sample's bytes and encodes, byte for byte, what
// Encode writes; a sample without bytes, with bytes in another form, or
// past the end of samples is encoded whole.
func TestEncodeCreditedTreeReusesSamples(t *testing.T) {
	tree, raws := creditedTreeOf(t, 4)
	want, err := Encode(tree)
	if err != nil {
		t.Fatal(err)
	}
	var indented bytes.Buffer
	if err := json.Indent(&indented, raws[2], "", "  "); err != nil {
		t.Fatal(err)
	}
	for name, in := range map[string][][]byte{
		"all":        raws,
		"none":       nil,
		"one nil":    {raws[0], nil, raws[2], raws[3]},
		"short":      raws[:2],
		"other form": {raws[0], raws[1], indented.Bytes(), raws[3]},
	} {
		got, err := EncodeCreditedTree(tree, in)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: encoded\n%.400s\nwant\n%.400s", name, got, want)
		}
	}

	// Reused means the bytes themselves: a field unknown to this build is
	// passed on.
	extra := append(bytes.TrimSuffix(raws[1], []byte("}")), []byte(`,"x_trace":"abc"}`)...)
	got, err := EncodeCreditedTree(tree, [][]byte{raws[0], extra, raws[2], raws[3]})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(got, extra[:len(extra)-1]) {
		t.Fatal("the sample's bytes were not reused")
	}
	var back CreditedTree
	if err := Decode(got, &back); err != nil {
		t.Fatal(err)
	}
	var w CreditedTree
	if err := Decode(want, &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, w) {
		t.Fatalf("decodes to\n%+v\nwant\n%+v", back, w)
	}
	var generic struct {
		Samples []map[string]any `json:"samples"`
	}
	if err := json.Unmarshal(got, &generic); err != nil || len(generic.Samples) != 4 || generic.Samples[1]["x_trace"] != "abc" {
		t.Fatalf("unknown field not passed on: %v", err)
	}
}

// The tree is validated as Encode validates it, and a tree of no samples
// encodes as Encode writes it.
func TestEncodeCreditedTreeValidates(t *testing.T) {
	tree, raws := creditedTreeOf(t, 2)
	tree.Samples[1].Advantage = math.NaN()
	if _, err := EncodeCreditedTree(tree, raws); err == nil {
		t.Fatal("a tree with a NaN advantage was encoded")
	}
	tree.Samples[1].Advantage = math.Inf(1)
	if _, err := EncodeCreditedTree(tree, raws); err == nil {
		t.Fatal("a tree with an infinite advantage was encoded")
	}
	tree.Samples[1].Advantage = 0
	tree.SchemaVersion = 1
	if _, err := EncodeCreditedTree(tree, raws); err == nil {
		t.Fatal("a tree of another version was encoded")
	}
	tree.SchemaVersion = SchemaVersion
	tree.Samples[0].TreeID = "another"
	if _, err := EncodeCreditedTree(tree, raws); err == nil {
		t.Fatal("a tree holding another tree's sample was encoded")
	}
	empty := &CreditedTree{SchemaVersion: SchemaVersion, TreeID: "t1", TaskID: "x", Incomplete: true}
	got, err := EncodeCreditedTree(empty, nil)
	want, _ := Encode(empty)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("empty tree: %v\n%s\nwant\n%s", err, got, want)
	}
}

// A sandbox error's kind travels with the execution (govern routes on it).
func TestEncodeExecutionKeepsTheSandboxErrorKind(t *testing.T) {
	cb, err := Encode(sampleCandidate(5))
	if err != nil {
		t.Fatal(err)
	}
	ex := executionOf(t, cb)
	ex.Status, ex.SandboxError, ex.SandboxErrorKind = StatusSandboxError, "worker died", SandboxErrorWorker
	got, err := EncodeExecution(ex, cb)
	if err != nil {
		t.Fatal(err)
	}
	var back Execution
	if err := Decode(got, &back); err != nil {
		t.Fatal(err)
	}
	if back.SandboxErrorKind != SandboxErrorWorker || back.SandboxError != "worker died" {
		t.Fatalf("decoded %q %q", back.SandboxErrorKind, back.SandboxError)
	}
}
