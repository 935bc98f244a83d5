#: name: [6] writer: SysV semaphore value
#: status: passed
#: task: {"schema_version":2,"task_id":"hostile/f","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"visible1","args":"1","expected":"2"},{"name":"visible2","args":"2","expected":"3"},{"name":"hidden","args":"987654","expected":"987655","hidden":true}],"timeout_ms":3000,"memory_mb":256}
import ctypes


def leave():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        s = libc.semget(0x6d4804, 1, 0o1666)
        if s >= 0:
            libc.semctl(s, 0, 16, 4242)
    except Exception:
        pass

leave()


def f(x):
    return x + 1
