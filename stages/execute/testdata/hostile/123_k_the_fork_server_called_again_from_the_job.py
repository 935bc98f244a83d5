#: name: [K] the fork server called again from the job
#: status: passed
#: task: {"schema_version":2,"task_id":"hostile/f","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"visible1","args":"1","expected":"2"},{"name":"visible2","args":"2","expected":"3"},{"name":"hidden","args":"987654","expected":"987655","hidden":true}],"timeout_ms":3000,"memory_mb":256}
import ctypes
import os
import socket


class Worker(ctypes.Structure):
    _fields_ = [('ctrl', ctypes.c_int32), ('judge', ctypes.c_int32), ('uid', ctypes.c_int32),
                ('reserved', ctypes.c_int32), ('vmsize', ctypes.c_int64)]


def f(x):
    lib = ctypes.PyDLL('/opt/murphy/forkserver.so')
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    b.close()
    role = lib.murphy_serve(ctypes.byref(Worker(a.fileno(), os.dup(0), 0, 0, 1 << 40)))
    if role != 0:
        os._exit(0)
    return x + 1
