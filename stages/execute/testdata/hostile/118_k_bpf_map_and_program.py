#: name: [K] bpf map and program
#: status: passed
#: task: {"schema_version":2,"task_id":"hostile/f","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"visible1","args":"1","expected":"2"},{"name":"visible2","args":"2","expected":"3"},{"name":"hidden","args":"987654","expected":"987655","hidden":true}],"timeout_ms":3000,"memory_mb":256}
import ctypes
import os
import struct


def f(x):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    bad = False
    attr = ctypes.create_string_buffer(struct.pack('IIII', 2, 4, 4, 1) + bytes(112))
    fd = libc.syscall(ctypes.c_long(321), ctypes.c_long(0), attr, ctypes.c_long(128))
    if fd >= 0:
        bad = True
        os.close(fd)
    insns = (ctypes.c_uint64 * 2)(0xb7, 0x95)
    lic = ctypes.create_string_buffer(b'GPL')
    attr2 = ctypes.create_string_buffer(128)
    struct.pack_into('IIQQIIQ', attr2, 0, 1, 2, ctypes.addressof(insns), ctypes.addressof(lic), 0, 0, 0)
    fd = libc.syscall(ctypes.c_long(321), ctypes.c_long(5), attr2, ctypes.c_long(128))
    if fd >= 0:
        bad = True
        os.close(fd)
    return -1 if bad else x + 1
