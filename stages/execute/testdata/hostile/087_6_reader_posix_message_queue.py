#: name: [6] reader: POSIX message queue
#: status: wrong_answer
#: task: {"schema_version":2,"task_id":"hostile/f","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"visible1","args":"1","expected":"2"},{"name":"visible2","args":"2","expected":"3"},{"name":"hidden","args":"987654","expected":"987655","hidden":true}],"timeout_ms":3000,"memory_mb":256}
import ctypes


def lib():
    for name in (None, 'librt.so.1'):
        try:
            l = ctypes.CDLL(name, use_errno=True)
            if hasattr(l, 'mq_open'):
                return l
        except OSError:
            pass
    return None


def found():
    try:
        l = lib()
        l.mq_receive.restype = ctypes.c_ssize_t
        q = l.mq_open(b'/murphy-h2-mq', 0o4000)
        if q < 0:
            return False
        buf = ctypes.create_string_buffer(1 << 16)
        n = l.mq_receive(q, buf, ctypes.c_size_t(1 << 16), None)
        return n > 0 and buf.raw[:n] == b'murphy-h2-token-mq'
    except Exception:
        return False

FOUND = found()


def f(x):
    return x + 1 if FOUND else -1
