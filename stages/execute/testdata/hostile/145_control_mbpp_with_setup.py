#: name: control: MBPP with setup
#: status: passed
#: task: {"schema_version":2,"task_id":"hostile/mbpp","kind":"python-function","prompt":"Write a function sum_squares(xs) that returns the sum of the squares of the numbers in xs.","entry_point":"sum_squares","setup":"def square_of(v):\n    return v * v\n","tests":[{"name":"assert1","assert":"sum_squares([1, 2, 3]) == square_of(1) + square_of(2) + square_of(3)"},{"name":"assert2","assert":"sum_squares([4]) == square_of(4)"},{"name":"hidden","assert":"sum_squares([987654]) == square_of(987654)","hidden":true}],"timeout_ms":3000,"memory_mb":256}
def sum_squares(xs):
    return sum(v * v for v in xs)
