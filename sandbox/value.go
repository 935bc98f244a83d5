package sandbox

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"

	json "github.com/goccy/go-json"
)

// The strict value encoding written by the harness (harness.py encode):
//
//	None, bool, str   JSON null, true/false, string
//	int               {"i": hex}            exact, no digit limit
//	float             {"f": float.hex()}    exact; inf, -inf, nan
//	complex           {"c": [hex, hex]}
//	bytes, bytearray  {"b": base64}
//	list              [ ... ]
//	tuple             {"t": [ ... ]}
//	dict              {"d": [[k, v], ...]}
//	set, frozenset    {"s": [ ... ]}
//
// Only exact builtin types are encoded, so subclasses and user objects
// (an __eq__ that always returns True) never reach the comparison.

type kind uint8

const (
	kNone kind = iota
	kBool
	kInt
	kFloat
	kComplex
	kStr
	kBytes
	kList
	kTuple
	kDict
	kSet
)

// value is a decoded plain Python value.
type value struct {
	k     kind
	b     bool
	i     *big.Int
	f     float64
	c     complex128
	s     string
	items []value    // list, tuple, set
	pairs [][2]value // dict
}

// maxDepth bounds recursion when decoding reported values.
const maxDepth = 256

func decodeValue(raw []byte) (value, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return value{}, fmt.Errorf("decode value: %w", err)
	}
	return fromJSON(x, 0)
}

func fromJSON(x any, depth int) (value, error) {
	if depth > maxDepth {
		return value{}, fmt.Errorf("value nested deeper than %d", maxDepth)
	}
	switch t := x.(type) {
	case nil:
		return value{k: kNone}, nil
	case bool:
		return value{k: kBool, b: t}, nil
	case string:
		return value{k: kStr, s: t}, nil
	case []any:
		items, err := listFromJSON(t, depth)
		return value{k: kList, items: items}, err
	case map[string]any:
		if len(t) != 1 {
			return value{}, fmt.Errorf("tagged value with %d keys", len(t))
		}
		for tag, body := range t {
			return taggedFromJSON(tag, body, depth)
		}
	}
	return value{}, fmt.Errorf("unexpected JSON %T in value", x)
}

func listFromJSON(xs []any, depth int) ([]value, error) {
	out := make([]value, len(xs))
	for n, x := range xs {
		v, err := fromJSON(x, depth+1)
		if err != nil {
			return nil, err
		}
		out[n] = v
	}
	return out, nil
}

func parseHexFloat(s string) (float64, error) {
	switch s {
	case "inf":
		return math.Inf(1), nil
	case "-inf":
		return math.Inf(-1), nil
	case "nan":
		return math.NaN(), nil
	}
	return strconv.ParseFloat(s, 64)
}

func taggedFromJSON(tag string, body any, depth int) (value, error) {
	str := func() (string, error) {
		s, ok := body.(string)
		if !ok {
			return "", fmt.Errorf("tag %q wants a string", tag)
		}
		return s, nil
	}
	switch tag {
	case "i":
		s, err := str()
		if err != nil {
			return value{}, err
		}
		n, ok := new(big.Int).SetString(s, 16)
		if !ok {
			return value{}, fmt.Errorf("bad int %q", s)
		}
		return value{k: kInt, i: n}, nil
	case "f":
		s, err := str()
		if err != nil {
			return value{}, err
		}
		f, err := parseHexFloat(s)
		return value{k: kFloat, f: f}, err
	case "c":
		parts, ok := body.([]any)
		if !ok || len(parts) != 2 {
			return value{}, fmt.Errorf("bad complex")
		}
		re, _ := parts[0].(string)
		im, _ := parts[1].(string)
		r, err1 := parseHexFloat(re)
		i, err2 := parseHexFloat(im)
		if err1 != nil || err2 != nil {
			return value{}, fmt.Errorf("bad complex %q %q", re, im)
		}
		return value{k: kComplex, c: complex(r, i)}, nil
	case "b":
		s, err := str()
		if err != nil {
			return value{}, err
		}
		b, err := base64.StdEncoding.DecodeString(s)
		return value{k: kBytes, s: string(b)}, err
	case "t", "s":
		xs, ok := body.([]any)
		if !ok {
			return value{}, fmt.Errorf("tag %q wants a list", tag)
		}
		items, err := listFromJSON(xs, depth)
		k := kTuple
		if tag == "s" {
			k = kSet
		}
		return value{k: k, items: items}, err
	case "d":
		xs, ok := body.([]any)
		if !ok {
			return value{}, fmt.Errorf("dict wants a list of pairs")
		}
		pairs := make([][2]value, len(xs))
		for n, x := range xs {
			kv, ok := x.([]any)
			if !ok || len(kv) != 2 {
				return value{}, fmt.Errorf("bad dict item")
			}
			k, err := fromJSON(kv[0], depth+1)
			if err != nil {
				return value{}, err
			}
			v, err := fromJSON(kv[1], depth+1)
			if err != nil {
				return value{}, err
			}
			pairs[n] = [2]value{k, v}
		}
		return value{k: kDict, pairs: pairs}, nil
	}
	return value{}, fmt.Errorf("unknown value tag %q", tag)
}

func (v value) numeric() bool { return v.k == kBool || v.k == kInt || v.k == kFloat || v.k == kComplex }

// rat returns the exact value of a finite real number.
func (v value) rat() (*big.Rat, bool) {
	switch v.k {
	case kBool:
		if v.b {
			return big.NewRat(1, 1), true
		}
		return new(big.Rat), true
	case kInt:
		return new(big.Rat).SetInt(v.i), true
	case kFloat:
		if math.IsNaN(v.f) || math.IsInf(v.f, 0) {
			return nil, false
		}
		return new(big.Rat).SetFloat64(v.f), true
	}
	return nil, false
}

func numEqual(a, b value) bool {
	if a.k == kComplex || b.k == kComplex {
		ar, ai := a.parts()
		br, bi := b.parts()
		return numEqual(ar, br) && numEqual(ai, bi)
	}
	if a.k == kFloat && b.k == kFloat {
		return a.f == b.f
	}
	if (a.k == kFloat && math.IsInf(a.f, 0)) || (b.k == kFloat && math.IsInf(b.f, 0)) {
		return false // an infinite float never equals an int
	}
	ra, ok1 := a.rat()
	rb, ok2 := b.rat()
	return ok1 && ok2 && ra.Cmp(rb) == 0
}

// parts splits a number into real and imaginary parts.
func (v value) parts() (value, value) {
	if v.k == kComplex {
		return value{k: kFloat, f: real(v.c)}, value{k: kFloat, f: imag(v.c)}
	}
	return v, value{k: kInt, i: new(big.Int)}
}

// equal implements Python's == for plain data.
func equal(a, b value) bool {
	if a.numeric() && b.numeric() {
		return numEqual(a, b)
	}
	if a.k != b.k {
		return false
	}
	switch a.k {
	case kNone:
		return true
	case kStr, kBytes:
		return a.s == b.s
	case kList, kTuple:
		if len(a.items) != len(b.items) {
			return false
		}
		for n := range a.items {
			if !equal(a.items[n], b.items[n]) {
				return false
			}
		}
		return true
	case kSet:
		return setEqual(a.items, b.items)
	case kDict:
		return dictEqual(a.pairs, b.pairs)
	}
	return false
}

// hashKey is a string equal for values that Python's dict/set lookup treats
// as the same key (hash-equal and ==). NaN gets a unique key, as two
// distinct NaN objects never match.
func hashKey(v value, nan *int) string {
	switch v.k {
	case kNone:
		return "N"
	case kBool, kInt, kFloat, kComplex:
		re, im := v.parts()
		return "n" + numKey(re, nan) + "|" + numKey(im, nan)
	case kStr:
		return "s" + strconv.Quote(v.s)
	case kBytes:
		return "b" + strconv.Quote(v.s)
	case kTuple:
		parts := make([]string, len(v.items))
		for n, x := range v.items {
			parts[n] = hashKey(x, nan)
		}
		return "t(" + strings.Join(parts, ",") + ")"
	case kSet:
		parts := make([]string, len(v.items))
		for n, x := range v.items {
			parts[n] = hashKey(x, nan)
		}
		sort.Strings(parts)
		return "f{" + strings.Join(parts, ",") + "}"
	}
	// Lists and dicts are unhashable in Python: a key of this kind cannot
	// come from real data, make it unique.
	*nan++
	return "u" + strconv.Itoa(*nan)
}

func numKey(v value, nan *int) string {
	if v.k == kFloat && math.IsNaN(v.f) {
		*nan++
		return "nan" + strconv.Itoa(*nan)
	}
	if v.k == kFloat && math.IsInf(v.f, 0) {
		return strconv.FormatFloat(v.f, 'g', -1, 64)
	}
	r, _ := v.rat()
	return r.RatString()
}

func setEqual(a, b []value) bool {
	nan := 0
	ka := map[string]bool{}
	for _, x := range a {
		ka[hashKey(x, &nan)] = true
	}
	kb := map[string]bool{}
	for _, x := range b {
		kb[hashKey(x, &nan)] = true
	}
	if len(ka) != len(kb) {
		return false
	}
	for k := range ka {
		if !kb[k] {
			return false
		}
	}
	return true
}

func dictEqual(a, b [][2]value) bool {
	nan := 0
	// Later duplicates win, as in a Python dict display.
	ma := map[string]value{}
	for _, kv := range a {
		ma[hashKey(kv[0], &nan)] = kv[1]
	}
	mb := map[string]value{}
	for _, kv := range b {
		mb[hashKey(kv[0], &nan)] = kv[1]
	}
	if len(ma) != len(mb) {
		return false
	}
	for k, va := range ma {
		vb, ok := mb[k]
		if !ok || !equal(va, vb) {
			return false
		}
	}
	return true
}

// ValuesEqual compares two values in the harness's strict encoding with
// Python's equality semantics for plain data (1 == 1.0 == True, list !=
// tuple, set == frozenset, nan != nan).
func ValuesEqual(a, b []byte) (bool, error) {
	va, err := decodeValue(a)
	if err != nil {
		return false, err
	}
	vb, err := decodeValue(b)
	if err != nil {
		return false, err
	}
	return equal(va, vb), nil
}
