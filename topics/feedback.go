package topics

import (
	"fmt"
	"unicode/utf8"
)

// DefaultFeedbackBytes is the default cap on an execution's feedback text.
const DefaultFeedbackBytes = 2048

// Feedback text is capped the same way wherever it is written (execute's
// programs and builds, the refinement prompts built from it).

// Truncate keeps the head and the tail of s within n bytes, marking what
// was cut, on UTF-8 boundaries.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// Sized for the largest count it can show, so the result fits in n.
	marker := fmt.Sprintf("\n... [%d bytes omitted] ...\n", len(s))
	if n <= len(marker)+8 {
		return validPrefix(s, n)
	}
	room := n - len(marker)
	head := validPrefix(s, room/2)
	tail := validSuffix(s, room-len(head))
	marker = fmt.Sprintf("\n... [%d bytes omitted] ...\n", len(s)-len(head)-len(tail))
	return head + marker + tail
}

func validPrefix(s string, n int) string {
	if n >= len(s) {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func validSuffix(s string, n int) string {
	if n >= len(s) {
		return s
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return s[i:]
}

// ByteSize writes n bytes as people read sizes: 4 MiB, 64 KiB, 100 bytes.
func ByteSize(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
