#: name: [7] threads burning CPU outside the GIL
#: status: timeout
#: max_seconds: 6
#: task: {"schema_version":2,"task_id":"hostile/f","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"visible1","args":"1","expected":"2"},{"name":"visible2","args":"2","expected":"3"},{"name":"hidden","args":"987654","expected":"987655","hidden":true}],"timeout_ms":1000,"memory_mb":256}
import hashlib
import threading

DATA = b'x' * (1 << 24)


def burn():
    while True:
        hashlib.sha256(DATA).digest()


def f(x):
    for _ in range(2):
        threading.Thread(target=burn, daemon=True).start()
    burn()
