#: name: [1] builtins isinstance, type, repr, bool, print, AssertionError replaced
#: status: wrong_answer
#: also: runtime_error
#: task: {"schema_version":2,"task_id":"hostile/f-isinstance","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"assert1","assert":"isinstance(candidate(1), int) and candidate(1) == 2"},{"name":"assert2","assert":"type(f(2)) is int and f(2) == 3"},{"name":"hidden","assert":"candidate(987654) == 987655","hidden":true}],"timeout_ms":3000,"memory_mb":256}
import builtins


class A:
    def __eq__(self, other):
        return True

    __hash__ = object.__hash__


builtins.isinstance = lambda o, t: True
builtins.type = lambda *a: int
builtins.repr = lambda o: '2'
builtins.bool = lambda o=False: True
builtins.print = lambda *a, **k: None
builtins.AssertionError = ZeroDivisionError


def f(x):
    return A()
