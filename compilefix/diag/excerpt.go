package diag

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/murphy-rl/murphy/topics"
)

// Excerpt limits.
const (
	// MaxExcerpt caps one excerpt (bytes).
	MaxExcerpt = 4096
	// MaxExcerptContext caps the context lines on each side.
	MaxExcerptContext = 20
	// maxExcerptLine caps one source line in an excerpt.
	maxExcerptLine = 240
	// maxExcerptScan caps how much of a file is read to reach the line.
	maxExcerptScan = 16 << 20
)

// Excerpt returns the source lines around d.Line, context lines on each
// side, read from root/d.File: the diagnostic's line is marked with ">"
// and followed by a caret under d.Column when it has one. It returns ""
// when there is nothing to show: no file or line, a file name that is
// absolute or has a ".." component, a path that leaves root through a
// symlink (os.Root refuses those), a file that is not a regular text file,
// or a line past its end. Long lines and the excerpt are capped.
func Excerpt(root string, d topics.Diagnostic, context int) string {
	if root == "" || d.File == "" || d.Line <= 0 {
		return ""
	}
	name, ok := localName(d.File)
	if !ok {
		return ""
	}
	context = max(0, min(context, MaxExcerptContext))
	r, err := os.OpenRoot(root)
	if err != nil {
		return ""
	}
	defer r.Close()
	f, err := r.Open(name)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return ""
	}
	first, last := max(1, d.Line-context), d.Line+context
	br := bufio.NewReader(io.LimitReader(f, maxExcerptScan))
	type srcLine struct {
		n    int
		text string
	}
	var got []srcLine
	for n := 1; n <= last; n++ {
		text, err := readLine(br, maxExcerptLine)
		if errors.Is(err, io.EOF) && text == "" {
			break
		}
		if strings.IndexByte(text, 0) >= 0 {
			return "" // binary
		}
		if n >= first {
			got = append(got, srcLine{n, text})
		}
		if err != nil {
			break
		}
	}
	if len(got) == 0 || got[len(got)-1].n < d.Line {
		return ""
	}
	width := len(fmt.Sprint(got[len(got)-1].n))
	var b strings.Builder
	for _, s := range got {
		mark := " "
		if s.n == d.Line {
			mark = ">"
		}
		line := fmt.Sprintf("%s %*d | %s\n", mark, width, s.n, s.text)
		if s.n == d.Line && d.Column > 0 {
			line += fmt.Sprintf("  %*s | %s^\n", width, "", caretPad(s.text, d.Column))
		}
		if b.Len()+len(line) > MaxExcerpt {
			break
		}
		b.WriteString(line)
	}
	return b.String()
}

// localName checks a workspace-relative file name and returns it in the
// form os.Root takes.
func localName(file string) (string, bool) {
	f := strings.ReplaceAll(file, `\`, "/")
	if path.IsAbs(f) || isWindowsPath(file) || strings.HasPrefix(f, "<") {
		return "", false
	}
	for _, p := range strings.Split(f, "/") {
		if p == ".." {
			return "", false
		}
	}
	f = path.Clean(f)
	if !fs.ValidPath(f) || f == "." {
		return "", false
	}
	return f, true
}

// readLine reads one line without its newline, keeping at most limit
// bytes of it (a cut line ends with "…").
func readLine(br *bufio.Reader, limit int) (string, error) {
	var b []byte
	cut := false
	for {
		chunk, isPrefix, err := br.ReadLine()
		if len(b) < limit {
			b = append(b, chunk...)
		} else if len(chunk) > 0 {
			cut = true
		}
		if err != nil {
			return finishLine(b, limit, cut), err
		}
		if !isPrefix {
			return finishLine(b, limit, cut), nil
		}
	}
}

func finishLine(b []byte, limit int, cut bool) string {
	s := strings.TrimRight(string(b), "\r")
	if len(s) > limit {
		s, cut = truncUTF8(s, limit), true
	}
	if cut {
		s += "…"
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// caretPad returns the blanks that put a caret under column col of line:
// tabs are kept so that the caret lines up however tabs are shown.
func caretPad(line string, col int) string {
	var b strings.Builder
	for i := 0; i < col-1 && i < len(line); i++ {
		if line[i] == '\t' {
			b.WriteByte('\t')
		} else if line[i] < 0x80 || line[i] >= 0xC0 { // one blank per rune
			b.WriteByte(' ')
		}
	}
	return b.String()
}
