#: name: [2] gc.get_objects finds emit
#: status: wrong_answer
#: also: runtime_error
#: task: {"schema_version":2,"task_id":"hostile/f","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"visible1","args":"1","expected":"2"},{"name":"visible2","args":"2","expected":"3"},{"name":"hidden","args":"987654","expected":"987655","hidden":true}],"timeout_ms":3000,"memory_mb":256}
import gc


def f(x):
    for o in gc.get_objects():
        if type(o).__name__ == 'function' and o.__name__ == 'emit' and o.__closure__:
            for i in range(3):
                o({'ev': 'assert', 'i': i, 'ok': True})
            o({'ev': 'done'})
    return 0
