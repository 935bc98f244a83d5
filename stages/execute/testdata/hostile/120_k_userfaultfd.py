#: name: [K] userfaultfd
#: status: passed
#: task: {"schema_version":2,"task_id":"hostile/f","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"visible1","args":"1","expected":"2"},{"name":"visible2","args":"2","expected":"3"},{"name":"hidden","args":"987654","expected":"987655","hidden":true}],"timeout_ms":3000,"memory_mb":256}
import ctypes
import os


def f(x):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    bad = False
    for flags in (0, 1, 0o2000000, 0o2000001):
        fd = libc.syscall(ctypes.c_long(323), ctypes.c_long(flags))
        if fd >= 0:
            bad = True
            os.close(fd)
    try:
        fd = os.open('/dev/userfaultfd', os.O_RDWR)
        bad = True
        os.close(fd)
    except OSError:
        pass
    return -1 if bad else x + 1
