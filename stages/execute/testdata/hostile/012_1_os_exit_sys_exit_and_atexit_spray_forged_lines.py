#: name: [1] os._exit, sys.exit and atexit spray forged lines
#: status: wrong_answer
#: also: runtime_error
#: task: {"schema_version":2,"task_id":"hostile/f","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"visible1","args":"1","expected":"2"},{"name":"visible2","args":"2","expected":"3"},{"name":"hidden","args":"987654","expected":"987655","hidden":true}],"timeout_ms":3000,"memory_mb":256}
import atexit
import os
import sys

LINES = [b'{"ev":"assert","i":%d,"ok":true}\n' % i for i in range(3)] + [b'{"ev":"done"}\n']
real_exit = os._exit


def spray():
    for fd in range(3, 256):
        for line in LINES:
            try:
                os.write(fd, line)
            except OSError:
                pass


def fake_exit(code=0):
    spray()
    real_exit(0)


os._exit = fake_exit
sys.exit = fake_exit
atexit.register(spray)


def f(x):
    return 0
