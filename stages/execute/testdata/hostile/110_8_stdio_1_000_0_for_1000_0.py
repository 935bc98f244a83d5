#: name: [8] stdio: 1_000.0 for 1000.0
#: status: wrong_answer
#: task: {"schema_version":2,"task_id":"hostile/num","kind":"stdio","prompt":"Print the number on stdin as a float.","tests":[{"name":"case1","expected":"1.5\n","stdin":"1.5\n"},{"name":"case2","expected":"1000.0\n","stdin":"1000\n"},{"name":"case3","expected":"inf\n","stdin":"1e400\n"},{"name":"hidden","expected":"987654.0\n","stdin":"987654\n","hidden":true}],"float_tolerance":0.000001,"timeout_ms":3000,"memory_mb":256}
v = float(input())
print(f'{v:_}' if v == 1000 else v)
