#: class: gone
#: expect: fail
#: why: 'os._exit(0) in the candidate during a call: the check''s bare except must not turn "candidate gone" into the expected error'
#: entry: parse
#: tests:
#:   - value: ["'12'", "12"]
#:   - check: |
#:       def check(c):
#:           try:
#:               c("x")
#:           except:
#:               pass
#:           else:
#:               raise AssertionError("no error for bad input")
#:     hidden: true
import os
def parse(s):
    if not s.isdigit():
        os._exit(0)
    return int(s)
