#: name: loop ignoring SIGALRM and SIGXCPU
#: status: timeout
#: task: {"schema_version":2,"task_id":"adv/f","kind":"python-function","prompt":"def f(x):\n","entry_point":"f","tests":[{"name":"one","args":"1","expected":"2"},{"name":"two","args":"2","expected":"3"},{"name":"hidden","args":"41","expected":"42","hidden":true}],"timeout_ms":3000,"memory_mb":256}

import signal
signal.signal(signal.SIGALRM, signal.SIG_IGN)
signal.signal(signal.SIGXCPU, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
def f(x):
    signal.alarm(1)
    while True:
        pass
