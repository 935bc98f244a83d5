#: name: control: stdio trailing whitespace
#: status: passed
#: task: {"schema_version":2,"task_id":"hostile/sum","kind":"stdio","prompt":"Print the sum of the integers on stdin.","tests":[{"name":"case1","expected":"3\n","stdin":"1 2\n"},{"name":"hidden","expected":"987655\n","stdin":"987654 1\n","hidden":true}],"timeout_ms":3000,"memory_mb":256}
import sys
print(str(sum(map(int, sys.stdin.read().split()))) + '   \n\n')
