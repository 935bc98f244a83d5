package topics

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	json "github.com/goccy/go-json"
	"github.com/segmentio/asm/base64"
)

// b64 is standard base64 (RFC 4648, padded) with SIMD encoding and
// decoding (AVX2, NEON; the standard library's code elsewhere): the token
// columns are most of a record's bytes, and the standard library's scalar
// loops stood out in the pipeline's CPU profile.
var b64 = base64.StdEncoding

// Int32s and Float32s are the token columns of the records (token ids,
// logprobs, loss weights). On the wire they are a JSON string holding the
// values as little-endian 4-byte words in standard base64, the way
// embedding APIs ship float vectors (`encoding_format: base64`): a fraction
// of the bytes of a JSON number array and far cheaper to parse. Decoding
// also accepts a plain JSON array of numbers, so hand-written files work.
type (
	Int32s   []int32
	Float32s []float32
)

// MarshalJSON writes the packed form.
func (s Int32s) MarshalJSON() ([]byte, error) {
	return pack(s, func(v int32) uint32 { return uint32(v) }), nil
}

// UnmarshalJSON reads the packed form or a JSON array.
func (s *Int32s) UnmarshalJSON(b []byte) error {
	v, err := unpack(b, "int32", func(w uint32) int32 { return int32(w) })
	*s = v
	return err
}

// MarshalJSON writes the packed form.
func (s Float32s) MarshalJSON() ([]byte, error) { return pack(s, math.Float32bits), nil }

// UnmarshalJSON reads the packed form or a JSON array.
func (s *Float32s) UnmarshalJSON(b []byte) error {
	v, err := unpack(b, "float32", math.Float32frombits)
	*s = v
	return err
}

// littleEndian says whether this machine lays words out as the wire does,
// so that a column's memory is its packed form and needs no conversion.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// words returns the memory of vs as bytes (little-endian machines only).
func words[T int32 | float32](vs []T) []byte {
	if len(vs) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&vs[0])), 4*len(vs))
}

// pack encodes values as a quoted base64 string of little-endian words.
func pack[T int32 | float32](vs []T, word func(T) uint32) []byte {
	var raw []byte
	if littleEndian {
		raw = words(vs)
	} else {
		raw = make([]byte, 4*len(vs))
		for i, v := range vs {
			binary.LittleEndian.PutUint32(raw[4*i:], word(v))
		}
	}
	out := make([]byte, b64.EncodedLen(len(raw))+2)
	out[0] = '"'
	b64.Encode(out[1:], raw)
	out[len(out)-1] = '"'
	return out
}

// unpack decodes the packed form, a JSON array or null.
func unpack[T int32 | float32](b []byte, kind string, value func(uint32) T) ([]T, error) {
	if isArray(b) {
		var v []T
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, fmt.Errorf("%s column: %w", kind, err)
		}
		return v, nil
	}
	if string(b) == "null" {
		return nil, nil
	}
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return nil, fmt.Errorf("%s column: want a base64 string or an array, got %.20q", kind, b)
	}
	enc := b[1 : len(b)-1]
	out := make([]T, (b64.DecodedLen(len(enc))+3)/4)
	var raw []byte
	if littleEndian {
		raw = words(out)
	} else {
		raw = make([]byte, 4*len(out))
	}
	n, err := b64.Decode(raw, enc)
	if err != nil {
		return nil, fmt.Errorf("%s column: base64: %w", kind, err)
	}
	if n%4 != 0 {
		return nil, fmt.Errorf("%s column: %d bytes is not a whole number of 4-byte values", kind, n)
	}
	out = out[:n/4]
	if !littleEndian {
		for i := range out {
			out[i] = value(binary.LittleEndian.Uint32(raw[4*i:]))
		}
	}
	return out, nil
}

func isArray(b []byte) bool {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '[':
			return true
		}
		return false
	}
	return false
}
