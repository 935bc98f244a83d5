#: name: [8] stdio: a thread calls os._exit(3) after the answer
#: status: runtime_error
#: task: {"schema_version":2,"task_id":"hostile/sum","kind":"stdio","prompt":"Print the sum of the integers on stdin.","tests":[{"name":"case1","expected":"3\n","stdin":"1 2\n"},{"name":"hidden","expected":"987655\n","stdin":"987654 1\n","hidden":true}],"timeout_ms":3000,"memory_mb":256}
import os
import sys
import threading
import time

print(sum(map(int, sys.stdin.read().split())), flush=True)
threading.Thread(target=os._exit, args=(3,), daemon=True).start()
time.sleep(0.5)
