#: name: control: defaultdict where a dict is expected
#: status: passed
#: task: {"schema_version":2,"task_id":"hostile/group","kind":"python-function","prompt":"def group(pairs):\n    \"\"\"Map each key to the list of its values.\"\"\"\n","entry_point":"group","tests":[{"name":"visible1","args":"[('a', 1), ('b', 2), ('a', 3)]","expected":"{'a': [1, 3], 'b': [2]}"},{"name":"visible2","args":"[]","expected":"{}"},{"name":"hidden","args":"[('z', 987654)]","expected":"{'z': [987654]}","hidden":true}],"timeout_ms":3000,"memory_mb":256}
from collections import defaultdict


def group(pairs):
    d = defaultdict(list)
    for k, v in pairs:
        d[k].append(v)
    return d
