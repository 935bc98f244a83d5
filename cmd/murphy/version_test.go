package main

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/murphy-rl/murphy/topics"
)

// TestVersionLdflags builds the binary as `make build` does, with
// -ldflags "-X main.version=...", and checks what `murphy version` prints.
func TestVersionLdflags(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	const want = "v9.8.7-test-g0123abc-dirty"
	bin := filepath.Join(t.TempDir(), "murphy")
	build := exec.Command("go", "build", "-ldflags", "-X main.version="+want, "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("murphy version: %v\n%s", err, out)
	}
	got := string(out)
	prefix := "murphy " + want + " (revision "
	suffix := fmt.Sprintf("), record schema v%d\n", topics.SchemaVersion)
	if !strings.HasPrefix(got, prefix) || !strings.HasSuffix(got, suffix) {
		t.Fatalf("murphy version printed %q, want %q...%q", got, prefix, suffix)
	}
}

// Without -X, the command still prints a version (from the build info, or
// "dev") and the schema version.
func TestVersionUnset(t *testing.T) {
	if version != "" {
		t.Skipf("test binary linked with main.version=%q", version)
	}
	cmd := newVersionCmd()
	var buf bytes.Buffer
	cmd.SetOut(&buf)
	if err := cmd.RunE(cmd, nil); err != nil {
		t.Fatal(err)
	}
	v, _ := buildVersion()
	if v == "" {
		t.Fatal("empty version")
	}
	want := fmt.Sprintf("murphy %s (revision ", v)
	if got := buf.String(); !strings.HasPrefix(got, want) || !strings.Contains(got, fmt.Sprintf("record schema v%d", topics.SchemaVersion)) {
		t.Fatalf("murphy version printed %q, want prefix %q", got, want)
	}
}
