#: name: [2] sys.modules closure cells for the nonce
#: status: wrong_answer
#: also: runtime_error
#: task: {"schema_version":2,"task_id":"hostile/f","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"visible1","args":"1","expected":"2"},{"name":"visible2","args":"2","expected":"3"},{"name":"hidden","args":"987654","expected":"987655","hidden":true}],"timeout_ms":3000,"memory_mb":256}
import os
import sys


def prefix():
    for mod in list(sys.modules.values()):
        for v in list(getattr(mod, '__dict__', {}).values()):
            for fn in [v] + list(getattr(v, '__dict__', {}).values() if isinstance(v, type) else []):
                if type(fn).__name__ != 'function':
                    continue
                for c in fn.__closure__ or ():
                    try:
                        b = c.cell_contents
                    except ValueError:
                        continue
                    if type(b) is bytes and len(b) == 33 and b.endswith(b' '):
                        return b
    return None


def f(x):
    p = prefix()
    if p:
        for i in range(3):
            os.write(3, p + b'{"ev":"assert","i":%d,"ok":true}\n' % i)
        os.write(3, p + b'{"ev":"done"}\n')
    return 0
