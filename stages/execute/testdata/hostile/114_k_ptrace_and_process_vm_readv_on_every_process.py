#: name: [K] ptrace and process_vm_readv on every process
#: status: passed
#: task: {"schema_version":2,"task_id":"hostile/f","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"visible1","args":"1","expected":"2"},{"name":"visible2","args":"2","expected":"3"},{"name":"hidden","args":"987654","expected":"987655","hidden":true}],"timeout_ms":3000,"memory_mb":256}
import ctypes
import os
import time


class IOV(ctypes.Structure):
    _fields_ = [('base', ctypes.c_void_p), ('len', ctypes.c_size_t)]


RESULT = []


def attack():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    libc.ptrace.restype = ctypes.c_long
    bad = False
    kid = os.fork()
    if kid == 0:
        time.sleep(5)
        os._exit(0)
    buf = ctypes.create_string_buffer(64)
    for pid in [kid, os.getppid()] + [int(p) for p in os.listdir('/proc') if p.isdigit()]:
        if pid == os.getpid():
            continue
        if libc.ptrace(ctypes.c_long(0x4206), ctypes.c_long(pid), None, None) == 0:
            bad = True
        local = IOV(ctypes.cast(buf, ctypes.c_void_p), 64)
        remote = IOV(ctypes.cast(buf, ctypes.c_void_p), 64)
        n = libc.syscall(ctypes.c_long(310), ctypes.c_long(pid), ctypes.byref(local), ctypes.c_long(1),
                         ctypes.byref(remote), ctypes.c_long(1), ctypes.c_long(0))
        if n >= 0 or ctypes.get_errno() == 14:
            bad = True
    os.kill(kid, 9)
    os.waitpid(kid, 0)
    return bad


def f(x):
    if not RESULT:
        RESULT.append(attack())
    return -1 if RESULT[0] else x + 1
