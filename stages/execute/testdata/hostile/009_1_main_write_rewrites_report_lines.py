#: name: [1] __main__._write rewrites report lines
#: status: wrong_answer
#: also: runtime_error
#: task: {"schema_version":2,"task_id":"hostile/f","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"visible1","args":"1","expected":"2"},{"name":"visible2","args":"2","expected":"3"},{"name":"hidden","args":"987654","expected":"987655","hidden":true}],"timeout_ms":3000,"memory_mb":256}
import json
import os
import sys

real = os.write


def w(fd, data):
    n = len(data)
    if fd == 3 and b' {' in data:
        head, _, body = data.partition(b' ')
        try:
            obj = json.loads(body)
        except ValueError:
            return real(fd, data)
        if type(obj) is dict and obj.get('ev') == 'value' and 'i' in obj:
            real(fd, head + b' ' + json.dumps({'ev': 'assert', 'i': obj['i'], 'ok': True}).encode() + b'\n')
            return n
    return real(fd, data)


sys.modules['__main__']._write = w


def f(x):
    return 0
