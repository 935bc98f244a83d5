package episode

import (
	"fmt"
	"sort"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"
)

// diffContext is the number of unchanged lines around each hunk.
const diffContext = 3

// Diff returns the episode's edits as a unified git-style diff against the
// snapshot ("diff --git a/P b/P" headers, a/ and b/ prefixes, "new file
// mode" and "deleted file mode" for created and removed files), files in
// path order; "" when nothing changed. It applies with `patch -p1` and
// `git apply`.
func (t *Tools) Diff() (string, error) {
	paths := make([]string, 0, len(t.overlay))
	for p := range t.overlay {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var b strings.Builder
	for _, p := range paths {
		e := t.overlay[p]
		snap, inSnap, err := t.snapshotFile(p)
		if err != nil {
			return "", err
		}
		var before, after string
		if inSnap {
			before = string(snap)
		}
		if !e.deleted {
			after = string(e.data)
		}
		if inSnap && !e.deleted && before == after {
			continue
		}
		from, to := "a/"+p, "b/"+p
		fmt.Fprintf(&b, "diff --git a/%s b/%s\n", p, p)
		switch {
		case !inSnap:
			b.WriteString("new file mode 100644\n")
			from = "/dev/null"
		case e.deleted:
			b.WriteString("deleted file mode 100644\n")
			to = "/dev/null"
		}
		if before == after { // an empty file created or deleted: no hunk
			continue
		}
		u, err := udiff.ToUnified(from, to, before, udiff.Lines(before, after), diffContext)
		if err != nil {
			return "", fmt.Errorf("episode: diff %s: %w", p, err)
		}
		b.WriteString(u)
	}
	return b.String(), nil
}
