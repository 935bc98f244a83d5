#: name: [4] hidden args found in the harness's received calls during a visible test
#: status: runtime_error
#: task: {"schema_version":2,"task_id":"hostile/f","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"visible1","args":"1","expected":"2"},{"name":"visible2","args":"2","expected":"3"},{"name":"hidden","args":"987654","expected":"987655","hidden":true}],"timeout_ms":3000,"memory_mb":256}
import gc
import __main__


def f(x):
    seen = []
    for o in gc.get_objects():
        if type(o) is dict and 'calls' in o:
            for name, a, k in o['calls']:
                seen.append(repr(__main__.decode(a)))
        if type(o) is list:
            for c in o:
                if type(c) is list and len(c) == 3 and c[0] == 'f':
                    seen.append(repr(__main__.decode(c[1])))
    if x < 100:
        raise ValueError('calls seen: ' + ' '.join(seen))
    return x + 1
