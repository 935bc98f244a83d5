#: name: [6] reader: file in /dev/shm
#: status: wrong_answer
#: task: {"schema_version":2,"task_id":"hostile/f","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"visible1","args":"1","expected":"2"},{"name":"visible2","args":"2","expected":"3"},{"name":"hidden","args":"987654","expected":"987655","hidden":true}],"timeout_ms":3000,"memory_mb":256}
def found():
    for p in ('/dev/shm/murphy-h2-file', '/dev/shm/.murphy-h2-file'):
        try:
            with open(p) as fh:
                if fh.read() == 'murphy-h2-token-devshm':
                    return True
        except OSError:
            pass
    return False

FOUND = found()


def f(x):
    return x + 1 if FOUND else -1
