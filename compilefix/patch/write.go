package patch

import (
	"fmt"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"
)

// ContextLines is the number of unchanged lines the writer puts around
// each hunk, as git and diff -u do.
const ContextLines = udiff.DefaultContextLines

// FileChange is one file's change, for Write.
type FileChange struct {
	// Path is slash-separated, relative to the tree root.
	Path string
	// Old and New are the contents before and after.
	Old, New string
	// Created and Deleted mark a file the change adds or removes: its
	// other side is /dev/null, with git's "new file mode" or "deleted file
	// mode" line.
	Created, Deleted bool
}

// Write returns the unified diff of changes as git writes it ("diff --git
// a/P b/P" headers, a/ and b/ prefixes, ContextLines of context, the
// hunks computed by go-udiff), files in the order given; a file whose
// content does not change (and that is neither created nor deleted) is
// left out. It applies with `patch -p1`, `git apply` and Apply; "" when
// nothing changes.
func Write(changes ...FileChange) (string, error) {
	var b strings.Builder
	for _, c := range changes {
		if c.Old == c.New && !c.Created && !c.Deleted {
			continue
		}
		from, to := "a/"+c.Path, "b/"+c.Path
		fmt.Fprintf(&b, "diff --git a/%s b/%s\n", c.Path, c.Path)
		switch {
		case c.Created:
			b.WriteString("new file mode 100644\n")
			from = "/dev/null"
		case c.Deleted:
			b.WriteString("deleted file mode 100644\n")
			to = "/dev/null"
		}
		if c.Old == c.New { // an empty file created or deleted: no hunk
			continue
		}
		u, err := udiff.ToUnified(from, to, c.Old, udiff.Lines(c.Old, c.New), ContextLines)
		if err != nil {
			return "", fmt.Errorf("patch: diff %s: %w", c.Path, err)
		}
		b.WriteString(u)
	}
	return b.String(), nil
}

// Diff is the unified diff (as Write) that turns old into new in the file
// at p; "" when they are equal.
func Diff(p, old, new string) string {
	d, err := Write(FileChange{Path: p, Old: old, New: new})
	if err != nil {
		return "" // go-udiff fails only on edits it did not make
	}
	return d
}
