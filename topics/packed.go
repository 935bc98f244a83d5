package topics

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"

	json "github.com/goccy/go-json"
)

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
	return packWords(len(s), func(i int) uint32 { return uint32(s[i]) }), nil
}

// UnmarshalJSON reads the packed form or a JSON array.
func (s *Int32s) UnmarshalJSON(b []byte) error {
	if isArray(b) {
		var v []int32
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		*s = v
		return nil
	}
	words, err := unpackWords(b)
	if err != nil {
		return fmt.Errorf("int32 column: %w", err)
	}
	if words == nil {
		*s = nil
		return nil
	}
	out := make(Int32s, len(words)/4)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(words[4*i:]))
	}
	*s = out
	return nil
}

// MarshalJSON writes the packed form.
func (s Float32s) MarshalJSON() ([]byte, error) {
	return packWords(len(s), func(i int) uint32 { return math.Float32bits(s[i]) }), nil
}

// UnmarshalJSON reads the packed form or a JSON array.
func (s *Float32s) UnmarshalJSON(b []byte) error {
	if isArray(b) {
		var v []float32
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		*s = v
		return nil
	}
	words, err := unpackWords(b)
	if err != nil {
		return fmt.Errorf("float32 column: %w", err)
	}
	if words == nil {
		*s = nil
		return nil
	}
	out := make(Float32s, len(words)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(words[4*i:]))
	}
	*s = out
	return nil
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

// packWords encodes n words as a quoted base64 string.
func packWords(n int, word func(int) uint32) []byte {
	raw := make([]byte, 4*n)
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint32(raw[4*i:], word(i))
	}
	out := make([]byte, base64.StdEncoding.EncodedLen(len(raw))+2)
	out[0] = '"'
	base64.StdEncoding.Encode(out[1:], raw)
	out[len(out)-1] = '"'
	return out
}

// unpackWords decodes a quoted base64 string (or null) into bytes, a whole
// number of 4-byte words.
func unpackWords(b []byte) ([]byte, error) {
	if string(b) == "null" {
		return nil, nil
	}
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return nil, fmt.Errorf("want a base64 string or an array, got %.20q", b)
	}
	enc := b[1 : len(b)-1]
	raw := make([]byte, base64.StdEncoding.DecodedLen(len(enc)))
	n, err := base64.StdEncoding.Decode(raw, enc)
	if err != nil {
		return nil, fmt.Errorf("base64: %w", err)
	}
	if n%4 != 0 {
		return nil, fmt.Errorf("%d bytes is not a whole number of 4-byte values", n)
	}
	return raw[:n], nil
}
