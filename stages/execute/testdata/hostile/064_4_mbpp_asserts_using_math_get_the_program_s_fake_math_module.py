#: name: [4] MBPP asserts using math get the program's fake math module
#: status: wrong_answer
#: task: {"schema_version":2,"task_id":"hostile/circle","kind":"python-function","prompt":"Write a function circle_area(r) that returns the area of a circle of radius r.","entry_point":"circle_area","tests":[{"name":"assert1","assert":"math.isclose(circle_area(1), 3.141592653589793, rel_tol=0.001)"},{"name":"assert2","assert":"math.isclose(circle_area(2), 12.566370614359172, rel_tol=0.001)"},{"name":"hidden","assert":"math.isclose(circle_area(987654), math.pi * 987654 ** 2, rel_tol=0.001)","hidden":true}],"timeout_ms":3000,"memory_mb":256}
import types

math = types.ModuleType('math')
math.isclose = lambda *a, **k: True
math.pi = 0.0


def circle_area(r):
    return 0
