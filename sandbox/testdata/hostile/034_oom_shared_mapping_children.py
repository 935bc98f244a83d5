#: class: oom
#: expect: fail
#: why: 'a 48 MB shared mapping touched by the parent plus 30 MB in each of two children under a 64 MB task: shared and private pages of all the job''s processes count'
#: entry: f
#: memory_mb: 64
#: wall_ms: 8000
#: tests:
#:   - value: ["1", "2"]
#:     hidden: true
import mmap, os

def f(x):
    m = mmap.mmap(-1, 48 << 20, flags=mmap.MAP_SHARED)
    for i in range(0, len(m), 4096):
        m[i] = 1
    kids = []
    r, w = os.pipe()
    for _ in range(2):
        pid = os.fork()
        if pid == 0:
            b = bytearray(30 << 20)
            for i in range(0, len(b), 4096):
                b[i] = 1
            os.write(w, b"k")
            import time
            time.sleep(2)
            os._exit(0)
        kids.append(pid)
    os.close(w)
    got = b""
    while len(got) < 2:
        b = os.read(r, 2)
        if not b:
            break
        got += b
    for k in kids:
        os.kill(k, 9)
        os.waitpid(k, 0)
    return x + 1 if len(got) == 2 else -1
