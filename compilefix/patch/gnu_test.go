package patch

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMatchesGNUPatch applies generated diffs to shifted and perturbed
// files both with GNU patch and with Apply: patch succeeds exactly when
// Apply does, and then with the same bytes.
func TestMatchesGNUPatch(t *testing.T) {
	patchBin, err := exec.LookPath("patch")
	if err != nil {
		t.Skip("no patch(1)")
	}
	diffBin, err := exec.LookPath("diff")
	if err != nil {
		t.Skip("no diff(1)")
	}
	if out, _ := exec.Command(patchBin, "--version").Output(); !bytes.Contains(out, []byte("GNU patch")) {
		t.Skip("patch(1) is not GNU patch")
	}
	seed, cases := uint64(1), 160
	if v := os.Getenv("PATCH_GNU_CASES"); v != "" { // longer runs by hand
		if _, err := fmt.Sscan(v, &cases); err != nil {
			t.Fatal(err)
		}
		seed = uint64(cases)
	}
	rng := rand.New(rand.NewPCG(seed, 2))
	common := []string{"}", "", "\treturn 0;", "\tbreak;", "{", "#include <stdio.h>", "\ti++;", "else", "/* x */"}
	word := func() string {
		if rng.IntN(2) == 0 {
			return common[rng.IntN(len(common))]
		}
		return fmt.Sprintf("stmt_%d();", rng.IntN(60))
	}
	var n, offsets, fuzzed, failed int
	for i := range cases {
		base := make([]string, 15+rng.IntN(60))
		for j := range base {
			base[j] = word()
		}
		mod := append([]string(nil), base...)
		for range 1 + rng.IntN(4) {
			at := rng.IntN(len(mod) + 1)
			switch rng.IntN(3) {
			case 0: // replace
				if at < len(mod) {
					mod[at] = fmt.Sprintf("changed_%d();", rng.IntN(1000))
				}
			case 1: // insert
				ins := []string{fmt.Sprintf("added_%d();", rng.IntN(1000)), word()}[:1+rng.IntN(2)]
				mod = append(mod[:at], append(ins, mod[at:]...)...)
			case 2: // delete
				if at < len(mod) {
					end := min(len(mod), at+1+rng.IntN(2))
					mod = append(mod[:at], mod[end:]...)
				}
			}
		}
		target := append([]string(nil), base...)
		for range rng.IntN(4) { // shift
			at := rng.IntN(len(target) + 1)
			ins := make([]string, 1+rng.IntN(6))
			for k := range ins {
				ins[k] = fmt.Sprintf("shift_%d_%d;", i, k)
			}
			target = append(target[:at], append(ins, target[at:]...)...)
		}
		if rng.IntN(3) == 0 { // perturb a line: fuzz or failure
			target[rng.IntN(len(target))] = fmt.Sprintf("perturbed_%d;", i)
		}
		ctx := []int{0, 1, 2, 3, 3, 3, 5}[rng.IntN(7)]

		dir := t.TempDir()
		write := func(name string, ls []string) string {
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, []byte(strings.Join(ls, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}
		bp, mp := write("base", base), write("mod", mod)
		out, err := exec.Command(diffBin, fmt.Sprintf("-U%d", ctx), "--label", "a/f.txt", "--label", "b/f.txt", bp, mp).Output()
		var ee *exec.ExitError
		if err == nil {
			continue // no difference
		} else if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Fatal(err)
		}
		d := string(out)

		gnuDir, ourDir := filepath.Join(dir, "gnu"), filepath.Join(dir, "ours")
		for _, x := range []string{gnuDir, ourDir} {
			if err := os.Mkdir(x, 0o755); err != nil {
				t.Fatal(err)
			}
			write(filepath.Join(filepath.Base(x), "f.txt"), target)
		}
		write("p.diff", strings.Split(strings.TrimSuffix(string(out), "\n"), "\n"))
		cmd := exec.Command(patchBin, "-p1", "-f", "-s", "-F2", "--no-backup-if-mismatch", "-i", filepath.Join(dir, "p.diff"))
		cmd.Dir = gnuDir
		gnuOut, gerr := cmd.CombinedOutput()
		gnuOK := gerr == nil
		gnuBytes, _ := os.ReadFile(filepath.Join(gnuDir, "f.txt"))

		r, aerr := Apply(ourDir, d, Options{})
		n++
		if gnuOK != (aerr == nil) {
			t.Errorf("case %d: GNU ok=%v (%s), Apply err=%v\ndiff:\n%s\ntarget:\n%s", i, gnuOK, gnuOut, aerr, d, strings.Join(target, "\n"))
			continue
		}
		if !gnuOK {
			failed++
			continue
		}
		var got []byte
		var c Change
		if len(r.Files) > 0 {
			c = r.Files[0]
			got = c.New
		} else {
			got, _ = os.ReadFile(filepath.Join(ourDir, "f.txt"))
		}
		if !bytes.Equal(got, gnuBytes) {
			t.Errorf("case %d: output differs\ndiff:\n%s\nGNU:\n%s\nours:\n%s", i, d, gnuBytes, got)
		}
		if c.Offset != 0 {
			offsets++
		}
		if c.Fuzz != 0 {
			fuzzed++
		}
	}
	t.Logf("%d diffs: %d with offsets, %d with fuzz, %d failing in both", n, offsets, fuzzed, failed)
	if n < cases/2 || offsets == 0 || fuzzed == 0 || failed == 0 {
		t.Fatalf("weak coverage: %d diffs, %d offsets, %d fuzzed, %d failed", n, offsets, fuzzed, failed)
	}
}
