package compilefix

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/murphy-rl/murphy/topics"
)

// equivPairs are repairs of built-in tasks compared with the task's
// reference patch: same says whether they are the same program.
var equivPairs = []struct {
	task, name string
	same       bool
	patch      string
}{
	// C: the declaration the reference adds, moved down and commented; the
	// objects differ only in debug information and line numbers.
	{"murphy/cf-c-ringbuf", "declaration moved", true, `--- a/ringbuf.c
+++ b/ringbuf.c
@@ -49,6 +49,10 @@ size_t rb_peek_all(const RingBuf *rb, int *dst, size_t n)
     if (n > rb->len) {
         n = rb->len;
     }
+
+    /* the loop index */
+    size_t i;
+
     for (i = 0; i < n; i++) {
         dst[i] = rb->data[(rb->head + i) % rb->cap];
     }
`},
	{"murphy/cf-c-ringbuf", "returns the length instead", false, `--- a/ringbuf.c
+++ b/ringbuf.c
@@ -46,11 +46,12 @@ int rb_pop(RingBuf *rb, int *out)
 
 size_t rb_peek_all(const RingBuf *rb, int *dst, size_t n)
 {
+    size_t i;
     if (n > rb->len) {
         n = rb->len;
     }
     for (i = 0; i < n; i++) {
         dst[i] = rb->data[(rb->head + i) % rb->cap];
     }
-    return n;
+    return rb->len;
 }
`},
	// Go: the same call with a comment and blank lines that move every
	// line after it.
	{"murphy/cf-go-lru", "comment and blank lines", true, `--- a/lru/cache.go
+++ b/lru/cache.go
@@ -23,11 +23,15 @@ func NewCache[K comparable, V any](capacity int) *Cache[K, V] {
 
 // Get returns the value of key and marks it as recently used.
 func (c *Cache[K, V]) Get(key K) (V, bool) {
+
 	e, ok := c.items[key]
 	if !ok {
 		var zero V
 		return zero, false
 	}
-	c.order.moveToFrnot(e)
+
+	// A hit is the most recent use.
+	(c.order).moveToFront(e)
+
 	return e.value, true
 }
`},
	{"murphy/cf-go-lru", "guarded call", false, `--- a/lru/cache.go
+++ b/lru/cache.go
@@ -28,6 +28,8 @@ func (c *Cache[K, V]) Get(key K) (V, bool) {
 		var zero V
 		return zero, false
 	}
-	c.order.moveToFrnot(e)
+	if len(c.items) > 1 {
+		c.order.moveToFront(e)
+	}
 	return e.value, true
 }
`},
	// Java: the missing brace with a comment and a blank line: only the
	// LineNumberTable differs.
	{"murphy/cf-java-shapes", "brace with a comment", true, `--- a/src/shapes/Polygon.java
+++ b/src/shapes/Polygon.java
@@ -29,6 +29,9 @@ public final class Polygon implements Shape {
         for (int i = 0; i < xs.length; i++) {
             int j = (i + 1) % xs.length;
             twice += xs[i] * ys[j] - xs[j] * ys[i];
+
+        } // every edge counted
+
         return Math.abs(twice) / 2;
     }
 
`},
	{"murphy/cf-java-shapes", "halves twice", false, `--- a/src/shapes/Polygon.java
+++ b/src/shapes/Polygon.java
@@ -29,6 +29,7 @@ public final class Polygon implements Shape {
         for (int i = 0; i < xs.length; i++) {
             int j = (i + 1) % xs.length;
             twice += xs[i] * ys[j] - xs[j] * ys[i];
+        }
-        return Math.abs(twice) / 2;
+        return Math.abs(twice) * 0.5;
     }
 
`},
	// Python: the missing colon with a comment and a blank line.
	{"murphy/cf-py-todo", "colon with a comment", true, `--- a/todo/store.py
+++ b/todo/store.py
@@ -34,7 +34,8 @@ class Store:
         self.items.append(item)
         return len(self.items)
 
-    def complete(self, number)
+    def complete(self, number):  # 1-based
+
         if not 1 <= number <= len(self.items):
             raise IndexError(f"no item {number}")
         self.items[number - 1].done = True
`},
	{"murphy/cf-py-todo", "default argument", false, `--- a/todo/store.py
+++ b/todo/store.py
@@ -34,7 +34,7 @@ class Store:
         self.items.append(item)
         return len(self.items)
 
-    def complete(self, number)
+    def complete(self, number=1):
         if not 1 <= number <= len(self.items):
             raise IndexError(f"no item {number}")
         self.items[number - 1].done = True
`},
}

// TestEquivalenceBuiltinPairs builds the reference-patched and the
// candidate-patched snapshots of built-in C, Go, Java and Python tasks in
// the build sandbox and compares their normalised artifacts. The candidates
// pass the build (execute's verdict) either way; only the equal pairs are
// the same program.
func TestEquivalenceBuiltinPairs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds in the sandbox")
	}
	cf, byID, _ := openCompileFix(t)
	eq := &Equivalence{Builder: cf.Builder, Cache: cf.Cache, Dir: t.TempDir()}
	ctx := context.Background()
	for _, tc := range equivPairs {
		t.Run(tc.task+"/"+tc.name, func(t *testing.T) {
			task := byID[tc.task]
			if task == nil {
				t.Fatalf("no built-in task %s", tc.task)
			}
			if out := evalCF(t, cf, task, tc.patch); out.Status != topics.StatusPassed {
				t.Fatalf("the candidate does not build: %s\n%s", out.Status, out.Feedback)
			}
			res, err := eq.Compare(ctx, task, tc.patch)
			if err != nil {
				t.Fatal(err)
			}
			want := EquivDifferent
			if tc.same {
				want = EquivSame
			}
			if res.Verdict != want {
				t.Fatalf("verdict %v (%s), want %v", res.Verdict, res.Reason, want)
			}
			t.Logf("%s: %v, %s", res.Language, res.Verdict, res.Reason)
		})
	}
	t.Run("the reference itself", func(t *testing.T) {
		task := byID["murphy/cf-c-ringbuf"]
		res, err := eq.Compare(ctx, task, task.ReferencePatch)
		if err != nil || res.Verdict != EquivSame {
			t.Fatalf("%v %v (%s)", res.Verdict, err, res.Reason)
		}
	})
	t.Run("a patch that does not apply", func(t *testing.T) {
		task := byID["murphy/cf-c-ringbuf"]
		res, err := eq.Compare(ctx, task, "--- a/ringbuf.c\n+++ b/ringbuf.c\n@@ -1,1 +1,1 @@\n-no such line\n+x\n")
		if err != nil || res.Verdict != EquivUnknown {
			t.Fatalf("%v %v (%s)", res.Verdict, err, res.Reason)
		}
	})
}

// TestStripClassDebug compiles one class twice with javac, the second time
// with its code moved down and commented: the class files differ, and are
// equal without their line tables and source file.
func TestStripClassDebug(t *testing.T) {
	if _, err := exec.LookPath("javac"); err != nil {
		t.Skip("no javac")
	}
	t.Parallel()
	dir := t.TempDir()
	compile := func(name, src string) []byte {
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "A.java"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("javac", "-g", "-d", d, filepath.Join(d, "A.java")).CombinedOutput(); err != nil {
			t.Fatalf("javac: %v\n%s", err, out)
		}
		b, err := os.ReadFile(filepath.Join(d, "A.class"))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a := compile("a", "class A { int f(int x) { return x + 1; } }\n")
	b := compile("b", "class A {\n\n  // one more\n  int f(int x) {\n    return (x + 1);\n  }\n}\n")
	c := compile("c", "class A { int f(int x) { return x + 2; } }\n")
	if string(a) == string(b) {
		t.Fatal("the test needs class files that differ in their line tables")
	}
	sa, err := StripClassDebug(a)
	if err != nil {
		t.Fatal(err)
	}
	sb, _ := StripClassDebug(b)
	sc, _ := StripClassDebug(c)
	if string(sa) != string(sb) {
		t.Error("the same code with other lines differs after stripping")
	}
	if string(sa) == string(sc) {
		t.Error("different code is equal after stripping")
	}
	if _, err := StripClassDebug(a[:len(a)-3]); err == nil {
		t.Error("a truncated class file was accepted")
	}
	if len(sa) >= len(a) {
		t.Error("nothing was stripped")
	}
}
