#: name: [6] writer: SysV shm
#: status: passed
#: task: {"schema_version":2,"task_id":"hostile/f","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"visible1","args":"1","expected":"2"},{"name":"visible2","args":"2","expected":"3"},{"name":"hidden","args":"987654","expected":"987655","hidden":true}],"timeout_ms":3000,"memory_mb":256}
KEY = 0x6d4802
TOKEN = b'murphy-h2-token-shm2'
CHOWN = False
import ctypes


def leave():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.shmat.restype = ctypes.c_void_p
        sid = libc.shmget(KEY, ctypes.c_size_t(4096), 0o1666)
        if sid < 0:
            return
        addr = libc.shmat(sid, None, 0)
        if not addr or addr == ctypes.c_void_p(-1).value:
            return
        ctypes.memmove(addr, TOKEN, len(TOKEN))
        if CHOWN:
            buf = ctypes.create_string_buffer(512)
            if libc.shmctl(sid, 2, buf) == 0:
                ctypes.c_uint32.from_buffer(buf, 4).value = 65534
                ctypes.c_uint32.from_buffer(buf, 8).value = 65534
                libc.shmctl(sid, 1, buf)
    except Exception:
        pass

leave()


def f(x):
    return x + 1
