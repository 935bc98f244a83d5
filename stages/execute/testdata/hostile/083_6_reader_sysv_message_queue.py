#: name: [6] reader: SysV message queue
#: status: wrong_answer
#: task: {"schema_version":2,"task_id":"hostile/f","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"visible1","args":"1","expected":"2"},{"name":"visible2","args":"2","expected":"3"},{"name":"hidden","args":"987654","expected":"987655","hidden":true}],"timeout_ms":3000,"memory_mb":256}
import ctypes

KEY = 0x6d4803


class Msg(ctypes.Structure):
    _fields_ = [('mtype', ctypes.c_long), ('text', ctypes.c_char * 32)]


def found():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.msgrcv.restype = ctypes.c_ssize_t
        q = libc.msgget(KEY, 0)
        if q < 0:
            return False
        m = Msg()
        n = libc.msgrcv(q, ctypes.byref(m), ctypes.c_size_t(32), ctypes.c_long(0), 0o4000)
        return n > 0 and m.text == b'murphy-h2-token-msg'
    except Exception:
        return False

FOUND = found()


def f(x):
    return x + 1 if FOUND else -1
