#: name: [4] MBPP asserts calling the program's own isclose
#: status: wrong_answer
#: task: {"schema_version":2,"task_id":"hostile/circle-isclose","kind":"python-function","prompt":"Write a function circle_area(r) that returns the area of a circle of radius r.","entry_point":"circle_area","tests":[{"name":"assert1","assert":"isclose(circle_area(1), 3.141592653589793, rel_tol=0.001)"},{"name":"hidden","assert":"isclose(circle_area(987654), 3.141592653589793 * 987654 ** 2, rel_tol=0.001)","hidden":true}],"timeout_ms":3000,"memory_mb":256,"reference":"from math import isclose, pi\n\n\ndef circle_area(r):\n    return pi * r * r\n"}
def isclose(*a, **k):
    return True


def circle_area(r):
    return 0
