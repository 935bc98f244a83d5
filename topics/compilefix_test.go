package topics

import (
	"strings"
	"testing"
)

// TestCompileFixDependenciesValidated: a compile-fix task may name its
// dependency cache by digest, and nothing else.
func TestCompileFixDependenciesValidated(t *testing.T) {
	t.Parallel()
	digest := "sha256:" + strings.Repeat("ab", 32)
	task := Task{SchemaVersion: SchemaVersion, TaskID: "t", Kind: KindCompileFix, Prompt: "fix", ReferencePatch: "diff",
		CompileFix: &CompileFix{Workspace: digest, Build: []string{"mvn", "-o", "compile"}, Dependencies: digest}}
	if err := task.Validate(); err != nil {
		t.Fatalf("a task with its dependency cache: %v", err)
	}
	task.CompileFix.Dependencies = "/home/u/.m2/repository"
	if err := task.Validate(); err == nil || !strings.Contains(err.Error(), "compile_fix.dependencies") {
		t.Fatalf("a path for a digest: %v", err)
	}
}
