#: class: zombie
#: expect: pass
#: why: 'an honest program that leaves a CLONE_PARENT sibling behind: still judged on its answer, and quickly'
#: entry: f
#: max_wall_ms: 2500
#: tests:
#:   - value: ["1", "2"]
#:     hidden: true
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)

def f(x):
    pid = libc.syscall(56, 0x00008000 | 17, 0, 0, 0, 0)
    if pid == 0:
        os._exit(0)
    return x + 1
