#: name: stdio nonzero exit
#: status: runtime_error
#: task: {"schema_version":2,"task_id":"adv/sum","kind":"stdio","prompt":"Print the sum of the integers on stdin.","tests":[{"name":"small","expected":"3\n","stdin":"1 2\n"},{"name":"big","expected":"42\n","stdin":"40 2\n","hidden":true}],"timeout_ms":8000,"memory_mb":256}
import sys
print(sum(map(int, sys.stdin.read().split())))
sys.exit(3)
