#: name: [5] very long string wrong in its last character
#: status: wrong_answer
#: task: {"schema_version":2,"task_id":"hostile/rep","kind":"python-function","prompt":"def rep(n):\n    \"\"\"Return 'x' * n.\"\"\"\n","entry_point":"rep","tests":[{"name":"visible1","args":"10 ** 6","expected":"'x' * 10 ** 6"},{"name":"visible2","args":"3","expected":"'xxx'"},{"name":"hidden","args":"987654","expected":"'x' * 987654","hidden":true}],"timeout_ms":3000,"memory_mb":256}
def rep(n):
    return 'x' * (n - 1) + 'y'
