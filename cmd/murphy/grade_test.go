package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGradePatches grades compile-fix patches with the pipeline's judges:
// the reference (token equal), an equivalent repair that only the artifact
// judge recognises (a declaration moved and commented), and a repair that
// builds but is another program (the middle tier).
func TestGradePatches(t *testing.T) {
	if testing.Short() {
		t.Skip("builds in the sandbox")
	}
	if os.Geteuid() != 0 {
		t.Skip("the build sandbox needs root")
	}
	const moved = "--- a/ringbuf.c\n+++ b/ringbuf.c\n@@ -49,6 +49,10 @@\n     if (n > rb->len) {\n         n = rb->len;\n     }\n+\n+    /* the loop index */\n+    size_t i;\n+\n     for (i = 0; i < n; i++) {\n         dst[i] = rb->data[(rb->head + i) % rb->cap];\n     }\n"
	const other = "--- a/ringbuf.c\n+++ b/ringbuf.c\n@@ -46,11 +46,12 @@\n \n size_t rb_peek_all(const RingBuf *rb, int *dst, size_t n)\n {\n+    size_t i;\n     if (n > rb->len) {\n         n = rb->len;\n     }\n     for (i = 0; i < n; i++) {\n         dst[i] = rb->data[(rb->head + i) % rb->cap];\n     }\n-    return n;\n+    return rb->len;\n }\n"
	sols := filepath.Join(t.TempDir(), "patches.jsonl")
	var b strings.Builder
	for _, p := range []string{moved, other} {
		line, _ := json.Marshal(map[string]string{"task_id": "murphy/cf-c-ringbuf", "solution": p})
		b.Write(append(line, '\n'))
	}
	if err := os.WriteFile(sols, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, errOut, err := runMurphy(t, "grade", "--tasks", "builtin", "--kinds", "compile-fix", "--solutions", sols, "--workers", "2")
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, stdout, errOut)
	}
	var lines []gradeLine
	sc := bufio.NewScanner(strings.NewReader(stdout))
	for sc.Scan() {
		var l gradeLine
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.TaskID != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) != 2 {
		t.Fatalf("%d graded lines:\n%s", len(lines), stdout)
	}
	if l := lines[0]; l.Status != "passed" || l.Tier != "correct" || l.Judge != "artifact" || l.Reward != 1 || !strings.HasPrefix(l.Artifact, "same") {
		t.Errorf("the equivalent repair: %+v", l)
	}
	if l := lines[1]; l.Status != "passed" || l.Tier != "wrong" || l.Reward != 0.5 || !strings.HasPrefix(l.Artifact, "different") {
		t.Errorf("the other program: %+v", l)
	}
}
