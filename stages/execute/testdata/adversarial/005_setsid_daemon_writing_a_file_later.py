#: name: setsid daemon writing a file later
#: status: passed
#: task: {"schema_version":2,"task_id":"adv/f","kind":"python-function","prompt":"def f(x):\n","entry_point":"f","tests":[{"name":"one","args":"1","expected":"2"},{"name":"two","args":"2","expected":"3"},{"name":"hidden","args":"41","expected":"42","hidden":true}],"timeout_ms":8000,"memory_mb":256}

import os, time
def f(x):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            time.sleep(1.5)
            with open("/tmp/job/late.txt", "w") as fh:
                fh.write("late")
            os.write(1, b"late\n")
        os._exit(0)
    return x + 1
