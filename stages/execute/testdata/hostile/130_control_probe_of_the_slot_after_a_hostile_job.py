#: name: control: probe of the slot after a hostile job
#: status: passed
#: task: {"schema_version":2,"task_id":"hostile/f","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"visible1","args":"1","expected":"2"},{"name":"visible2","args":"2","expected":"3"},{"name":"hidden","args":"987654","expected":"987655","hidden":true}],"timeout_ms":3000,"memory_mb":256}
import os


def uid_of(p):
    with open('/proc/%s/status' % p) as fh:
        for line in fh:
            if line.startswith('Uid:'):
                return int(line.split()[1])
    return -1


def clean():
    me = os.getuid()
    for p in os.listdir('/proc'):
        if p.isdigit() and int(p) not in (os.getpid(), os.getppid()):
            try:
                if uid_of(p) == me:
                    return False
            except OSError:
                pass
    for d in ('.', '/tmp', '/tmp/job', '/dev/shm', '/var/tmp'):
        try:
            if any('murphy' in n for n in os.listdir(d)):
                return False
        except OSError:
            pass
    return True


RESULT = []


def f(x):
    if not RESULT:
        s = b'y' * (96 << 20)
        RESULT.append(clean() and len(s) > 0)
    return x + 1 if RESULT[0] else -1
