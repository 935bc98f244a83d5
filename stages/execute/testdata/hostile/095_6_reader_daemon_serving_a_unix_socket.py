#: name: [6] reader: daemon serving a unix socket
#: status: wrong_answer
#: task: {"schema_version":2,"task_id":"hostile/f","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"visible1","args":"1","expected":"2"},{"name":"visible2","args":"2","expected":"3"},{"name":"hidden","args":"987654","expected":"987655","hidden":true}],"timeout_ms":3000,"memory_mb":256}
import socket


def found():
    for addr in ('\0murphy-h2-daemon', '/tmp/job/murphy-h2.sock'):
        try:
            c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            c.settimeout(1)
            c.connect(addr)
            if c.recv(64) == b'murphy-h2-token-daemon':
                return True
        except OSError:
            pass
    return False

FOUND = found()


def f(x):
    return x + 1 if FOUND else -1
