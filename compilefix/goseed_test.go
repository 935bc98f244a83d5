package compilefix

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/murphy-rl/murphy/sandbox"
)

// TestGoStdSeed: the seed made from the host's cache lets a build in the
// sandbox's environment compile the task's own package and nothing of the
// standard library, and holds no other entry of the host cache.
func TestGoStdSeed(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	tree := t.TempDir()
	src := "package main\n\nimport (\n\t\"bufio\"\n\t\"fmt\"\n\t\"os\"\n\t\"example.com/not/std\"\n)\n\nfunc main() { fmt.Println(bufio.NewReader(os.Stdin) != nil) }\n"
	if err := os.WriteFile(filepath.Join(tree, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	seed, err := goStdSeed(context.Background(), t.TempDir(), tree)
	if err != nil || seed == "" {
		t.Fatalf("seed %q: %v", seed, err)
	}
	var entries []string
	_ = filepath.WalkDir(filepath.Join(seed, "gocache"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			entries = append(entries, p)
		}
		return nil
	})
	// fmt and os need a few dozen packages; an action entry and an
	// archive each.
	if len(entries) < 40 || len(entries) > 400 {
		t.Fatalf("%d seed entries", len(entries))
	}

	// A build as the sandbox runs it (its PATH, GOFLAGS, GOTOOLCHAIN) on
	// a copy of the seed.
	cache := filepath.Join(t.TempDir(), "gocache")
	if out, err := exec.Command("cp", "-r", filepath.Join(seed, "gocache"), cache).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	main := "package main\n\nimport (\n\t\"bufio\"\n\t\"fmt\"\n\t\"os\"\n)\n\nfunc main() { fmt.Println(bufio.NewReader(os.Stdin) != nil) }\n"
	if err := os.WriteFile(filepath.Join(tree, "main.go"), []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tree, "go.mod"), []byte("module m\n\ngo 1.22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-x", "-o", os.DevNull, ".")
	cmd.Dir = tree
	cmd.Env = []string{"PATH=" + sandbox.BuildPATH, "HOME=" + t.TempDir(), "GOCACHE=" + cache, "GOPATH=" + t.TempDir(),
		"GOPROXY=off", "GOTOOLCHAIN=local", "GOTELEMETRY=off", "GOFLAGS=-buildvcs=false -count=1", "TMPDIR=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	if n := strings.Count(string(out), "/compile "); n != 1 {
		t.Errorf("the seeded build compiled %d packages, want 1 (the task's)", n)
	}
}

// TestStdImport: what a task's imports may ask the host's go list for.
func TestStdImport(t *testing.T) {
	for path, want := range map[string]bool{"fmt": true, "net/http": true, "example.com/x": false, "C": false,
		"std": false, "all": false, "cmd/go": false, "cmd": false, "fmt/...": false, "-toolexec=x": false, "": false} {
		if got := stdImport(path); got != want {
			t.Errorf("stdImport(%q) = %v, want %v", path, got, want)
		}
	}
}
