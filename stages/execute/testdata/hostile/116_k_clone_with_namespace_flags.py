#: name: [K] clone with namespace flags
#: status: passed
#: task: {"schema_version":2,"task_id":"hostile/f","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"visible1","args":"1","expected":"2"},{"name":"visible2","args":"2","expected":"3"},{"name":"hidden","args":"987654","expected":"987655","hidden":true}],"timeout_ms":3000,"memory_mb":256}
import ctypes
import os

RESULT = []


def attack():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    bad = False
    for flags in (0x10000000, 0x20000000, 0x40000000, 0x10000000 | 0x20000000 | 0x00020000):
        r = libc.syscall(ctypes.c_long(56), ctypes.c_long(flags | 17), ctypes.c_long(0), ctypes.c_long(0),
                         ctypes.c_long(0), ctypes.c_long(0))
        if r == 0:
            os._exit(0)
        if r > 0:
            bad = True
            os.waitpid(r, 0)
    return bad


def f(x):
    if not RESULT:
        RESULT.append(attack())
    return -1 if RESULT[0] else x + 1
