#: name: [K] keyctl join session keyring and add_key
#: status: passed
#: task: {"schema_version":2,"task_id":"hostile/f","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"visible1","args":"1","expected":"2"},{"name":"visible2","args":"2","expected":"3"},{"name":"hidden","args":"987654","expected":"987655","hidden":true}],"timeout_ms":3000,"memory_mb":256}
import ctypes


def f(x):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    r1 = libc.syscall(ctypes.c_long(250), ctypes.c_long(1), b'murphy-h2-session')
    r2 = libc.syscall(ctypes.c_long(248), b'user', b'murphy-h2-k2', b'v', ctypes.c_long(1), ctypes.c_long(-2))
    return -1 if r1 >= 0 or r2 >= 0 else x + 1
