package backfill

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseManifest(t *testing.T) {
	yamlList := `
- kind: history
  name: one
  repo: repos/one
  fail: abc
  fix: def
  log: logs/one.log
  build: [make]
- kind: inject
  repo: /abs/two
  count: 3
- kind: history
  repo: x
  fial: abc
- kind: cobol
  repo: y
`
	m, err := ParseManifest([]byte(yamlList), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Items) != 2 || m.Items[0].Build[0] != "make" || m.Items[1].Count != 3 || len(m.Errors) != 2 {
		t.Fatalf("items %+v errors %v", m.Items, m.Errors)
	}
	if e := m.Errors[0].Error(); !strings.Contains(e, "line 12") || !strings.Contains(e, "fial") {
		t.Fatalf("unknown field error: %s", e)
	}
	if e := m.Errors[1].Error(); !strings.Contains(e, "line 15") || !strings.Contains(e, `kind "cobol"`) {
		t.Fatalf("unknown kind error: %s", e)
	}
	// JSON, as an object with a run id.
	m, err = ParseManifest([]byte(`{"run_id": "bf1", "items": [{"kind": "inject", "repo": "r"}]}`), false)
	if err != nil || m.RunID != "bf1" || len(m.Items) != 1 {
		t.Fatalf("json: %+v %v", m, err)
	}
	// JSONL: a broken line is reported with its number, the others read.
	m, err = ParseManifest([]byte("{\"kind\": \"inject\", \"repo\": \"r\"}\n{\"kind\": \n\n{\"kind\": \"inject\", \"repo\": \"s\"}\n"), true)
	if err != nil || len(m.Items) != 2 || len(m.Errors) != 1 || !strings.Contains(m.Errors[0].Error(), "line 2") {
		t.Fatalf("jsonl: %+v %v", m, err)
	}
	if _, err := ParseManifest([]byte("items: 3"), false); err == nil {
		t.Fatal("items not a list accepted")
	}
}

// Relative paths resolve against the manifest's directory; the key is the
// item as written, so it does not depend on where the manifest lies.
func TestLoadManifestResolvesPaths(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.yaml")
	if err := os.WriteFile(path, []byte("- {kind: history, repo: r, fail: a, fix: b, log: l.log}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := LoadManifest(path)
	if err != nil {
		t.Fatal(err)
	}
	it := m.Items[0]
	r := it.resolved(m.Dir)
	if r.Repo != filepath.Join(dir, "r") || r.Log != filepath.Join(dir, "l.log") || r.Key() == it.Key() {
		t.Fatalf("resolved %+v", r)
	}
	other := Item{Kind: KindHistory, Repo: "r", Fail: "a", Fix: "b", Log: "l.log"}
	if other.Key() != it.Key() || DefaultRunID(m.Items) != DefaultRunID([]Item{other}) || !strings.HasPrefix(DefaultRunID(m.Items), "backfill-") {
		t.Fatal("keys and run ids must depend on the items only")
	}
	if _, err := LoadManifest(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Fatal("missing manifest accepted")
	}
}
