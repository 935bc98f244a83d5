#: name: [6] writer: user keyring
#: status: passed
#: task: {"schema_version":2,"task_id":"hostile/f","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"visible1","args":"1","expected":"2"},{"name":"visible2","args":"2","expected":"3"},{"name":"hidden","args":"987654","expected":"987655","hidden":true}],"timeout_ms":3000,"memory_mb":256}
import ctypes


def leave():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        for ring in (-4, -5, -3):
            libc.syscall(ctypes.c_long(248), b'user', b'murphy-h2-key', b'murphy-h2-token-key',
                         ctypes.c_long(19), ctypes.c_long(ring))
    except Exception:
        pass

leave()


def f(x):
    return x + 1
