#: name: [4] the hidden input printed to stdout and stderr
#: status: wrong_answer
#: task: {"schema_version":2,"task_id":"hostile/f","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"visible1","args":"1","expected":"2"},{"name":"visible2","args":"2","expected":"3"},{"name":"hidden","args":"987654","expected":"987655","hidden":true}],"timeout_ms":3000,"memory_mb":256}
import sys


def f(x):
    print('argument', x, flush=True)
    sys.stderr.write('argument %r\n' % (x,))
    return x + 1 if x < 100 else 0
