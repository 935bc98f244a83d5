#: name: [K] mount, fsopen and mount in a user namespace
#: status: passed
#: task: {"schema_version":2,"task_id":"hostile/f","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"visible1","args":"1","expected":"2"},{"name":"visible2","args":"2","expected":"3"},{"name":"hidden","args":"987654","expected":"987655","hidden":true}],"timeout_ms":3000,"memory_mb":256}
import ctypes
import os

RESULT = []


def attack():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    bad = libc.mount(b'none', b'/tmp/job', b'tmpfs', ctypes.c_ulong(0), None) == 0
    fd = libc.syscall(ctypes.c_long(430), b'tmpfs', ctypes.c_long(0))
    if fd >= 0:
        bad = True
        os.close(fd)
    pid = os.fork()
    if pid == 0:
        ok = libc.unshare(0x10000000 | 0x00020000) == 0 and libc.mount(b'none', b'/tmp', b'tmpfs', ctypes.c_ulong(0), None) == 0
        os._exit(7 if ok else 0)
    _, st = os.waitpid(pid, 0)
    return bad or os.waitstatus_to_exitcode(st) == 7


def f(x):
    if not RESULT:
        RESULT.append(attack())
    return -1 if RESULT[0] else x + 1
