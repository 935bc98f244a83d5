#: name: 8 GB allocation
#: status: memory
#: task: {"schema_version":2,"task_id":"adv/f","kind":"python-function","prompt":"def f(x):\n","entry_point":"f","tests":[{"name":"one","args":"1","expected":"2"},{"name":"two","args":"2","expected":"3"},{"name":"hidden","args":"41","expected":"42","hidden":true}],"timeout_ms":8000,"memory_mb":256}
def f(x):
    b = bytearray(8 << 30)
    return x + 1
