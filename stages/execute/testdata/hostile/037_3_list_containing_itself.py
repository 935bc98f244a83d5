#: name: [3] list containing itself
#: status: wrong_answer
#: also: runtime_error
#: task: {"schema_version":2,"task_id":"hostile/pair","kind":"python-function","prompt":"def pair(x):\n    \"\"\"Return the list [x, x + 1].\"\"\"\n","entry_point":"pair","tests":[{"name":"visible1","args":"1","expected":"[1, 2]"},{"name":"visible2","args":"2","expected":"[2, 3]"},{"name":"hidden","args":"987654","expected":"[987654, 987655]","hidden":true}],"timeout_ms":3000,"memory_mb":256}
def pair(x):
    l = [x]
    l.append(l)
    return l
