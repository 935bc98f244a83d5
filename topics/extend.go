package topics

import (
	"bytes"
	"fmt"
	"time"

	json "github.com/goccy/go-json"
)

// A stage that adds fields to the record it read (execute: a candidate
// becomes an execution; govern: an execution becomes a sample; credit: each
// sample of a tree becomes a credited sample) writes the record it read
// again, unchanged, ahead of its own fields. EncodeExecution, EncodeSample
// and EncodeCreditedTree reuse the bytes read for that part instead of
// encoding it again: a record is mostly its token columns and texts, and
// those would be encoded once more at every hop.
//
// The bytes are reused only when they are in this build's canonical form
// (a JSON object written by this codec at the current schema version, which
// every stage writes); anything else (a version 1 record, a hand-written
// one) is encoded whole, as Encode does. Fields of the input unknown to this
// build are passed on; an input field that is also one of the stage's own
// fields is overridden, since the own field comes later and readers keep
// the last of duplicate keys.

// canonicalPrefix starts every record this codec writes at the current
// version (schema_version is the first field of every record type).
var canonicalPrefix = []byte(fmt.Sprintf(`{"schema_version":%d,`, SchemaVersion))

// EncodeExecution encodes ex like Encode. candidate must be the value
// ex.Candidate was decoded from, and ex.Candidate unchanged since.
func EncodeExecution(ex *Execution, candidate []byte) ([]byte, error) {
	return encodeExtending(ex, candidate, func() error { return ex.validateOwn("execution") },
		func() any { return executionOwnOf(ex) })
}

// EncodeSample encodes s like Encode. execution must be the value
// s.Execution was decoded from, and s.Execution unchanged since.
func EncodeSample(s *Sample, execution []byte) ([]byte, error) {
	return encodeExtending(s, execution, s.validateOwn, func() any { return sampleOwnOf(s) })
}

// EncodeCreditedTree encodes t like Encode. samples[i], where given (not
// nil), must be the value t.Samples[i].Sample was decoded from, unchanged
// since: those bytes are reused for the sample, followed by its credited
// fields. A sample without bytes, or with bytes not in canonical form, is
// encoded whole.
func EncodeCreditedTree(t *CreditedTree, samples [][]byte) ([]byte, error) {
	if len(t.Samples) == 0 {
		return Encode(t)
	}
	if err := checkVersion(t); err != nil {
		return nil, err
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	// The tree without its samples, whose "samples":null is then replaced by
	// the array: a string cannot hold the sequence unescaped, and no field
	// before it is named samples, so it is found at the top level.
	head := *t
	head.Samples = nil
	hb, err := json.Marshal(&head)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", t.recordName(), err)
	}
	at := bytes.Index(hb, nullSamples)
	if at < 0 {
		return nil, fmt.Errorf("encode %s: no samples field in %.80q", t.recordName(), hb)
	}
	size := len(hb) + len(t.Samples)*64
	for _, b := range samples {
		size += len(b)
	}
	b := make([]byte, 0, size)
	b = append(b, hb[:at]...)
	b = append(b, `,"samples":[`...)
	for i := range t.Samples {
		if i > 0 {
			b = append(b, ',')
		}
		cs := &t.Samples[i]
		var base []byte
		if i < len(samples) {
			base = samples[i]
		}
		if !canonical(base) {
			whole, err := json.Marshal(cs)
			if err != nil {
				return nil, fmt.Errorf("encode %s: sample %s: %w", t.recordName(), cs.NodeID, err)
			}
			b = append(b, whole...)
			continue
		}
		tail, err := json.Marshal(creditedOwn{CreditedReward: cs.CreditedReward, Advantage: cs.Advantage})
		if err != nil {
			return nil, fmt.Errorf("encode %s: sample %s: %w", t.recordName(), cs.NodeID, err)
		}
		b = appendExtended(b, base, tail)
	}
	b = append(b, ']')
	b = append(b, hb[at+len(nullSamples)-1:]...)
	return checkSize(t, b)
}

var nullSamples = []byte(`,"samples":null,`)

// encodeExtending encodes r as base followed by own(), r's own fields.
// base was validated when it was decoded and is unchanged since: only r's
// own fields (validateOwn) are checked again.
func encodeExtending(r Record, base []byte, validateOwn func() error, own func() any) ([]byte, error) {
	if !canonical(base) {
		return Encode(r)
	}
	if err := checkVersion(r); err != nil {
		return nil, err
	}
	if err := validateOwn(); err != nil {
		return nil, err
	}
	tail, err := json.Marshal(own())
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", r.recordName(), err)
	}
	return checkSize(r, appendExtended(make([]byte, 0, len(base)+len(tail)), base, tail))
}

// canonical reports whether b is a record in this build's canonical form,
// whose bytes may be reused.
func canonical(b []byte) bool {
	return bytes.HasPrefix(b, canonicalPrefix) && b[len(b)-1] == '}'
}

// appendExtended appends base, a canonical record {..."x":1}, extended by
// own {"y":2,...}: {..."x":1,"y":2,...}.
func appendExtended(dst, base, own []byte) []byte {
	dst = append(dst, base[:len(base)-1]...)
	dst = append(dst, ',')
	return append(dst, own[1:]...)
}

// executionOwn holds the fields Execution declares itself, in its order
// and with its tags (TestExtensionFieldsMatchRecords keeps them in step).
type executionOwn struct {
	Status           string       `json:"status"`
	TestsPassed      int          `json:"tests_passed"`
	TestsTotal       int          `json:"tests_total"`
	PassRate         float64      `json:"pass_rate"`
	Feedback         string       `json:"feedback"`
	DurationMS       int64        `json:"duration_ms"`
	Results          []TestResult `json:"results,omitempty"`
	SandboxError     string       `json:"sandbox_error,omitempty"`
	SandboxErrorKind string       `json:"sandbox_error_kind,omitempty"`
	Diagnostics      []Diagnostic `json:"diagnostics,omitempty"`
	TargetsFixed     int          `json:"targets_fixed,omitempty"`
	TargetsTotal     int          `json:"targets_total,omitempty"`
	ExecutedAt       time.Time    `json:"executed_at"`
}

func executionOwnOf(e *Execution) *executionOwn {
	return &executionOwn{
		Status: e.Status, TestsPassed: e.TestsPassed, TestsTotal: e.TestsTotal, PassRate: e.PassRate,
		Feedback: e.Feedback, DurationMS: e.DurationMS, Results: e.Results, SandboxError: e.SandboxError,
		SandboxErrorKind: e.SandboxErrorKind, Diagnostics: e.Diagnostics, TargetsFixed: e.TargetsFixed,
		TargetsTotal: e.TargetsTotal, ExecutedAt: e.ExecutedAt,
	}
}

// creditedOwn holds the fields CreditedSample declares itself, in its
// order and with its tags.
type creditedOwn struct {
	CreditedReward float64 `json:"credited_reward"`
	Advantage      float64 `json:"advantage"`
}

// sampleOwn holds the fields Sample declares itself, in its order and with
// its tags.
type sampleOwn struct {
	Route             string    `json:"route"`
	FailureCause      string    `json:"failure_cause"`
	Reward            float64   `json:"reward"`
	InGroupStats      bool      `json:"in_group_stats"`
	ChildrenRequested int       `json:"children_requested"`
	PatchSimilarity   *float64  `json:"patch_similarity,omitempty"`
	StepScores        Float32s  `json:"step_scores,omitempty"`
	LossWeights       Float32s  `json:"loss_weights"`
	GovernedAt        time.Time `json:"governed_at"`
}

func sampleOwnOf(s *Sample) *sampleOwn {
	return &sampleOwn{
		Route: s.Route, FailureCause: s.FailureCause, Reward: s.Reward, InGroupStats: s.InGroupStats,
		ChildrenRequested: s.ChildrenRequested, PatchSimilarity: s.PatchSimilarity, StepScores: s.StepScores, LossWeights: s.LossWeights,
		GovernedAt: s.GovernedAt,
	}
}
