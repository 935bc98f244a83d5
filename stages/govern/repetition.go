package govern

import (
	"errors"
	"fmt"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/klauspost/compress/flate"
)

// RepetitionConfig configures the repetition-loop detector. A response is
// looping when any enabled test fires:
//
//   - tail loop: the response ends in a body of at most TailMaxPeriod units
//     repeated verbatim at least TailMinRepeats times, spanning at least
//     TailMinUnits units and TailMinFraction of the response (a model stuck
//     in a loop keeps looping until max tokens, so loops sit at the end);
//   - duplicate n-grams: at least MaxDuplicateNGrams of the response's
//     n-grams (n = NGram units) already occurred earlier in it;
//   - compression: the response deflates to at most MinCompressionRatio of
//     its size.
//
// Units are words (runs of letters, digits and '_'), single punctuation
// characters and line breaks of the response text; when the text is empty
// the response token ids are the units. Responses shorter than MinUnits are
// never looping.
type RepetitionConfig struct {
	// Enabled turns the detector on.
	Enabled bool `yaml:"enabled"`
	// MinUnits is the shortest response (in units) that can be looping.
	MinUnits int `yaml:"min_units"`
	// TailMaxPeriod is the longest loop body (in units) looked for.
	TailMaxPeriod int `yaml:"tail_max_period"`
	// TailMinRepeats is how many times the body must repeat (0 disables the
	// tail test).
	TailMinRepeats float64 `yaml:"tail_min_repeats"`
	// TailMinUnits is the shortest loop span.
	TailMinUnits int `yaml:"tail_min_units"`
	// TailMinFraction is the smallest share of the response the loop spans.
	TailMinFraction float64 `yaml:"tail_min_fraction"`
	// NGram is n of the duplicate n-gram test.
	NGram int `yaml:"ngram"`
	// MaxDuplicateNGrams is the duplicate n-gram share at and above which a
	// response is looping (0 disables the test).
	MaxDuplicateNGrams float64 `yaml:"max_duplicate_ngrams"`
	// MinCompressionRatio is the deflate ratio at and below which a response
	// is looping (0 disables the test).
	MinCompressionRatio float64 `yaml:"min_compression_ratio"`
}

// DefaultRepetitionConfig returns thresholds chosen on the looping and
// normal examples of testdata/repetition (see repetition_test.go).
func DefaultRepetitionConfig() RepetitionConfig {
	return RepetitionConfig{
		Enabled:             true,
		MinUnits:            64,
		TailMaxPeriod:       256,
		TailMinRepeats:      6,
		TailMinUnits:        64,
		TailMinFraction:     0.2,
		NGram:               12,
		MaxDuplicateNGrams:  0.9,
		MinCompressionRatio: 0.05,
	}
}

// Validate checks the configuration.
func (c RepetitionConfig) Validate() error {
	var errs []error
	if c.MinUnits < 1 {
		errs = append(errs, fmt.Errorf("min_units must be >= 1, got %d", c.MinUnits))
	}
	if c.TailMinRepeats != 0 {
		if c.TailMinRepeats < 2 {
			errs = append(errs, fmt.Errorf("tail_min_repeats must be 0 or >= 2, got %g", c.TailMinRepeats))
		}
		if c.TailMaxPeriod < 1 {
			errs = append(errs, fmt.Errorf("tail_max_period must be >= 1, got %d", c.TailMaxPeriod))
		}
	}
	if c.TailMinFraction < 0 || c.TailMinFraction > 1 {
		errs = append(errs, fmt.Errorf("tail_min_fraction must lie in [0,1], got %g", c.TailMinFraction))
	}
	if c.MaxDuplicateNGrams < 0 || c.MaxDuplicateNGrams > 1 {
		errs = append(errs, fmt.Errorf("max_duplicate_ngrams must lie in [0,1], got %g", c.MaxDuplicateNGrams))
	}
	if c.MaxDuplicateNGrams > 0 && c.NGram < 1 {
		errs = append(errs, fmt.Errorf("ngram must be >= 1, got %d", c.NGram))
	}
	if c.MinCompressionRatio < 0 || c.MinCompressionRatio >= 1 {
		errs = append(errs, fmt.Errorf("min_compression_ratio must lie in [0,1), got %g", c.MinCompressionRatio))
	}
	if len(errs) > 0 {
		return fmt.Errorf("repetition: %w", errors.Join(errs...))
	}
	return nil
}

// RepetitionDetector finds repetition loops in responses. It is safe for
// concurrent use.
type RepetitionDetector struct {
	cfg RepetitionConfig
	// writers reuses deflate state (about 1 MB each) across responses.
	writers sync.Pool
}

// NewRepetitionDetector returns a detector for cfg.
func NewRepetitionDetector(cfg RepetitionConfig) (*RepetitionDetector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &RepetitionDetector{cfg: cfg}, nil
}

// RepetitionStats are the measures the detector decides on.
type RepetitionStats struct {
	Units int
	// TailPeriod and TailSpan describe the longest-spanning verbatim loop at
	// the end of the response (0 when none repeats at least twice).
	TailPeriod, TailSpan int
	// TailRepeats is TailSpan / TailPeriod.
	TailRepeats float64
	// DuplicateNGrams is the share of n-grams seen earlier in the response.
	DuplicateNGrams float64
	// CompressionRatio is deflated size / size (1 for an empty response).
	CompressionRatio float64
}

// Measure computes every statistic of a response.
func (d *RepetitionDetector) Measure(text string, tokens []int32) RepetitionStats {
	st, _ := d.measure(text, tokens, false)
	return st
}

// Looping reports whether the response is a repetition loop. It stops
// measuring as soon as one test fires.
func (d *RepetitionDetector) Looping(text string, tokens []int32) bool {
	if !d.cfg.Enabled {
		return false
	}
	_, looping := d.measure(text, tokens, true)
	return looping
}

func (d *RepetitionDetector) measure(text string, tokens []int32, stopEarly bool) (RepetitionStats, bool) {
	var units []uint64
	if text != "" {
		units = textUnits(text)
	} else {
		units = make([]uint64, len(tokens))
		for i, t := range tokens {
			units[i] = uint64(uint32(t))
		}
	}
	st := RepetitionStats{Units: len(units), CompressionRatio: 1}
	if stopEarly && st.Units < d.cfg.MinUnits {
		return st, false
	}
	if d.cfg.TailMinRepeats > 0 {
		st.TailPeriod, st.TailSpan = tailLoop(units, d.cfg.TailMaxPeriod, d.cfg.TailMinRepeats)
		if st.TailPeriod > 0 {
			st.TailRepeats = float64(st.TailSpan) / float64(st.TailPeriod)
		}
		if stopEarly && d.Decide(st) {
			return st, true
		}
	}
	if d.cfg.MaxDuplicateNGrams > 0 {
		st.DuplicateNGrams = duplicateNGrams(units, d.cfg.NGram)
		if stopEarly && d.Decide(st) {
			return st, true
		}
	}
	if d.cfg.MinCompressionRatio > 0 {
		if text != "" {
			st.CompressionRatio = d.compressionRatio([]byte(text))
		} else if len(tokens) > 0 {
			raw := make([]byte, 0, 4*len(tokens))
			for _, t := range tokens {
				raw = append(raw, byte(t), byte(t>>8), byte(t>>16), byte(t>>24))
			}
			st.CompressionRatio = d.compressionRatio(raw)
		}
	}
	return st, d.Decide(st)
}

// Decide applies the thresholds to measured statistics.
func (d *RepetitionDetector) Decide(st RepetitionStats) bool {
	c := d.cfg
	if !c.Enabled || st.Units < c.MinUnits {
		return false
	}
	if c.TailMinRepeats > 0 && st.TailPeriod > 0 && st.TailRepeats >= c.TailMinRepeats &&
		st.TailSpan >= c.TailMinUnits && float64(st.TailSpan) >= c.TailMinFraction*float64(st.Units) {
		return true
	}
	if c.MaxDuplicateNGrams > 0 && st.DuplicateNGrams >= c.MaxDuplicateNGrams {
		return true
	}
	if c.MinCompressionRatio > 0 && st.CompressionRatio <= c.MinCompressionRatio {
		return true
	}
	return false
}

// textUnits splits text into words, punctuation characters and line breaks,
// hashed; other white space and invalid UTF-8 separate units and are
// dropped.
func textUnits(s string) []uint64 {
	units := make([]uint64, 0, len(s)/3)
	word := -1
	for i := 0; i < len(s); {
		r, n := rune(s[i]), 1
		var class byte
		if r < utf8.RuneSelf {
			class = asciiClass[r]
		} else {
			r, n = utf8.DecodeRuneInString(s[i:])
			class = runeClass(r)
		}
		if class == unitWord {
			if word < 0 {
				word = i
			}
			i += n
			continue
		}
		if word >= 0 {
			units = append(units, fnv64a(s[word:i]))
			word = -1
		}
		switch class {
		case unitNewline:
			units = append(units, '\n')
		case unitPunct:
			// Punctuation hashes apart from words: words hash with FNV,
			// punctuation is its code point with the top bit set.
			units = append(units, 1<<63|uint64(r))
		}
		i += n
	}
	if word >= 0 {
		units = append(units, fnv64a(s[word:]))
	}
	return units
}

// The classes of characters for textUnits.
const (
	unitSeparator byte = iota // white space, invalid UTF-8: dropped
	unitWord                  // letters, digits, '_'
	unitNewline
	unitPunct // anything else
)

// asciiClass is runeClass of every ASCII character: most of a response is
// ASCII, classified without the unicode tables.
var asciiClass = func() (t [utf8.RuneSelf]byte) {
	for r := range t {
		t[r] = runeClass(rune(r))
	}
	return t
}()

func runeClass(r rune) byte {
	switch {
	case r == utf8.RuneError:
		return unitSeparator
	case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_':
		return unitWord
	case r == '\n':
		return unitNewline
	case unicode.IsSpace(r):
		return unitSeparator
	}
	return unitPunct
}

// fnv64a is FNV-1a, 64 bits, of s (hash/fnv's New64a without its calls).
func fnv64a(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// tailLoop finds the period p <= maxPeriod whose verbatim repetition at the
// end of u spans the most units, among periods repeating at least minRepeats
// times. A response cut at max tokens may end inside a word, so the match may
// also start one unit before the end. It returns the period and the span
// (0, 0 when none).
func tailLoop(u []uint64, maxPeriod int, minRepeats float64) (period, span int) {
	for skip := 0; skip <= 1 && skip < len(u); skip++ {
		v := u[:len(u)-skip]
		n := len(v)
		for p := 1; p <= maxPeriod && 2*p <= n; p++ {
			k := 0 // units at the end equal to the unit p before them
			for i := n - 1; i >= p && v[i] == v[i-p]; i-- {
				k++
			}
			s := k + p
			if float64(s)/float64(p) >= minRepeats && s > span {
				period, span = p, s
			}
		}
	}
	return period, span
}

// duplicateNGrams returns the share of n-grams of u that occurred earlier.
func duplicateNGrams(u []uint64, n int) float64 {
	if len(u) < n || n < 1 {
		return 0
	}
	total := len(u) - n + 1
	set := newHashSet(total)
	defer set.release()
	dup := 0
	for i := 0; i < total; i++ {
		// Polynomial combination of the n unit hashes.
		var h uint64 = 1469598103934665603
		for _, x := range u[i : i+n] {
			h = (h ^ x) * 1099511628211
		}
		if !set.add(h) {
			dup++
		}
	}
	return float64(dup) / float64(total)
}

// hashSet is a set of 64-bit hashes: open addressing, linear probing, at
// most half full, its table reused across calls (a map of the n-grams was
// most of the detector's time).
type hashSet struct {
	slots []uint64 // 0 is a free slot; the hash 0 is held by hasZero
	mask  uint64
	// hasZero says whether 0 is in the set.
	hasZero bool
}

var hashSets = sync.Pool{New: func() any { return new(hashSet) }}

// newHashSet returns an empty set with room for n hashes.
func newHashSet(n int) *hashSet {
	s := hashSets.Get().(*hashSet)
	size := 16
	for size < 2*n {
		size <<= 1
	}
	if cap(s.slots) >= size {
		s.slots = s.slots[:size]
		clear(s.slots)
	} else {
		s.slots = make([]uint64, size)
	}
	s.mask, s.hasZero = uint64(size-1), false
	return s
}

func (s *hashSet) release() {
	// Tables of huge responses are not kept.
	if cap(s.slots) <= 1<<20 {
		hashSets.Put(s)
	}
}

// add inserts h and reports whether it was new.
func (s *hashSet) add(h uint64) bool {
	if h == 0 {
		was := s.hasZero
		s.hasZero = true
		return !was
	}
	// The n-gram hashes are FNV products: their high bits are mixed best.
	for i := (h ^ h>>32) & s.mask; ; i = (i + 1) & s.mask {
		switch s.slots[i] {
		case 0:
			s.slots[i] = h
			return true
		case h:
			return false
		}
	}
}

// compressionRatio is the deflated size of b over its size.
func (d *RepetitionDetector) compressionRatio(b []byte) float64 {
	if len(b) == 0 {
		return 1
	}
	var n countWriter
	w, _ := d.writers.Get().(*flate.Writer)
	if w == nil {
		var err error
		if w, err = flate.NewWriter(&n, flate.BestSpeed); err != nil {
			return 1
		}
	} else {
		w.Reset(&n)
	}
	defer d.writers.Put(w)
	if _, err := w.Write(b); err != nil {
		return 1
	}
	if err := w.Close(); err != nil {
		return 1
	}
	return float64(n) / float64(len(b))
}

// countWriter counts the bytes written to it.
type countWriter int

func (c *countWriter) Write(p []byte) (int, error) {
	*c += countWriter(len(p))
	return len(p), nil
}
