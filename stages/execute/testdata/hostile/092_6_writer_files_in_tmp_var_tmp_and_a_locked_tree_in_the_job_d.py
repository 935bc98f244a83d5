#: name: [6] writer: files in /tmp, /var/tmp and a locked tree in the job dir
#: status: passed
#: task: {"schema_version":2,"task_id":"hostile/f","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"visible1","args":"1","expected":"2"},{"name":"visible2","args":"2","expected":"3"},{"name":"hidden","args":"987654","expected":"987655","hidden":true}],"timeout_ms":3000,"memory_mb":256}
import os

PATHS = ['/tmp/murphy-h2-file', '/var/tmp/murphy-h2-file', '/tmp/job/../murphy-h2-file2',
         os.path.join(os.path.dirname(os.getcwd()), 'murphy-h2-file3')]


def leave():
    for p in PATHS:
        try:
            with open(p, 'w') as fh:
                fh.write('murphy-h2-token-tmp')
        except OSError:
            pass
    try:
        d = 'murphy-h2-deep'
        os.makedirs(d + '/a/b')
        with open(d + '/a/b/token', 'w') as fh:
            fh.write('murphy-h2-token-tmp')
        for p in (d + '/a/b', d + '/a', d):
            os.chmod(p, 0)
    except OSError:
        pass

leave()


def f(x):
    return x + 1
