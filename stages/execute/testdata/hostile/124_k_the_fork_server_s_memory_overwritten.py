#: name: [K] the fork server's memory overwritten
#: status: passed
#: task: {"schema_version":2,"task_id":"hostile/f","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"visible1","args":"1","expected":"2"},{"name":"visible2","args":"2","expected":"3"},{"name":"hidden","args":"987654","expected":"987655","hidden":true}],"timeout_ms":3000,"memory_mb":256}
import ctypes


def f(x):
    for line in open('/proc/self/maps'):
        if 'forkserver.so' in line and 'rw-p' in line:
            lo, hi = (int(v, 16) for v in line.split()[0].split('-'))
            ctypes.memset(lo, 0xff, hi - lo)
    return x + 1
