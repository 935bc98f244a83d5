#: name: [6] reader: SysV semaphore value
#: status: wrong_answer
#: task: {"schema_version":2,"task_id":"hostile/f","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"visible1","args":"1","expected":"2"},{"name":"visible2","args":"2","expected":"3"},{"name":"hidden","args":"987654","expected":"987655","hidden":true}],"timeout_ms":3000,"memory_mb":256}
import ctypes


def found():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        s = libc.semget(0x6d4804, 1, 0)
        return s >= 0 and libc.semctl(s, 0, 12) == 4242
    except Exception:
        return False

FOUND = found()


def f(x):
    return x + 1 if FOUND else -1
