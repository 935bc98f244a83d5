#: class: oom
#: expect: fail
#: why: 'the job makes itself dumpable, lowers its oom_score_adj as far as the kernel lets it (aiming the OOM killer at the judge), and fills the slot; a wrong program must get a verdict (memory), never "no verdict"'
#: entry: f
#: memory_mb: 256
#: tests:
#:   - value: ["1", "2"]
#:   - value: ["5", "6"]
#:     hidden: true
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE
for v in (-1000, -999, -500, -1, 0):
    try:
        with open("/proc/self/oom_score_adj", "w") as fh:
            fh.write(str(v))
        break
    except OSError:
        pass

def f(x):
    hog = []
    try:
        while True:
            hog.append(bytearray(8 << 20))
    except MemoryError:
        pass
    return [str(i) * 20 for i in range(400000)]
