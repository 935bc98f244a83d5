#: name: [K] signal every process found in /proc
#: status: passed
#: task: {"schema_version":2,"task_id":"hostile/f","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"visible1","args":"1","expected":"2"},{"name":"visible2","args":"2","expected":"3"},{"name":"hidden","args":"987654","expected":"987655","hidden":true}],"timeout_ms":3000,"memory_mb":256}
import os
import signal


def f(x):
    me = os.getpid()
    for p in os.listdir('/proc'):
        if p.isdigit() and int(p) != me:
            for s in (signal.SIGSTOP, signal.SIGKILL):
                try:
                    os.kill(int(p), s)
                except OSError:
                    pass
            try:
                os.killpg(int(p), signal.SIGKILL)
            except OSError:
                pass
    return x + 1
