#: name: [3] OrderedDict in the wrong order
#: status: wrong_answer
#: task: {"schema_version":2,"task_id":"hostile/ordered","kind":"python-function","prompt":"def ordered(x):\n    \"\"\"Return OrderedDict([('a', x), ('b', x + 1)]).\"\"\"\n","entry_point":"ordered","tests":[{"name":"visible1","args":"1","expected":"__import__('collections').OrderedDict([('a', 1), ('b', 2)])"},{"name":"visible2","args":"2","expected":"__import__('collections').OrderedDict([('a', 2), ('b', 3)])"},{"name":"hidden","args":"987654","expected":"__import__('collections').OrderedDict([('a', 987654), ('b', 987655)])","hidden":true}],"timeout_ms":3000,"memory_mb":256}
from collections import OrderedDict


def ordered(x):
    return OrderedDict([('b', x + 1), ('a', x)])
