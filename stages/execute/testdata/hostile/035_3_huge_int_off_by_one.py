#: name: [3] huge int off by one
#: status: wrong_answer
#: task: {"schema_version":2,"task_id":"hostile/big","kind":"python-function","prompt":"def big(n):\n    \"\"\"Return 10 ** n + 1.\"\"\"\n","entry_point":"big","tests":[{"name":"visible1","args":"5000","expected":"10 ** 5000 + 1"},{"name":"visible2","args":"1","expected":"11"},{"name":"hidden","args":"987654 % 9000","expected":"10 ** 6654 + 1","hidden":true}],"timeout_ms":3000,"memory_mb":256}
def big(n):
    return 10 ** n
