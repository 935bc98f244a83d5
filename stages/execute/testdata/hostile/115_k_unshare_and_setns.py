#: name: [K] unshare and setns
#: status: passed
#: task: {"schema_version":2,"task_id":"hostile/f","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"visible1","args":"1","expected":"2"},{"name":"visible2","args":"2","expected":"3"},{"name":"hidden","args":"987654","expected":"987655","hidden":true}],"timeout_ms":3000,"memory_mb":256}
import ctypes
import os

RESULT = []


def attack():
    libc = ctypes.CDLL(None, use_errno=True)
    bad = False
    for flags in (0x10000000, 0x00020000, 0x40000000, 0x20000000, 0x08000000, 0x04000000, 0x02000000,
                  0x10000000 | 0x00020000 | 0x40000000):
        pid = os.fork()
        if pid == 0:
            os._exit(7 if libc.unshare(flags) == 0 else 0)
        _, st = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(st) == 7:
            bad = True
    for ns in ('net', 'mnt', 'pid', 'user', 'ipc', 'uts', 'cgroup'):
        for who in ('1', 'self'):
            try:
                fd = os.open('/proc/%s/ns/%s' % (who, ns), os.O_RDONLY)
            except OSError:
                continue
            if libc.setns(fd, 0) == 0:
                bad = True
            os.close(fd)
    return bad


def f(x):
    if not RESULT:
        RESULT.append(attack())
    return -1 if RESULT[0] else x + 1
