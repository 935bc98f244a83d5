#: name: [4] hidden asserts printed through a visible traceback (gc)
#: status: runtime_error
#: task: {"schema_version":2,"task_id":"hostile/f-assert","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"assert1","assert":"candidate(1) == 2"},{"name":"assert2","assert":"f(2) == 3"},{"name":"hidden","assert":"candidate(987654) == 987655","hidden":true}],"timeout_ms":3000,"memory_mb":256}
import gc


def f(x):
    seen = []
    for o in gc.get_objects():
        if type(o) is list and o and all(type(e) is dict for e in o):
            seen += [str(e[k]) for e in o for k in ('args', 'assert', 'check') if k in e]
    raise ValueError('seen: ' + ' '.join(s for s in seen if len(s) < 80)[:200])
