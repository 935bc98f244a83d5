#: name: [6] writer: POSIX message queue
#: status: passed
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


def leave():
    try:
        l = lib()
        q = l.mq_open(b'/murphy-h2-mq', 0o102, 0o666, None)
        if q >= 0:
            l.mq_send(q, b'murphy-h2-token-mq', ctypes.c_size_t(18), 0)
    except Exception:
        pass

leave()


def f(x):
    return x + 1
