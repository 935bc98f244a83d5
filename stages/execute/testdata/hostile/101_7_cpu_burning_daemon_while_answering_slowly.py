#: name: [7] CPU-burning daemon while answering slowly
#: status: timeout
#: max_seconds: 6
#: task: {"schema_version":2,"task_id":"hostile/f","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"visible1","args":"1","expected":"2"},{"name":"visible2","args":"2","expected":"3"},{"name":"hidden","args":"987654","expected":"987655","hidden":true}],"timeout_ms":1000,"memory_mb":256}
import os
import time

STARTED = []


def f(x):
    if not STARTED:
        STARTED.append(1)
        if os.fork() == 0:
            os.setsid()
            while True:
                pass
    time.sleep(0.45)
    return x + 1
