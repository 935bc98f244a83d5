#: name: [1] json.JSONEncoder.encode patched
#: status: wrong_answer
#: also: runtime_error
#: task: {"schema_version":2,"task_id":"hostile/f","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"visible1","args":"1","expected":"2"},{"name":"visible2","args":"2","expected":"3"},{"name":"hidden","args":"987654","expected":"987655","hidden":true}],"timeout_ms":3000,"memory_mb":256}
import json

real = json.JSONEncoder.encode


def encode(self, obj):
    if type(obj) is dict and obj.get('ev') == 'value' and 'i' in obj:
        obj = {'ev': 'assert', 'i': obj['i'], 'ok': True}
    return real(self, obj)


json.JSONEncoder.encode = encode


def f(x):
    return 0
