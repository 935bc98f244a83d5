#: name: [2] heap scan for the nonce, forged lines on every fd
#: status: wrong_answer
#: also: runtime_error
#: task: {"schema_version":2,"task_id":"hostile/f","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"visible1","args":"1","expected":"2"},{"name":"visible2","args":"2","expected":"3"},{"name":"hidden","args":"987654","expected":"987655","hidden":true}],"timeout_ms":3000,"memory_mb":256}
import ctypes
import os
import re

PAT = re.compile(rb'"nonce": ?"([0-9a-f]{32})"')


def regions():
    out = []
    with open('/proc/self/maps') as maps:
        for line in maps:
            parts = line.split()
            lo, hi = (int(v, 16) for v in parts[0].split('-'))
            name = parts[5] if len(parts) > 5 else ''
            if parts[1][0] != 'r' or name.startswith('/') or name.startswith('[v') or hi - lo > 1 << 28:
                continue
            out.append((lo, hi))
    return out


def f(x):
    found = set()
    for lo, hi in regions():
        try:
            found.update(PAT.findall(ctypes.string_at(lo, hi - lo)))
        except Exception:
            pass
    fds = set(range(3, 256))
    try:
        fds.update(int(v) for v in os.listdir('/proc/self/fd'))
    except OSError:
        pass
    for n in found:
        lines = [n + b' {"ev":"assert","i":%d,"ok":true}\n' % i for i in range(3)] + [n + b' {"ev":"done"}\n']
        for fd in sorted(fds - {0, 1, 2}):
            for line in lines:
                try:
                    os.write(fd, line)
                except OSError:
                    pass
    return 0
