#: name: control: OrderedDict where a dict is expected
#: status: passed
#: task: {"schema_version":2,"task_id":"hostile/index_of","kind":"python-function","prompt":"def index_of(words):\n    \"\"\"Map each word to the index of its first occurrence.\"\"\"\n","entry_point":"index_of","tests":[{"name":"visible1","args":"['x', 'y', 'x']","expected":"{'x': 0, 'y': 1}"},{"name":"visible2","args":"['b', 'a']","expected":"{'b': 0, 'a': 1}"},{"name":"hidden","args":"['987654']","expected":"{'987654': 0}","hidden":true}],"timeout_ms":3000,"memory_mb":256}
from collections import OrderedDict


def index_of(words):
    d = OrderedDict()
    for i, w in enumerate(words):
        d.setdefault(w, i)
    return d
