#: name: [4] stdio: the hidden input echoed, then exit status 1
#: status: runtime_error
#: task: {"schema_version":2,"task_id":"hostile/sum","kind":"stdio","prompt":"Print the sum of the integers on stdin.","tests":[{"name":"case1","expected":"3\n","stdin":"1 2\n"},{"name":"hidden","expected":"987655\n","stdin":"987654 1\n","hidden":true}],"timeout_ms":3000,"memory_mb":256}
import sys

data = sys.stdin.read()
nums = list(map(int, data.split()))
print(sum(nums))
if max(nums) > 100:
    print(data)
    sys.stderr.write(data)
    sys.exit(1)
