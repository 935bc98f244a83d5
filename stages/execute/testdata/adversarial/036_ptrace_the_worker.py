#: name: ptrace the worker
#: status: runtime_error
#: task: {"schema_version":2,"task_id":"adv/f","kind":"python-function","prompt":"def f(x):\n","entry_point":"f","tests":[{"name":"one","args":"1","expected":"2"},{"name":"two","args":"2","expected":"3"},{"name":"hidden","args":"41","expected":"42","hidden":true}],"timeout_ms":8000,"memory_mb":256}

import ctypes, os
def f(x):
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.ptrace(16, os.getppid(), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "ptrace attach failed")
    return x + 1
