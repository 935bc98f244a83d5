#: name: control: writes and reads its own temp file
#: status: passed
#: task: {"schema_version":2,"task_id":"hostile/f","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"visible1","args":"1","expected":"2"},{"name":"visible2","args":"2","expected":"3"},{"name":"hidden","args":"987654","expected":"987655","hidden":true}],"timeout_ms":3000,"memory_mb":256}
import os
import tempfile


def f(x):
    with tempfile.NamedTemporaryFile('w+', delete=False) as fh:
        fh.write(str(x + 1))
        name = fh.name
    with open(name) as fh:
        v = int(fh.read())
    os.remove(name)
    return v
