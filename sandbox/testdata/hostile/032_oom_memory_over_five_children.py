#: class: oom
#: expect: fail
#: why: 'five children of 40 MB each (200 MB) at the same time under a 64 MB task: memory is the whole job''s, not a process''s'
#: entry: f
#: memory_mb: 64
#: wall_ms: 8000
#: tests:
#:   - value: ["1", "2"]
#:     hidden: true
import os

def f(x):
    r, w = os.pipe()
    kids = []
    for _ in range(5):
        pid = os.fork()
        if pid == 0:
            os.close(r)
            b = bytearray(40 << 20)
            for i in range(0, len(b), 4096):
                b[i] = 1
            os.write(w, b"k")
            os.read(os.open("/dev/zero", os.O_RDONLY), 1)
            import time
            time.sleep(3)
            os._exit(0)
        kids.append(pid)
    os.close(w)
    got = 0
    while got < 5:
        b = os.read(r, 5)
        if not b:
            break
        got += len(b)
    for k in kids:
        os.kill(k, 9)
        os.waitpid(k, 0)
    return x + 1 if got == 5 else -1
