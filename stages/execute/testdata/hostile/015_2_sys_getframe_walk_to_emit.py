#: name: [2] sys._getframe walk to emit
#: status: wrong_answer
#: also: runtime_error
#: task: {"schema_version":2,"task_id":"hostile/f-assert","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"assert1","assert":"candidate(1) == 2"},{"name":"assert2","assert":"f(2) == 3"},{"name":"hidden","assert":"candidate(987654) == 987655","hidden":true}],"timeout_ms":3000,"memory_mb":256}
import sys


def f(x):
    fr = sys._getframe()
    while fr is not None:
        em = fr.f_locals.get('emit')
        if callable(em):
            for i in range(3):
                em({'ev': 'assert', 'i': i, 'ok': True})
            em({'ev': 'done'})
            break
        fr = fr.f_back
    return 0
