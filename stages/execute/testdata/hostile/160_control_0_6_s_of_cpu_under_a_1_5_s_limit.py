#: name: control: 0.6 s of CPU under a 1.5 s limit
#: status: passed
#: task: {"schema_version":2,"task_id":"hostile/f","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"visible1","args":"1","expected":"2"},{"name":"visible2","args":"2","expected":"3"},{"name":"hidden","args":"987654","expected":"987655","hidden":true}],"timeout_ms":1500,"memory_mb":256}
import time

DONE = []


def f(x):
    if not DONE:
        end = time.process_time() + 0.6
        while time.process_time() < end:
            pass
        DONE.append(1)
    return x + 1
