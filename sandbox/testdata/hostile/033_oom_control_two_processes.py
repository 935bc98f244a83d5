#: class: oom
#: expect: pass
#: why: 'control: 20 MB in a child and 20 MB in the parent fit a 64 MB task'
#: entry: f
#: memory_mb: 64
#: tests:
#:   - value: ["1", "2"]
#:     hidden: true
import os

def f(x):
    pid = os.fork()
    if pid == 0:
        b = bytearray(20 << 20)
        for i in range(0, len(b), 4096):
            b[i] = 1
        os._exit(0)
    a = bytearray(20 << 20)
    for i in range(0, len(a), 4096):
        a[i] = 1
    os.waitpid(pid, 0)
    return x + 1
