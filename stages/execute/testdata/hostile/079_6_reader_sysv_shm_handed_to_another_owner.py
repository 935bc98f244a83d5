#: name: [6] reader: SysV shm handed to another owner
#: status: wrong_answer
#: task: {"schema_version":2,"task_id":"hostile/f","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"visible1","args":"1","expected":"2"},{"name":"visible2","args":"2","expected":"3"},{"name":"hidden","args":"987654","expected":"987655","hidden":true}],"timeout_ms":3000,"memory_mb":256}
KEY = 0x6d4801
TOKEN = b'murphy-h2-token-shm1'
CHOWN = True
import ctypes


def found():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.shmat.restype = ctypes.c_void_p
        sid = libc.shmget(KEY, ctypes.c_size_t(0), 0)
        if sid < 0:
            return False
        addr = libc.shmat(sid, None, 0o10000)
        if not addr or addr == ctypes.c_void_p(-1).value:
            return False
        return ctypes.string_at(addr, len(TOKEN)) == TOKEN
    except Exception:
        return False

FOUND = found()


def f(x):
    return x + 1 if FOUND else -1
