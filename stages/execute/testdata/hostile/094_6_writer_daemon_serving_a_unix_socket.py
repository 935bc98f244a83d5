#: name: [6] writer: daemon serving a unix socket
#: status: passed
#: task: {"schema_version":2,"task_id":"hostile/f","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"visible1","args":"1","expected":"2"},{"name":"visible2","args":"2","expected":"3"},{"name":"hidden","args":"987654","expected":"987655","hidden":true}],"timeout_ms":3000,"memory_mb":256}
import os
import signal
import socket
import time


def leave():
    pid = os.fork()
    if pid != 0:
        os.waitpid(pid, 0)
        return
    try:
        os.setsid()
        if os.fork() != 0:
            os._exit(0)
        for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(s, signal.SIG_IGN)
        for fd in range(64):
            try:
                os.close(fd)
            except OSError:
                pass
        srvs = []
        for addr in ('\0murphy-h2-daemon', '/tmp/job/murphy-h2.sock'):
            try:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.bind(addr)
                s.listen(4)
                s.settimeout(0.05)
                srvs.append(s)
            except OSError:
                pass
        end = time.time() + 30
        while time.time() < end:
            for s in srvs:
                try:
                    c, _ = s.accept()
                except OSError:
                    continue
                c.sendall(b'murphy-h2-token-daemon')
                c.close()
    finally:
        os._exit(0)

leave()


def f(x):
    return x + 1
