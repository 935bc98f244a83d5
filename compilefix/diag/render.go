package diag

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/murphy-rl/murphy/topics"
)

// renderContext is the excerpt context Render reads when a diagnostic
// carries no excerpt.
const renderContext = 2

// Header returns the one-line form of a diagnostic:
// "file:line:col: severity[code]: message" (missing parts left out), the
// message's first line only.
func Header(d topics.Diagnostic) string {
	var b strings.Builder
	if d.File != "" {
		b.WriteString(d.File)
		if d.Line > 0 {
			b.WriteString(":" + strconv.Itoa(d.Line))
			if d.Column > 0 {
				b.WriteString(":" + strconv.Itoa(d.Column))
			}
		}
		b.WriteString(": ")
	}
	sev := d.Severity
	if sev == "" {
		sev = SeverityError
	}
	b.WriteString(sev)
	if d.Code != "" {
		b.WriteString("[" + d.Code + "]")
	}
	msg, _, _ := strings.Cut(d.Message, "\n")
	b.WriteString(": " + msg)
	return b.String()
}

// Render returns feedback text listing ds, each as its Header, the rest of
// a multi-line message indented, and its excerpt (d.Excerpt, else read
// from root when root is not ""). With maxBytes > 0 the text is at most
// maxBytes long: the head and the tail of the list are kept and a line
// says how many diagnostics were left out between them; a single entry
// too long on its own is cut.
func Render(ds []topics.Diagnostic, root string, maxBytes int) string {
	entries := make([]string, len(ds))
	total := 0
	for i, d := range ds {
		entries[i] = renderOne(d, root)
		total += len(entries[i])
	}
	if maxBytes <= 0 || total <= maxBytes {
		return strings.Join(entries, "")
	}
	// Keep whole entries from the head (up to two thirds of the room),
	// then from the tail, then from the head again.
	room := maxBytes - len(omitted(len(ds)))
	if room <= 0 {
		return truncUTF8(omitted(len(ds)), maxBytes)
	}
	head, tail := 0, len(ds) // entries [0,head) and [tail,len)
	used := 0
	for head < tail && used+len(entries[head]) <= room*2/3 {
		used += len(entries[head])
		head++
	}
	for tail > head && used+len(entries[tail-1]) <= room {
		used += len(entries[tail-1])
		tail--
	}
	for head < tail && used+len(entries[head]) <= room {
		used += len(entries[head])
		head++
	}
	var b strings.Builder
	for _, e := range entries[:head] {
		b.WriteString(e)
	}
	left := tail - head
	if head == 0 && left > 0 {
		// Not even the first entry fits: show as much of it as fits.
		cut := cutEntry(entries[0], room-used)
		if cut != "" {
			b.WriteString(cut)
			left--
		}
	}
	if left > 0 {
		b.WriteString(omitted(left))
	}
	for _, e := range entries[tail:] {
		b.WriteString(e)
	}
	s := b.String()
	if len(s) > maxBytes {
		s = truncUTF8(s, maxBytes)
	}
	return s
}

func omitted(n int) string {
	if n == 1 {
		return "... 1 more diagnostic left out ...\n"
	}
	return fmt.Sprintf("... %d more diagnostics left out ...\n", n)
}

// cutEntry shortens one rendered entry to at most n bytes: whole lines
// first (the header first of all), then the header itself.
func cutEntry(e string, n int) string {
	const mark = "…\n"
	if n <= len(mark) {
		return ""
	}
	var b strings.Builder
	for _, l := range strings.SplitAfter(e, "\n") {
		if b.Len()+len(l)+len(mark) > n {
			if b.Len() == 0 {
				b.WriteString(truncUTF8(strings.TrimSuffix(l, "\n"), n-len(mark)))
			}
			b.WriteString(mark)
			return b.String()
		}
		b.WriteString(l)
	}
	return b.String()
}

func renderOne(d topics.Diagnostic, root string) string {
	var b strings.Builder
	b.WriteString(Header(d))
	b.WriteByte('\n')
	if _, more, ok := strings.Cut(d.Message, "\n"); ok {
		for _, l := range strings.Split(more, "\n") {
			b.WriteString("    " + l + "\n")
		}
	}
	ex := d.Excerpt
	if ex == "" && root != "" {
		ex = Excerpt(root, d, renderContext)
	}
	if ex != "" {
		for _, l := range strings.Split(strings.TrimRight(ex, "\n"), "\n") {
			b.WriteString("  " + l + "\n")
		}
	}
	return b.String()
}
