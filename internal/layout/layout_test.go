package layout

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/murphy-rl/murphy"

// kafkaClients are the import paths that reach Kafka.
var kafkaClients = []string{"github.com/segmentio/kafka-go", "github.com/ThreeDotsLabs/watermill", "github.com/twmb/franz-go"}

type pkg struct {
	ImportPath string
	Imports    []string
}

// packages lists the module's packages with their non-test imports.
func packages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var ps []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	if len(ps) < 10 {
		t.Fatalf("go list found only %d packages", len(ps))
	}
	return ps
}

// local is path relative to the module, and whether it is in the module.
func local(path string) (string, bool) {
	if path == module {
		return ".", true
	}
	rest, ok := strings.CutPrefix(path, module+"/")
	return rest, ok
}

func under(path, dir string) bool { return path == dir || strings.HasPrefix(path, dir+"/") }

// stageOf is the stage a module package belongs to ("" when none).
func stageOf(path string) string {
	parts := strings.Split(path, "/")
	if len(parts) >= 2 && parts[0] == "stages" {
		return parts[1]
	}
	return ""
}

// tool reports whether a module package may import any stage: the CLI, the
// stage registry and the tools under internal/.
func tool(path string) bool {
	return under(path, "cmd") || path == "stages" || under(path, "internal")
}

// violations lists every import that breaks the rule of doc.go.
func violations(ps []pkg) []string {
	var bad []string
	for _, p := range ps {
		from, ok := local(p.ImportPath)
		if !ok {
			continue
		}
		for _, full := range p.Imports {
			imp, mine := local(full)
			switch {
			case mine && from == "topics":
				bad = append(bad, from+" imports "+imp+": topics imports no other package of the module")
			case mine && under(from, "pipeline") && imp != "topics" && !under(imp, "pipeline"):
				bad = append(bad, from+" imports "+imp+": pipeline imports only topics")
			case mine && stageOf(imp) != "" && !tool(from) && stageOf(from) != stageOf(imp):
				bad = append(bad, from+" imports "+imp+": a stage is imported only by its own folder, the registry, cmd and internal/")
			}
			for _, k := range kafkaClients {
				if under(full, k) && !under(from, "pipeline") && !under(from, "deploy") && !under(from, "internal") {
					bad = append(bad, from+" imports "+full+": Kafka is reached only through pipeline")
				}
			}
		}
	}
	return bad
}

func TestDependencyRule(t *testing.T) {
	for _, v := range violations(packages(t)) {
		t.Error(v)
	}
}

// TestViolationsAreFound checks the rule itself on a made-up module.
func TestViolationsAreFound(t *testing.T) {
	m := func(p string) string { return module + "/" + p }
	ps := []pkg{
		{ImportPath: m("topics"), Imports: []string{"fmt", m("pipeline")}},
		{ImportPath: m("pipeline"), Imports: []string{m("topics"), m("sandbox"), kafkaClients[0]}},
		{ImportPath: m("stages/govern"), Imports: []string{m("stages/generate/episode"), m("pipeline")}},
		{ImportPath: m("stages/generate"), Imports: []string{m("stages/generate/policy"), kafkaClients[1] + "/message"}},
		{ImportPath: m("backfill"), Imports: []string{m("stages/execute")}},
		{ImportPath: m("cmd/murphy"), Imports: []string{m("stages/execute"), m("stages/generate")}},
		{ImportPath: m("internal/bench"), Imports: []string{m("stages/emit"), kafkaClients[0]}},
	}
	got := violations(ps)
	want := []string{
		"topics imports pipeline",
		"pipeline imports sandbox",
		"stages/govern imports stages/generate/episode",
		"stages/generate imports github.com/ThreeDotsLabs/watermill/message",
		"backfill imports stages/execute",
	}
	if len(got) != len(want) {
		t.Fatalf("got %d violations, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]+":") {
			t.Errorf("violation %d = %q, want %q", i, got[i], want[i])
		}
	}
}
