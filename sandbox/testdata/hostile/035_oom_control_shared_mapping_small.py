#: class: oom
#: expect: pass
#: why: 'control: a 16 MB shared mapping and a child of 16 MB fit a 64 MB task'
#: entry: f
#: memory_mb: 64
#: tests:
#:   - value: ["1", "2"]
#:     hidden: true
import mmap, os

def f(x):
    m = mmap.mmap(-1, 16 << 20, flags=mmap.MAP_SHARED)
    for i in range(0, len(m), 4096):
        m[i] = 1
    pid = os.fork()
    if pid == 0:
        b = bytearray(16 << 20)
        for i in range(0, len(b), 4096):
            b[i] = 1
        os._exit(0)
    os.waitpid(pid, 0)
    return x + 1
