#: class: gone
#: expect: fail
#: why: 'closes its end of the channel and exits 0 in the middle of a check that catches everything and asserts nothing after'
#: entry: f
#: tests:
#:   - value: ["1", "2"]
#:   - check: |
#:       def check(c):
#:           for x in (2, 3, 4):
#:               try:
#:                   assert c(x) == x + 1
#:               except:
#:                   pass
#:     hidden: true
import os
CALLS = []
def f(x):
    CALLS.append(x)
    if len(CALLS) > 1:
        os.close(3)
        os._exit(0)
    return x + 1
