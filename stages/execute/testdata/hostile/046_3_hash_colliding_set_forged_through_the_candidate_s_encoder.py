#: name: [3] hash-colliding set forged through the candidate's encoder
#: status: timeout
#: also: timeout,memory,runtime_error,wrong_answer
#: max_seconds: 5
#: task: {"schema_version":2,"task_id":"hostile/f","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"visible1","args":"1","expected":"2"},{"name":"visible2","args":"2","expected":"3"},{"name":"hidden","args":"987654","expected":"987655","hidden":true}],"timeout_ms":1000,"memory_mb":256}
import sys

M = (1 << 61) - 1


def forged(v, *a, **k):
    return {'s': [{'i': format(n * M, 'x')} for n in range(1, 40001)]}


for name in ('encode', 'encode_value', 'to_wire'):
    if callable(getattr(sys.modules['__main__'], name, None)):
        setattr(sys.modules['__main__'], name, forged)
for cls in ('Encoder',):
    c = getattr(sys.modules['__main__'], cls, None)
    if isinstance(c, type):
        c.enc = lambda self, v, depth=0: forged(v)


def f(x):
    return x + 1
