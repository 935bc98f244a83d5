#: name: [3] namedtuple subclass with a lying __eq__
#: status: wrong_answer
#: task: {"schema_version":2,"task_id":"hostile/divmod2","kind":"python-function","prompt":"def divmod2(a, b):\n    \"\"\"Return the tuple (a // b, a % b).\"\"\"\n","entry_point":"divmod2","tests":[{"name":"visible1","args":"7, 2","expected":"(3, 1)"},{"name":"visible2","args":"9, 3","expected":"(3, 0)"},{"name":"hidden","args":"987654, 10","expected":"(98765, 4)","hidden":true}],"timeout_ms":3000,"memory_mb":256}
from collections import namedtuple


class P(namedtuple('P', 'q r')):
    def __eq__(self, other):
        return True

    __hash__ = tuple.__hash__


def divmod2(a, b):
    return P(0, 0)
