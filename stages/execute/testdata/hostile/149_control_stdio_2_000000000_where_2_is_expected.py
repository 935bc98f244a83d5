#: name: control: stdio 2.000000000 where 2 is expected
#: status: passed
#: task: {"schema_version":2,"task_id":"hostile/half","kind":"stdio","prompt":"Print half of the even integer on stdin.","tests":[{"name":"case1","expected":"2\n","stdin":"4\n"},{"name":"case2","expected":"5\n","stdin":"10\n"},{"name":"hidden","expected":"493827\n","stdin":"987654\n","hidden":true}],"float_tolerance":0.000001,"timeout_ms":3000,"memory_mb":256}
n = int(input())
print(f'{n / 2:.9f}')
