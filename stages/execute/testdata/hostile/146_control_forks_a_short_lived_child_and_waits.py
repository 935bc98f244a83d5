#: name: control: forks a short-lived child and waits
#: status: passed
#: task: {"schema_version":2,"task_id":"hostile/f","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"visible1","args":"1","expected":"2"},{"name":"visible2","args":"2","expected":"3"},{"name":"hidden","args":"987654","expected":"987655","hidden":true}],"timeout_ms":3000,"memory_mb":256}
import os


def f(x):
    pid = os.fork()
    if pid == 0:
        os._exit(x % 7)
    _, st = os.waitpid(pid, 0)
    return x + 1 if os.waitstatus_to_exitcode(st) == x % 7 else -1
