#: name: [6] 500 MB left in /dev/shm
#: status: passed
#: task: {"schema_version":2,"task_id":"hostile/f","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"visible1","args":"1","expected":"2"},{"name":"visible2","args":"2","expected":"3"},{"name":"hidden","args":"987654","expected":"987655","hidden":true}],"timeout_ms":3000,"memory_mb":768}
def leave():
    chunk = b'z' * (8 << 20)
    for n in range(63):
        try:
            with open('/dev/shm/murphy-h2-big-%d' % n, 'wb') as fh:
                fh.write(chunk)
        except OSError:
            return

leave()


def f(x):
    return x + 1
