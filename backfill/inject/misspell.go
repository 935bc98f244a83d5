package inject

import "math/rand/v2"

// misspell returns a misspelling of name: two neighbouring letters
// swapped, one dropped or one doubled, never its first letter, that taken
// does not report (a name the file uses, a keyword). ok is false when
// every variant is taken.
func misspell(name string, taken func(string) bool, r *rand.Rand) (string, bool) {
	var vs []string
	seen := map[string]bool{name: true}
	add := func(v string) {
		if !seen[v] && !taken(v) {
			seen[v] = true
			vs = append(vs, v)
		}
	}
	b := []byte(name)
	for i := 1; i+1 < len(b); i++ {
		if b[i] != b[i+1] && isLetter(b[i]) && isLetter(b[i+1]) {
			c := append([]byte(nil), b...)
			c[i], c[i+1] = c[i+1], c[i]
			add(string(c))
		}
	}
	if len(b) >= 4 {
		for i := 1; i < len(b); i++ {
			if isLetter(b[i]) {
				add(string(b[:i]) + string(b[i+1:]))
			}
		}
	}
	for i := 1; i < len(b); i++ {
		if isLetter(b[i]) {
			add(string(b[:i+1]) + string(b[i:]))
		}
	}
	if len(vs) == 0 {
		return "", false
	}
	return vs[r.IntN(len(vs))], true
}

func isLetter(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }
