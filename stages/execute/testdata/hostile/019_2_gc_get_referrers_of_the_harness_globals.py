#: name: [2] gc.get_referrers of the harness globals
#: status: wrong_answer
#: also: runtime_error
#: task: {"schema_version":2,"task_id":"hostile/f-assert","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"assert1","assert":"candidate(1) == 2"},{"name":"assert2","assert":"f(2) == 3"},{"name":"hidden","assert":"candidate(987654) == 987655","hidden":true}],"timeout_ms":3000,"memory_mb":256}
import gc
import sys


def f(x):
    for r in gc.get_referrers(vars(sys.modules['__main__'])):
        if type(r).__name__ == 'function' and r.__name__ == 'emit':
            for i in range(3):
                r({'ev': 'assert', 'i': i, 'ok': True})
            r({'ev': 'done'})
            break
    return 0
