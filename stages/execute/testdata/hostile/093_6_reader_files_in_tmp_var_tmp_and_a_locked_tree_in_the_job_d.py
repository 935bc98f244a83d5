#: name: [6] reader: files in /tmp, /var/tmp and a locked tree in the job dir
#: status: wrong_answer
#: task: {"schema_version":2,"task_id":"hostile/f","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"visible1","args":"1","expected":"2"},{"name":"visible2","args":"2","expected":"3"},{"name":"hidden","args":"987654","expected":"987655","hidden":true}],"timeout_ms":3000,"memory_mb":256}
import os

PATHS = ['/tmp/murphy-h2-file', '/var/tmp/murphy-h2-file', '/tmp/murphy-h2-file2',
         os.path.join(os.path.dirname(os.getcwd()), 'murphy-h2-file3'), 'murphy-h2-deep/a/b/token']


def found():
    for p in ('murphy-h2-deep', 'murphy-h2-deep/a', 'murphy-h2-deep/a/b'):
        try:
            os.chmod(p, 0o700)
        except OSError:
            pass
    for p in PATHS:
        try:
            with open(p) as fh:
                if fh.read() == 'murphy-h2-token-tmp':
                    return True
        except OSError:
            pass
    return False

FOUND = found()


def f(x):
    return x + 1 if FOUND else -1
