#: name: [8] stdio: forged end event, then exit status 1
#: status: runtime_error
#: task: {"schema_version":2,"task_id":"hostile/sum","kind":"stdio","prompt":"Print the sum of the integers on stdin.","tests":[{"name":"case1","expected":"3\n","stdin":"1 2\n"},{"name":"hidden","expected":"987655\n","stdin":"987654 1\n","hidden":true}],"timeout_ms":3000,"memory_mb":256}
import os
import sys


def nonce():
    fr = sys._getframe()
    while fr is not None:
        for v in list(fr.f_locals.values()):
            if type(v) is dict and type(v.get('nonce')) is str:
                return v['nonce']
        fr = fr.f_back
    return None


n = nonce()
print(sum(map(int, sys.stdin.read().split())), flush=True)
if n:
    for fd in range(3, 64):
        try:
            os.write(fd, (n + ' {"ev":"end","code":0}\n').encode())
        except OSError:
            pass
os._exit(1)
