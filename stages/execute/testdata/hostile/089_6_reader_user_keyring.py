#: name: [6] reader: user keyring
#: status: wrong_answer
#: task: {"schema_version":2,"task_id":"hostile/f","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"visible1","args":"1","expected":"2"},{"name":"visible2","args":"2","expected":"3"},{"name":"hidden","args":"987654","expected":"987655","hidden":true}],"timeout_ms":3000,"memory_mb":256}
import ctypes


def found():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        for ring in (-4, -5, -3):
            kid = libc.syscall(ctypes.c_long(250), ctypes.c_long(10), ctypes.c_long(ring), b'user', b'murphy-h2-key',
                               ctypes.c_long(0))
            if kid > 0:
                buf = ctypes.create_string_buffer(64)
                n = libc.syscall(ctypes.c_long(250), ctypes.c_long(11), ctypes.c_long(kid), buf, ctypes.c_long(64))
                if n > 0 and buf.raw[:n] == b'murphy-h2-token-key':
                    return True
    except Exception:
        pass
    return False

FOUND = found()


def f(x):
    return x + 1 if FOUND else -1
