#: name: always-equal __eq__ against check()
#: status: wrong_answer
#: task: {"schema_version":2,"task_id":"adv/f","kind":"python-function","prompt":"def f(x):\n","entry_point":"f","tests":null,"check":"def check(candidate):\n    assert candidate(1) == 2\n    assert candidate(2) == 3\n","timeout_ms":8000,"memory_mb":256}

class A:
    def __eq__(self, other):
        return True
    __hash__ = object.__hash__
def f(x):
    return A()
