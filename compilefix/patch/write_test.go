package patch

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func mustWrite(t *testing.T, cs ...FileChange) string {
	t.Helper()
	d, err := Write(cs...)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestWriteApplies writes a diff that changes, creates and deletes files
// and applies it with Apply and with GNU patch: both give the new tree.
func TestWriteApplies(t *testing.T) {
	t.Parallel()
	before := map[string]string{"src/a.c": lines(1, 30), "gone.txt": "bye\n", "empty": "", "same.txt": "same\n"}
	changes := []FileChange{
		{Path: "src/a.c", Old: lines(1, 30), New: strings.Replace(lines(1, 30), "line 7\n", "line seven\n", 1) + "line 31\n"},
		{Path: "gone.txt", Old: "bye\n", Deleted: true},
		{Path: "new/b.txt", New: "hello\n", Created: true},
		{Path: "empty", Deleted: true},
		{Path: "same.txt", Old: "same\n", New: "same\n"},
	}
	d := mustWrite(t, changes...)
	if strings.Contains(d, "same.txt") || !strings.HasPrefix(d, "diff --git a/src/a.c b/src/a.c\n") ||
		!strings.Contains(d, "new file mode 100644\n--- /dev/null\n+++ b/new/b.txt\n") || !strings.Contains(d, "deleted file mode 100644\n--- a/gone.txt\n+++ /dev/null\n") {
		t.Fatalf("diff:\n%s", d)
	}
	r := mustApply(t, mkTree(t, before), d, Options{})
	if got := r.Paths(); strings.Join(got, " ") != "empty gone.txt new/b.txt src/a.c" {
		t.Fatalf("paths %v", got)
	}
	if c := change(t, r, "src/a.c"); string(c.New) != changes[0].New {
		t.Fatalf("a.c: %q", c.New)
	}
	if c := change(t, r, "new/b.txt"); !c.Created || string(c.New) != "hello\n" {
		t.Fatalf("b.txt: %+v", c)
	}
	if strings.Join(r.Deleted(), " ") != "empty gone.txt" {
		t.Fatalf("deleted %v", r.Deleted())
	}
	bin, err := exec.LookPath("patch")
	if err != nil {
		t.Skip("no patch(1)")
	}
	dir := mkTree(t, before)
	cmd := exec.Command(bin, "-p1", "--batch", "--no-backup-if-mismatch", "-E")
	cmd.Dir, cmd.Stdin = dir, strings.NewReader(d)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("patch: %v\n%s", err, out)
	}
	for p, want := range map[string]string{"src/a.c": changes[0].New, "new/b.txt": "hello\n"} {
		if got, err := os.ReadFile(filepath.Join(dir, p)); err != nil || string(got) != want {
			t.Fatalf("GNU patch: %s = %q, %v", p, got, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "gone.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("GNU patch kept gone.txt: %v", err)
	}
	if Diff("x", "a\n", "a\n") != "" {
		t.Fatal("a diff of equal contents")
	}
}
