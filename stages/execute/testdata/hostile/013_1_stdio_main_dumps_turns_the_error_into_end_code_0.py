#: name: [1] stdio: __main__._dumps turns the error into end code 0
#: status: runtime_error
#: task: {"schema_version":2,"task_id":"hostile/sum","kind":"stdio","prompt":"Print the sum of the integers on stdin.","tests":[{"name":"case1","expected":"3\n","stdin":"1 2\n"},{"name":"hidden","expected":"987655\n","stdin":"987654 1\n","hidden":true}],"timeout_ms":3000,"memory_mb":256}
import json
import sys

real = json.dumps


def fake(obj, **kw):
    if type(obj) is dict and obj.get('ev') == 'error':
        obj = {'ev': 'end', 'code': 0}
    return real(obj, **kw)


sys.modules['__main__']._dumps = fake
print(sum(map(int, sys.stdin.read().split())), flush=True)
raise RuntimeError('after the answer')
