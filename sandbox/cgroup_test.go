package sandbox

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestLeakedIsExactAboveTheLimit: the leak check after a job reads the
// group's memory counter and memory.stat only beyond the limit. A process
// that holds 160 MiB of anonymous memory is reported exactly (as
// memory.stat's anonymous and shared memory above the level at attach,
// read through the same kept-open files, so rereads are fresh), and once
// it frees the memory the slot is within the limit again.
func TestLeakedIsExactAboveTheLimit(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("cgroups need root")
	}
	c := newCgroupsTagged("murphy-test-leak", 512, 64)
	t.Cleanup(c.remove)
	cmd := exec.Command(DefaultConfig().Python, "-I", "-S", "-c", `import sys
held = None
for line in sys.stdin:
    held = bytearray(160 << 20) if line.strip() == "hold" else None
    if held is not None:
        for i in range(0, len(held), 4096):
            held[i] = 1
    print("ok", flush=True)
`)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	out := bufio.NewReader(outPipe)
	say := func(word string) {
		t.Helper()
		if _, err := io.WriteString(in, word+"\n"); err != nil {
			t.Fatal(err)
		}
		if line, err := out.ReadString('\n'); err != nil || line != "ok\n" {
			t.Fatalf("child said %q, %v", line, err)
		}
	}
	say("free") // the interpreter is up before the group's base is taken
	c.attach(0, cmd.Process.Pid)
	if !c.active() {
		t.Skip("cgroups are not writable here")
	}
	const limit = 64 << 20
	say("hold")
	n := c.leaked(0, limit)
	c.mu.Lock()
	exact := c.residentLocked(0) - c.base[0]
	c.mu.Unlock()
	if n <= limit || n != exact {
		t.Fatalf("leaked %d MiB, memory.stat says %d MiB above the base", n>>20, exact>>20)
	}
	say("free")
	deadline := time.Now().Add(5 * time.Second)
	for c.leaked(0, limit) > limit {
		if time.Now().After(deadline) {
			t.Fatalf("still %d MiB above the base after the memory was freed", c.leaked(0, limit)>>20)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
