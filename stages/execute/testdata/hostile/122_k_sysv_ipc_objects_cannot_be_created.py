#: name: [K] SysV IPC objects cannot be created
#: status: passed
#: task: {"schema_version":2,"task_id":"hostile/f","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"visible1","args":"1","expected":"2"},{"name":"visible2","args":"2","expected":"3"},{"name":"hidden","args":"987654","expected":"987655","hidden":true}],"timeout_ms":3000,"memory_mb":256}
import ctypes


def f(x):
    libc = ctypes.CDLL(None, use_errno=True)
    made = False
    s = libc.shmget(0, ctypes.c_size_t(4096), 0o1600)
    if s >= 0:
        libc.shmctl(s, 0, None)
        made = True
    q = libc.msgget(0, 0o1600)
    if q >= 0:
        libc.msgctl(q, 0, None)
        made = True
    m = libc.semget(0, 1, 0o1600)
    if m >= 0:
        libc.semctl(m, 0, 0)
        made = True
    return -1 if made else x + 1
