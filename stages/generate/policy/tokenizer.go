package policy

import (
	"hash/fnv"
	"unicode/utf8"
)

// VocabSize is the size of the simple tokenizer's id space.
const VocabSize = 1 << 17

// Tokenize splits s with the simple tokenizer and returns the token ids.
//
// The simple tokenizer is not a model's tokenizer; it exists so that the
// simulated policy produces real, deterministic token columns. It splits
// text into pieces, left to right:
//
//   - a maximal run of ASCII letters, digits and underscores (a word);
//   - a maximal run of spaces;
//   - any other single character (newline, punctuation, a non-ASCII rune).
//
// A one-byte piece has its byte value as id (0-255). Any other piece has id
// 256 + FNV-1a-32(piece) mod (VocabSize-256). Distinct long pieces may
// share an id; the ids are not decodable.
func Tokenize(s string) []int32 { return tokenize(s, nil) }

// TokenizeOffsets is Tokenize that also returns each token's exclusive end
// offset in bytes, so text can be cut at a token boundary.
func TokenizeOffsets(s string) (ids []int32, ends []int) {
	ends = make([]int, 0, len(s)/3+1)
	ids = tokenize(s, &ends)
	return ids, ends
}

// tokenize returns the token ids of s and appends their end offsets to
// *ends when ends is not nil.
func tokenize(s string, ends *[]int) []int32 {
	ids := make([]int32, 0, len(s)/3+1)
	for i := 0; i < len(s); {
		j := i + 1
		switch c := s[i]; {
		case isWord(c):
			for j < len(s) && isWord(s[j]) {
				j++
			}
		case c == ' ':
			for j < len(s) && s[j] == ' ' {
				j++
			}
		case c >= utf8.RuneSelf:
			_, n := utf8.DecodeRuneInString(s[i:])
			j = i + n
		}
		ids = append(ids, pieceID(s[i:j]))
		if ends != nil {
			*ends = append(*ends, j)
		}
		i = j
	}
	return ids
}

func isWord(c byte) bool {
	return c == '_' || ('0' <= c && c <= '9') || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

func pieceID(p string) int32 {
	if len(p) == 1 {
		return int32(p[0])
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(p))
	return 256 + int32(h.Sum32()%(VocabSize-256))
}
