#: name: [2] nonce from the request in a frame, lines on inherited and /proc/*/fd descriptors
#: status: wrong_answer
#: also: runtime_error
#: task: {"schema_version":2,"task_id":"hostile/f-assert","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"assert1","assert":"candidate(1) == 2"},{"name":"assert2","assert":"f(2) == 3"},{"name":"hidden","assert":"candidate(987654) == 987655","hidden":true}],"timeout_ms":3000,"memory_mb":256}
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


def f(x):
    n = nonce()
    if n:
        lines = [('%s {"ev":"assert","i":%d,"ok":true}\n' % (n, i)).encode() for i in range(3)]
        lines.append(('%s {"ev":"done"}\n' % n).encode())
        for fd in range(3, 256):
            for line in lines:
                try:
                    os.write(fd, line)
                except OSError:
                    pass
        targets = ['/proc/self/fd/%d' % d for d in range(3, 256)]
        for p in os.listdir('/proc'):
            if p.isdigit():
                try:
                    targets += ['/proc/%s/fd/%s' % (p, d) for d in os.listdir('/proc/%s/fd' % p)]
                except OSError:
                    pass
        for path in targets:
            try:
                fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                continue
            for line in lines:
                try:
                    os.write(fd, line)
                except OSError:
                    pass
            os.close(fd)
    return 0
