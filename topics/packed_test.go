package topics

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	json "github.com/goccy/go-json"
)

func TestPackedColumnsRoundTrip(t *testing.T) {
	type row struct {
		IDs    Int32s   `json:"ids"`
		Probs  Float32s `json:"probs"`
		Absent Int32s   `json:"absent,omitempty"`
		Empty  Float32s `json:"empty"`
	}
	in := row{
		IDs:   Int32s{0, 1, -1, math.MaxInt32, math.MinInt32, 151643},
		Probs: Float32s{0, -0.5, float32(math.Inf(-1)), math.SmallestNonzeroFloat32, -12.25},
		Empty: Float32s{},
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	// The wire form is base64 of little-endian words.
	var wire map[string]any
	if err := json.Unmarshal(b, &wire); err != nil {
		t.Fatal(err)
	}
	raw, err := base64.StdEncoding.DecodeString(wire["ids"].(string))
	if err != nil || len(raw) != 4*len(in.IDs) || int32(binary.LittleEndian.Uint32(raw[8:])) != -1 {
		t.Fatalf("ids on the wire: %q (%v)", wire["ids"], err)
	}
	if _, ok := wire["absent"]; ok {
		t.Fatalf("omitempty column written: %s", b)
	}
	var out row
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in.IDs, out.IDs) || len(out.Empty) != 0 || out.Absent != nil {
		t.Fatalf("round trip: %+v -> %s -> %+v", in, b, out)
	}
	for i := range in.Probs {
		if math.Float32bits(in.Probs[i]) != math.Float32bits(out.Probs[i]) {
			t.Fatalf("prob %d: %v != %v", i, in.Probs[i], out.Probs[i])
		}
	}
}

func TestPackedColumnsReadArraysAndNull(t *testing.T) {
	var v struct {
		IDs   Int32s   `json:"ids"`
		Probs Float32s `json:"probs"`
		Null  Int32s   `json:"null"`
	}
	if err := json.Unmarshal([]byte(`{"ids": [1, 2, -3], "probs": [ -0.25, 1e-3 ], "null": null}`), &v); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(v.IDs, Int32s{1, 2, -3}) || !reflect.DeepEqual(v.Probs, Float32s{-0.25, 0.001}) || v.Null != nil {
		t.Fatalf("got %+v", v)
	}
}

func TestPackedColumnsRejectBadInput(t *testing.T) {
	for name, field := range map[string]string{
		"not base64":         `"@@@@"`,
		"partial word":       `"AAAAAAA="`, // 5 bytes
		"number":             `12`,
		"object":             `{"a":1}`,
		"array of strings":   `["a"]`,
		"unterminated array": `[1, 2`,
	} {
		var v struct {
			IDs Int32s `json:"ids"`
		}
		if err := json.Unmarshal([]byte(`{"ids": `+field+`}`), &v); err == nil {
			t.Errorf("%s: accepted %s as %v", name, field, v.IDs)
		}
	}
}

// A version 1 record (token columns as arrays) is read and upgraded: it
// encodes as the current version.
func TestVersion1RecordIsUpgraded(t *testing.T) {
	c := sampleCandidate(5)
	b, err := Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["schema_version"] = 1
	m["prompt_token_ids"] = []int32(c.PromptTokenIDs)
	m["response_token_ids"] = []int32(c.ResponseTokenIDs)
	m["response_logprobs"] = []float32(c.ResponseLogprobs)
	v1, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(v1), `"response_token_ids":[`) {
		t.Fatalf("not a version 1 record: %s", v1)
	}
	var got Candidate
	if err := Decode(v1, &got); err != nil {
		t.Fatal(err)
	}
	if got.SchemaVersion != SchemaVersion || !reflect.DeepEqual(got.ResponseTokenIDs, c.ResponseTokenIDs) ||
		!reflect.DeepEqual(got.ResponseLogprobs, c.ResponseLogprobs) || !reflect.DeepEqual(got.PromptTokenIDs, c.PromptTokenIDs) {
		t.Fatalf("decoded %+v", got)
	}
	if _, err := Encode(&got); err != nil {
		t.Fatalf("re-encode: %v", err)
	}
	m["schema_version"] = SchemaVersion + 1
	future, _ := json.Marshal(m)
	var te *Error
	if err := Decode(future, &got); !errors.As(err, &te) || te.Kind != ErrUnknownVersion {
		t.Fatalf("version %d: %v", SchemaVersion+1, err)
	}
}

// The packed form is the standard library's base64 of the little-endian
// words, byte for byte, at every length around the SIMD block sizes, and
// a column the standard library refuses is refused.
func TestPackedColumnsAgreeWithStandardBase64(t *testing.T) {
	for n := range 200 {
		vs := make(Int32s, n)
		raw := make([]byte, 4*n)
		for i := range vs {
			vs[i] = int32(uint32(i)*2654435761 ^ uint32(n))
			binary.LittleEndian.PutUint32(raw[4*i:], uint32(vs[i]))
		}
		want := `"` + base64.StdEncoding.EncodeToString(raw) + `"`
		got, err := vs.MarshalJSON()
		if err != nil || string(got) != want {
			t.Fatalf("%d values: packed %.40s, want %.40s (%v)", n, got, want, err)
		}
		var back Int32s
		if err := back.UnmarshalJSON(got); err != nil || !reflect.DeepEqual([]int32(back), []int32(vs)) && n > 0 {
			t.Fatalf("%d values: round trip %v", n, err)
		}
		if n == 0 {
			continue
		}
		// Corrupt one character at a time: whatever the standard decoder
		// refuses must be refused.
		enc := []byte(base64.StdEncoding.EncodeToString(raw))
		for _, pos := range []int{0, len(enc) / 2, len(enc) - 1} {
			bad := append([]byte(nil), enc...)
			bad[pos] = '*'
			_, stdErr := base64.StdEncoding.DecodeString(string(bad))
			var v Int32s
			if err := v.UnmarshalJSON([]byte(`"` + string(bad) + `"`)); (err == nil) != (stdErr == nil) {
				t.Fatalf("%d values, '*' at %d: error %v, standard library %v", n, pos, err, stdErr)
			}
		}
	}
}
