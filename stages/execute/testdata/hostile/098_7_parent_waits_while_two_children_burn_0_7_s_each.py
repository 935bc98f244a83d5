#: name: [7] parent waits while two children burn 0.7 s each
#: status: timeout
#: max_seconds: 6
#: task: {"schema_version":2,"task_id":"hostile/f","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"visible1","args":"1","expected":"2"},{"name":"visible2","args":"2","expected":"3"},{"name":"hidden","args":"987654","expected":"987655","hidden":true}],"timeout_ms":1000,"memory_mb":256}
import os
import time

BURNED = []


def f(x):
    if not BURNED:
        BURNED.append(1)
        kids = []
        for _ in range(2):
            pid = os.fork()
            if pid == 0:
                end = time.process_time() + 0.7
                while time.process_time() < end:
                    pass
                os._exit(0)
            kids.append(pid)
        for pid in kids:
            os.waitpid(pid, 0)
    return x + 1
