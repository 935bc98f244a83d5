package topics

import (
	"errors"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"
)

func sampleCandidate(nTokens int) *Candidate {
	tree := TreeID("run1", "HumanEval/0", 0)
	c := &Candidate{
		SchemaVersion: SchemaVersion,
		TreeSpec:      TreeSpec{MaxTurns: 3, GroupSizes: []int{8, 4}, RewardPolicy: RewardPassRate},
		TreeID:        tree, TaskID: "HumanEval/0",
		GroupID: RootID(tree), Turn: 1, Index: 3, GroupSize: 8,
		PromptText:   strings.Repeat("def f(x):\n    ", 50),
		ResponseText: strings.Repeat("return x + 1\n", 400),
		Code:         "def f(x):\n    return x + 1\n",
		FinishReason: "stop", Policy: "simulated", PolicyVersion: 7,
		GeneratedAt: time.Unix(1700000000, 0).UTC(),
	}
	c.NodeID = NodeID(tree, c.GroupID, c.Index)
	r := rand.New(rand.NewPCG(1, 2))
	c.PromptTokenIDs = make([]int32, 300)
	for i := range c.PromptTokenIDs {
		c.PromptTokenIDs[i] = int32(r.IntN(150000))
	}
	c.ResponseTokenIDs = make([]int32, nTokens)
	c.ResponseLogprobs = make([]float32, nTokens)
	for i := range c.ResponseTokenIDs {
		c.ResponseTokenIDs[i] = int32(r.IntN(150000))
		c.ResponseLogprobs[i] = -r.Float32() * 5
	}
	return c
}

func TestCandidateRoundTrip(t *testing.T) {
	c := sampleCandidate(2000)
	b, err := Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	var got Candidate
	if err := Decode(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.NodeID != c.NodeID || len(got.ResponseTokenIDs) != 2000 || got.ResponseLogprobs[17] != c.ResponseLogprobs[17] ||
		got.ResponseTokenIDs[1999] != c.ResponseTokenIDs[1999] || !got.GeneratedAt.Equal(c.GeneratedAt) || got.GroupSizeAt(5) != 4 {
		t.Fatalf("round trip lost data: %+v", got.TreeSpec)
	}
}

func TestDecodeRejects(t *testing.T) {
	good := sampleCandidate(10)
	enc := func(mut func(c *Candidate)) []byte {
		c := *good
		mut(&c)
		b, err := jsonMarshalUnchecked(&c)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cases := []struct {
		name string
		in   []byte
		kind ErrorKind
	}{
		{"garbage", []byte("\x00\xffnot json"), ErrMalformed},
		{"empty", nil, ErrMalformed},
		{"wrong type", []byte(`[1,2,3]`), ErrMalformed},
		{"unknown version", enc(func(c *Candidate) { c.SchemaVersion = 99 }), ErrUnknownVersion},
		{"no version", []byte(`{"tree_id":"x"}`), ErrUnknownVersion},
		{"missing tree", enc(func(c *Candidate) { c.TreeID = "" }), ErrMissingField},
		{"forged node id", enc(func(c *Candidate) { c.NodeID = "n000" }), ErrInvalidField},
		{"turn past max", enc(func(c *Candidate) { c.Turn = 9 }), ErrInvalidField},
		{"logprob mismatch", enc(func(c *Candidate) { c.ResponseLogprobs = c.ResponseLogprobs[:3] }), ErrInvalidField},
		{"oversized", make([]byte, MaxRecordBytes+1), ErrOversized},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var c Candidate
			err := Decode(tc.in, &c)
			var te *Error
			if !errors.As(err, &te) {
				t.Fatalf("want *Error, got %v", err)
			}
			if te.Kind != tc.kind {
				t.Fatalf("kind = %s, want %s (%v)", te.Kind, tc.kind, err)
			}
			if !IsPoison(err) {
				t.Fatal("record errors must be poison")
			}
		})
	}
}

func TestNodeIDsDeterministicAndDistinct(t *testing.T) {
	tree := TreeID("r", "t", 0)
	root := RootID(tree)
	seen := map[string]bool{root: true}
	for i := 0; i < 8; i++ {
		id := NodeID(tree, root, i)
		if id != NodeID(tree, root, i) {
			t.Fatal("not deterministic")
		}
		if seen[id] {
			t.Fatalf("collision at %d", i)
		}
		seen[id] = true
		for j := 0; j < 4; j++ {
			c := NodeID(tree, id, j)
			if seen[c] {
				t.Fatal("collision in children")
			}
			seen[c] = true
		}
	}
	if NodeID("a", "bc", 1) == NodeID("ab", "c", 1) {
		t.Fatal("ambiguous concatenation")
	}
}

func TestCatalog(t *testing.T) {
	c := DefaultCatalog()
	if c.Topic(Samples) != "murphy.samples" {
		t.Fatal(c.Topic(Samples))
	}
	if n, ok := c.Lookup("murphy.samples"); !ok || n != Samples {
		t.Fatal("lookup")
	}
	if _, ok := c.Lookup("other.samples"); ok {
		t.Fatal("foreign prefix accepted")
	}
	if !c.Spec(Tasks).Compacted || c.Spec(Samples).Compacted || c.Spec(Tasks).Key != "task_id" {
		t.Fatal("specs")
	}
}

// BenchmarkCandidateCodec measures encode+decode of a realistic candidate
// (2,000 response tokens with logprobs) and reports it against a plain copy
// of the same number of bytes.
func BenchmarkCandidateCodec(b *testing.B) {
	c := sampleCandidate(2000)
	enc, _ := Encode(c)
	b.SetBytes(int64(len(enc)))
	b.ReportAllocs()
	for b.Loop() {
		buf, err := Encode(c)
		if err != nil {
			b.Fatal(err)
		}
		var out Candidate
		if err := Decode(buf, &out); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "us/roundtrip")
}

// A completion round-trips, and one without a tree id or with a negative
// sample count is refused on both sides of the wire.
func TestCompletionRecord(t *testing.T) {
	at := time.Unix(1700000000, 0).UTC()
	c := &Completion{SchemaVersion: SchemaVersion, TreeID: "run/t/0", TaskID: "t", Incomplete: true, Samples: 7, CreditedAt: at}
	b, err := Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	var got Completion
	if err := Decode(b, &got); err != nil {
		t.Fatal(err)
	}
	if got != *c {
		t.Fatalf("round trip: %+v, want %+v", got, *c)
	}
	for _, tc := range []struct {
		name string
		mut  func(*Completion)
		kind ErrorKind
	}{
		{"no tree id", func(c *Completion) { c.TreeID = "" }, ErrMissingField},
		{"negative samples", func(c *Completion) { c.Samples = -1 }, ErrInvalidField},
	} {
		bad := *c
		tc.mut(&bad)
		if _, err := Encode(&bad); err == nil {
			t.Errorf("%s: encoded", tc.name)
		}
		raw, err := jsonMarshalUnchecked(&bad)
		if err != nil {
			t.Fatal(err)
		}
		var te *Error
		if err := Decode(raw, &Completion{}); !errors.As(err, &te) || te.Kind != tc.kind {
			t.Errorf("%s: decode error %v, want kind %s", tc.name, err, tc.kind)
		}
	}
}

// TestDecodePythonProgressAndVersion decodes the records the Python
// reader's progress module writes (python/murphy_reader/progress.py).
func TestDecodePythonProgressAndVersion(t *testing.T) {
	var p TrainerProgress
	b := []byte(`{"schema_version": 2, "trainer_id": "a", "rank": 0, "group_id": "g", "policy_version": 4, "trees_per_version": 4, "consumed": {"0": 103, "1": 15}, "trees_consumed": 12, "rows_dropped": {"stale": 9, "duplicate_batch": 5}, "updated_at": "2026-12-01T18:00:00.123456Z", "max_staleness": 1, "rows_trained_staleness": {"0": 30, "1": 6}}`)
	if err := Decode(b, &p); err != nil || p.MaxStaleness == nil || *p.MaxStaleness != 1 || p.Consumed["0"] != 103 || p.UpdatedAt.IsZero() ||
		p.RowsTrainedStaleness["1"] != 6 {
		t.Fatalf("%+v: %v", p, err)
	}
	var u TrainerProgress
	if err := Decode([]byte(`{"schema_version": 2, "trainer_id": "b", "rank": 0, "policy_version": 1, "trees_per_version": 1, "consumed": {}, "updated_at": "2026-12-01T18:00:00Z"}`), &u); err != nil || u.MaxStaleness != nil {
		t.Fatalf("unbounded: %+v: %v", u, err)
	}
	if err := Decode([]byte(`{"schema_version": 2, "trainer_id": "c", "max_staleness": 1, "trees_per_version": 0, "updated_at": "2026-12-01T18:00:00Z"}`), &u); err == nil {
		t.Fatal("bounded progress without trees_per_version accepted")
	}
	var v PolicyVersion
	if err := Decode([]byte(`{"schema_version": 2, "version": 3, "model": "run-v3", "adapter": "", "checkpoint_uri": "/ckpt/3", "trainer_id": "", "created_at": "2026-12-01T18:00:00.5Z"}`), &v); err != nil || v.Model != "run-v3" {
		t.Fatalf("%+v: %v", v, err)
	}
	if err := Decode([]byte(`{"schema_version": 2, "version": 3, "model": " ", "created_at": "2026-12-01T18:00:00Z"}`), &v); err == nil {
		t.Fatal("version without a model accepted")
	}
}

// TestProgressRowsTrainedStaleness: the optional staleness counts of
// trained rows decode when present, are nil when absent (records of
// readers before the field), and must be versions >= 0 with rows >= 0.
func TestProgressRowsTrainedStaleness(t *testing.T) {
	const head = `{"schema_version": 2, "trainer_id": "a", "rank": 0, "policy_version": 4, "trees_per_version": 4, "consumed": {"0": 3}, "updated_at": "2026-12-01T18:00:00Z"`
	var p TrainerProgress
	if err := Decode([]byte(head+`, "rows_trained_staleness": {"0": 7, "1": 2, "12": 0}}`), &p); err != nil {
		t.Fatal(err)
	}
	if len(p.RowsTrainedStaleness) != 3 || p.RowsTrainedStaleness["0"] != 7 || p.RowsTrainedStaleness["1"] != 2 {
		t.Fatalf("rows_trained_staleness %v", p.RowsTrainedStaleness)
	}
	var old TrainerProgress
	if err := Decode([]byte(head+`}`), &old); err != nil || old.RowsTrainedStaleness != nil {
		t.Fatalf("without the field: %v, %v", old.RowsTrainedStaleness, err)
	}
	var empty TrainerProgress
	if err := Decode([]byte(head+`, "rows_trained_staleness": {}}`), &empty); err != nil || empty.RowsTrainedStaleness == nil {
		t.Fatalf("empty counts (a reader that trained nothing yet): %v, %v", empty.RowsTrainedStaleness, err)
	}
	for _, bad := range []string{`{"-1": 3}`, `{"x": 1}`, `{"1.5": 1}`, `{"": 1}`, `{"+2": 1}`, `{"2": -1}`} {
		var q TrainerProgress
		err := Decode([]byte(head+`, "rows_trained_staleness": `+bad+`}`), &q)
		var te *Error
		if !errors.As(err, &te) || te.Kind != ErrInvalidField || te.Field != "rows_trained_staleness" {
			t.Errorf("rows_trained_staleness %s: error %v, want an invalid rows_trained_staleness", bad, err)
		}
	}
	p.SchemaVersion = SchemaVersion
	b, err := Encode(&p)
	if err != nil {
		t.Fatal(err)
	}
	var back TrainerProgress
	if err := Decode(b, &back); err != nil || back.RowsTrainedStaleness["0"] != 7 {
		t.Fatalf("round trip %s: %v", b, err)
	}
	if got := StalenessBuckets(); len(got) == 0 || got[0] != 0 || !sort.Float64sAreSorted(got) {
		t.Errorf("StalenessBuckets %v: want sorted bounds from 0", got)
	}
}
