#: name: [7] infinite loop under a 1.5 s limit
#: status: timeout
#: cpu_ms: 1500,1750
#: max_seconds: 4
#: task: {"schema_version":2,"task_id":"hostile/f","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"visible1","args":"1","expected":"2"},{"name":"visible2","args":"2","expected":"3"},{"name":"hidden","args":"987654","expected":"987655","hidden":true}],"timeout_ms":1500,"memory_mb":256}
def f(x):
    while True:
        pass
