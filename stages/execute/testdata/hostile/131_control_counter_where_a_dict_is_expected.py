#: name: control: Counter where a dict is expected
#: status: passed
#: task: {"schema_version":2,"task_id":"hostile/count","kind":"python-function","prompt":"def count(s):\n    \"\"\"Count each letter of s.\"\"\"\n","entry_point":"count","tests":[{"name":"visible1","args":"'aab'","expected":"{'a': 2, 'b': 1}"},{"name":"visible2","args":"'c'","expected":"{'c': 1}"},{"name":"hidden","args":"'987654'","expected":"{'9': 1, '8': 1, '7': 1, '6': 1, '5': 1, '4': 1}","hidden":true}],"timeout_ms":3000,"memory_mb":256}
from collections import Counter


def count(s):
    return Counter(s)
