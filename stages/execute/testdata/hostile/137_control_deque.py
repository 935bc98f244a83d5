#: name: control: deque
#: status: passed
#: task: {"schema_version":2,"task_id":"hostile/rotate1","kind":"python-function","prompt":"def rotate1(xs):\n    \"\"\"Return a deque of xs rotated right by one.\"\"\"\n","entry_point":"rotate1","tests":[{"name":"visible1","args":"[1, 2, 3]","expected":"__import__('collections').deque([3, 1, 2])"},{"name":"visible2","args":"[5]","expected":"__import__('collections').deque([5])"},{"name":"hidden","args":"[987654, 1]","expected":"__import__('collections').deque([1, 987654])","hidden":true}],"timeout_ms":3000,"memory_mb":256}
from collections import deque


def rotate1(xs):
    d = deque(xs)
    d.rotate(1)
    return d
