#: name: [4] hidden args printed through a visible traceback (frames)
#: status: runtime_error
#: task: {"schema_version":2,"task_id":"hostile/f","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"visible1","args":"1","expected":"2"},{"name":"visible2","args":"2","expected":"3"},{"name":"hidden","args":"987654","expected":"987655","hidden":true}],"timeout_ms":3000,"memory_mb":256}
import sys


def f(x):
    seen = []
    fr = sys._getframe(1)
    while fr is not None:
        for v in list(fr.f_locals.values()):
            if type(v) is list:
                for e in v:
                    if type(e) is dict:
                        seen += [str(e[k]) for k in ('args', 'assert', 'stdin') if k in e]
        fr = fr.f_back
    raise ValueError('seen: ' + ' '.join(seen)[:200])
