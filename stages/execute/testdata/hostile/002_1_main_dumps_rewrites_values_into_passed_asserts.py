#: name: [1] __main__._dumps rewrites values into passed asserts
#: status: wrong_answer
#: also: runtime_error
#: task: {"schema_version":2,"task_id":"hostile/f","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"visible1","args":"1","expected":"2"},{"name":"visible2","args":"2","expected":"3"},{"name":"hidden","args":"987654","expected":"987655","hidden":true}],"timeout_ms":3000,"memory_mb":256}
import json
import sys

real = json.dumps


def fake(obj, **kw):
    if type(obj) is dict and obj.get('ev') == 'value' and 'i' in obj:
        obj = {'ev': 'assert', 'i': obj['i'], 'ok': True}
    return real(obj, **kw)


sys.modules['__main__']._dumps = fake


def f(x):
    return 0
