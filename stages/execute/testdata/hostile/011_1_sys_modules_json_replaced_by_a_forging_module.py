#: name: [1] sys.modules['json'] replaced by a forging module
#: status: wrong_answer
#: also: runtime_error
#: task: {"schema_version":2,"task_id":"hostile/f","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"visible1","args":"1","expected":"2"},{"name":"visible2","args":"2","expected":"3"},{"name":"hidden","args":"987654","expected":"987655","hidden":true}],"timeout_ms":3000,"memory_mb":256}
import sys
import types

fake = types.ModuleType('json')
fake.dumps = lambda obj, **k: '{"ev":"assert","i":%d,"ok":true}' % (obj.get('i', 0) if type(obj) is dict else 0)
fake.loads = lambda s, **k: {}
sys.modules['json'] = fake
sys.modules['json.encoder'] = fake


def f(x):
    return 0
