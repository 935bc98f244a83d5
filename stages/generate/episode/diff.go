package episode

import (
	"sort"

	"github.com/murphy-rl/murphy/compilefix/patch"
)

// Diff returns the episode's edits as a unified git-style diff against the
// snapshot (patch.Write: "diff --git a/P b/P" headers, "new file mode" and
// "deleted file mode" for created and removed files), files in path order;
// "" when nothing changed. It applies with `patch -p1` and `git apply`.
func (t *Tools) Diff() (string, error) {
	paths := make([]string, 0, len(t.overlay))
	for p := range t.overlay {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	changes := make([]patch.FileChange, 0, len(paths))
	for _, p := range paths {
		e := t.overlay[p]
		snap, inSnap, err := t.snapshotFile(p)
		if err != nil {
			return "", err
		}
		c := patch.FileChange{Path: p, Created: !inSnap, Deleted: inSnap && e.deleted}
		if inSnap {
			c.Old = string(snap)
		}
		if !e.deleted {
			c.New = string(e.data)
		}
		if !inSnap && e.deleted {
			continue // created and deleted again
		}
		changes = append(changes, c)
	}
	return patch.Write(changes...)
}
