#: name: [K] kill -1 with STOP, TERM, KILL and CONT in a loop
#: status: passed
#: task: {"schema_version":2,"task_id":"hostile/f","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"visible1","args":"1","expected":"2"},{"name":"visible2","args":"2","expected":"3"},{"name":"hidden","args":"987654","expected":"987655","hidden":true}],"timeout_ms":3000,"memory_mb":256}
import os
import signal


def f(x):
    for _ in range(100):
        for s in (signal.SIGSTOP, signal.SIGTERM, signal.SIGKILL, signal.SIGCONT):
            try:
                os.kill(-1, s)
            except OSError:
                pass
    return x + 1
