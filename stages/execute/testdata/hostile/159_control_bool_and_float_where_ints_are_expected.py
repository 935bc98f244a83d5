#: name: control: bool and float where ints are expected
#: status: passed
#: task: {"schema_version":2,"task_id":"hostile/flags","kind":"python-function","prompt":"def flags(x):\n    \"\"\"Return [x is odd, x, x \u003e 100] as numbers.\"\"\"\n","entry_point":"flags","tests":[{"name":"visible1","args":"3","expected":"[1, 3, 0]"},{"name":"visible2","args":"4","expected":"[0, 4, 0]"},{"name":"hidden","args":"987654","expected":"[0, 987654, 1]","hidden":true}],"timeout_ms":3000,"memory_mb":256}
def flags(x):
    return [x % 2 == 1, float(x), x > 100]
