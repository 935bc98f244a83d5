#: class: zombie
#: expect: fail
#: why: 'a double-forked orphan that keeps running after the job: killed and reaped at cleanup, the slot not stalled; the answer is wrong'
#: entry: f
#: max_wall_ms: 3000
#: tests:
#:   - value: ["1", "2"]
#:     hidden: true
import os, time

def f(x):
    if os.fork() == 0:
        if os.fork() == 0:
            os.setsid()
            while True:
                time.sleep(0.01)
        os._exit(0)
    os.wait()
    return x
