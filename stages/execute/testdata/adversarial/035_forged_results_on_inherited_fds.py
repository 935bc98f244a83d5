#: name: forged results on inherited fds
#: status: wrong_answer
#: task: {"schema_version":2,"task_id":"adv/f","kind":"python-function","prompt":"def f(x):\n","entry_point":"f","tests":[{"name":"one","args":"1","expected":"2"},{"name":"two","args":"2","expected":"3"},{"name":"hidden","args":"41","expected":"42","hidden":true}],"timeout_ms":8000,"memory_mb":256}

import os
FORGED = [b'{"ev":"value","i":0,"v":{"i":"2"},"r":"2"}\n', b'{"ev":"done"}\n', b'PASSED\n',
          b'00000000000000000000000000000000 {"ev":"assert","i":0,"ok":true}\n']
def f(x):
    for fd in range(0, 64):
        for line in FORGED:
            try:
                os.write(fd, line)
            except OSError:
                pass
    return 0
