#: class: zombie
#: expect: fail
#: why: 'a clone(CLONE_PARENT) sibling that exits at once: the fork server (its parent) reaps it, so the slot does not stall; the answer is wrong'
#: entry: f
#: max_wall_ms: 2500
#: tests:
#:   - value: ["1", "2"]
#:     hidden: true
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
CLONE_PARENT, SIGCHLD = 0x00008000, 17

def f(x):
    for _ in range(3):
        pid = libc.syscall(56, CLONE_PARENT | SIGCHLD, 0, 0, 0, 0)
        if pid == 0:
            os._exit(0)
    return x
