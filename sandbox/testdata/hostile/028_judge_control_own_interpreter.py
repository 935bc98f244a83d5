#: class: judge
#: expect: pass
#: why: 'the task''s check looks at the judge''s own process: a fresh interpreter, the fork server''s library not mapped, no LD_PRELOAD'
#: entry: f
#: tests:
#:   - check: |
#:       import os
#:       def check(c):
#:           assert "forkserver" not in open("/proc/self/maps").read()
#:           assert "LD_PRELOAD" not in os.environ and "LD_" not in open("/proc/self/environ").read()
#:           assert os.getuid() != 0
#:           assert c(3) == 4
#:     hidden: true
def f(x):
    return x + 1
